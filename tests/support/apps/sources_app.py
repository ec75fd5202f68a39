"""The application's own task sources and hooks of the lifecycle source tests
(``sources_app:<factory>`` in a root): one factory per worker-side token.

Every unit of work logs ``unit <pid> <word>...`` to ``events.log``.
"""

import os
import time


def log(*words):
    line = " ".join(["unit", str(os.getpid()), *words]) + "\n"
    fd = os.open("events.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


class Task:
    def __init__(self, mode):
        self.mode = mode

    def run(self):
        log("task")
        if self.mode == "fail-fails":
            raise ValueError("task saw /secret/path")
        return 1

    def complete(self, result):
        log("complete")
        if self.mode == "complete-fails":
            raise RuntimeError("ack to /secret/path failed")

    def fail(self, error):
        log("fail", type(error).__name__)
        if self.mode == "fail-fails":
            raise RuntimeError("nack to /secret/path failed")


class Counted:
    """``tasks`` tasks (None: endless), then waits for the stop; "ending" does not wait."""

    def __init__(self, ctx, mode="", tasks=2):
        self.ctx, self.mode, self.left = ctx, mode, tasks

    def assert_ready(self):
        pass

    def receive(self):
        if self.ctx.stopping:
            return None
        if self.left != 0:
            self.left = None if self.left is None else self.left - 1
            return Task(self.mode)
        if self.mode != "ending":
            self.ctx.wait_for_stop(None)
        return None


def counted(ctx):
    return Counted(ctx)


def ending(ctx):
    return Counted(ctx, "ending", tasks=0)


def complete_fails(ctx):
    return Counted(ctx, "complete-fails", tasks=1)


def fail_fails(ctx):
    return Counted(ctx, "fail-fails", tasks=1)


def shapeless(ctx):
    return object()


def exploding(ctx):
    raise RuntimeError("factory saw /secret/path")


def other_type(ctx):
    return Counted(ctx)


other_type.task_type = "http"  # type: ignore[attr-defined]  # declared, and not the pool's queue


class SecondBootHangs(Counted):
    """Endless tasks; its slot's first worker is ready at once, the next one never."""

    def assert_ready(self):
        marker = f"booted-{self.ctx.slot}"
        if os.path.exists(marker):
            time.sleep(3600)
        open(marker, "x").close()


def second_boot_hangs(ctx):
    return SecondBootHangs(ctx, tasks=None)


def configured_before():
    log("configured-before")


def configured_after():
    log("configured-after")


def configured_reset():
    log("configured-reset")


def failing_before():
    log("failing-before")
    raise RuntimeError("hook saw /secret/path")
