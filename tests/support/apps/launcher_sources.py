"""Task sources for the launcher tests, installed as ``apps/sources.py`` in a root."""

import os
import sys
import time

from coretsia.worker_protocol.task_source import TaskSourceContext


def record(line):
    with open("calls.log", "a") as log:
        log.write(line + "\n")


class Task:
    def __init__(self, mode):
        self.mode = mode
        if mode == "says-attempt":
            self.attempt, self.retried = 2, False
        elif mode == "says-nonsense":
            self.attempt, self.retried = True, "yes"  # type: ignore[assignment]

    def run(self):
        record("run")
        if self.mode in ("run-fails", "fail-fails", "says-attempt", "says-nonsense"):
            raise ValueError("task failed")
        return 42

    def complete(self, result):
        record(f"complete {result}")
        if self.mode == "complete-fails":
            raise RuntimeError("complete failed")

    def fail(self, error):
        record(f"fail {type(error).__name__}")
        if self.mode == "fail-fails":
            raise RuntimeError("fail failed")


class Source:
    def __init__(self, context, mode):
        self.context = context
        self.mode = mode

    def assert_ready(self):
        record("assert_ready")
        if self.mode == "not-ready":
            raise ConnectionError("backend down")

    def receive(self):
        if self.mode == "blocking":
            # Blocks until stop: a cooperative stop must wake it at once.
            assert self.context.wait_for_stop(None)
            return None
        if self.mode == "receive-fails":
            raise OSError("broker gone")
        if self.mode == "terminates":
            return None
        return Task(self.mode)


def blocking(context):
    record(
        f"context {isinstance(context, TaskSourceContext)} {context.task_type} "
        f"{context.slot} {context.stopping} {context.wait_for_stop(0.01)}"
    )
    record(f"env {'CORETSIA_WORKER_PARENT_PID' in os.environ}")
    record(f"path {os.path.basename(sys.path[0])}")
    return Source(context, "blocking")


def immediate(context):
    return Source(context, "immediate")


def run_fails(context):
    return Source(context, "run-fails")


def says_attempt(context):
    return Source(context, "says-attempt")


def says_nonsense(context):
    return Source(context, "says-nonsense")


def complete_fails(context):
    return Source(context, "complete-fails")


def fail_fails(context):
    return Source(context, "fail-fails")


def not_ready(context):
    return Source(context, "not-ready")


def receive_fails(context):
    return Source(context, "receive-fails")


def terminates(context):
    return Source(context, "terminates")


def invalid(context):
    return object()


def other_type(context):
    return Source(context, "immediate")


other_type.task_type = "http"  # type: ignore[attr-defined]  # declared, and not the generation's queue


def raising(context):
    raise RuntimeError("factory failed")


def exits(context):
    raise SystemExit(0)


class LongTask:
    """Runs ``task_ms`` (source option): busy in Python bytecode, or asleep in C."""

    def __init__(self, seconds, busy):
        self.seconds, self.busy = seconds, busy

    def run(self):
        record("run")
        deadline = time.monotonic() + self.seconds
        if self.busy:
            while time.monotonic() < deadline:
                pass
        else:
            time.sleep(self.seconds)

    def complete(self, result):
        record("complete")

    def fail(self, error):
        record(f"fail {type(error).__name__}")


class LongSource(Source):
    """One long task, then blocks until stop."""

    given = False

    def receive(self):
        if self.given:
            return super().receive()
        self.given = True
        options = self.context.options
        return LongTask(options["task_ms"] / 1000, options["busy"])


def long_task(context):
    return LongSource(context, "blocking")


class Nested:
    factory = staticmethod(immediate)


not_callable = 5
