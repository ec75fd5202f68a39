"""The task sources of the lifecycle tests (``lifecycle_app:<factory>`` in a root)."""

import os
import signal
import sys
import time


class Task:
    def __init__(self, action):
        self.action = action

    def run(self):
        return self.action()

    def complete(self, result):
        pass

    def fail(self, error):
        pass


class IdleSource:
    """Waits for stop; hands out no task."""

    def __init__(self, ctx):
        self.ctx = ctx

    def assert_ready(self):
        pass

    def receive(self):
        self.ctx.wait_for_stop(None)
        return


def idle(ctx):
    return IdleSource(ctx)


class OneTask(IdleSource):
    """One task (logged with this worker's pid), then idle until stopped (or, once
    retiring, until its turn comes)."""

    given = False

    def receive(self):
        if not self.given:
            self.given = True
            return Task(lambda: _log("served", os.getpid()))
        return super().receive()


def one_task(ctx):
    return OneTask(ctx)


class Watchful(IdleSource):
    """Two tasks, then idle. The second runs after the worker asked to retire (with
    max_requests = 1) and watches the stop for a while, as a long task may: the
    supervisor's go-ahead, arriving meanwhile, must not look like a stop to it."""

    given = 0

    def receive(self):
        self.given += 1
        if self.given == 1:
            return Task(lambda: None)
        if self.given == 2:
            return Task(lambda: _log(f"saw-stop-{self.ctx.wait_for_stop(0.5)}", os.getpid()))
        return super().receive()


def watchful(ctx):
    return Watchful(ctx)


class NotReady(IdleSource):
    def assert_ready(self):
        raise RuntimeError("broker down at /secret/path")


def not_ready(ctx):
    return NotReady(ctx)


class SlowReady(IdleSource):
    def assert_ready(self):
        time.sleep(3600)


def slow_ready(ctx):
    return SlowReady(ctx)


class Stubborn(IdleSource):
    """Its one task ignores SIGTERM and never ends: only SIGKILL stops it."""

    def receive(self):
        def forever():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            while True:
                time.sleep(60)

        return Task(forever)


def stubborn(ctx):
    return Stubborn(ctx)


class SlowTask(IdleSource):
    """Its one task never ends by itself, but SIGTERM (the default action) ends it."""

    def receive(self):
        def forever():
            while True:
                time.sleep(60)

        return Task(forever)


def slow_task(ctx):
    return SlowTask(ctx)


class Quick(IdleSource):
    """Hands out trivial tasks as fast as they are asked for, until stop."""

    def receive(self):
        if self.ctx.stopping:
            return None
        return Task(lambda: 1)


def quick(ctx):
    return Quick(ctx)


class BrokenReceive(IdleSource):
    def receive(self):
        raise RuntimeError("queue /secret/path unreachable")


def broken_receive(ctx):
    return BrokenReceive(ctx)


class ForgedReadiness(IdleSource):
    def assert_ready(self):
        os.write(3, b'{"garbage": true}' + b"\n")
        time.sleep(3600)


def forged_readiness(ctx):
    return ForgedReadiness(ctx)


def vanishing(ctx):
    os._exit(3)


def _sleep_forever():
    while True:
        time.sleep(3600)


class Spawning(IdleSource):
    """Starts a plain child and a double-forked, setsid escapee before readiness."""

    def assert_ready(self):
        import subprocess

        self.child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                _sleep_forever()
            os._exit(0)


def spawning(ctx):
    return Spawning(ctx)


class ForkedHolder(IdleSource):
    """Forks a child that keeps every inherited descriptor (the fence) and outlives us."""

    def assert_ready(self):
        if os.fork() == 0:
            os.setsid()
            _sleep_forever()


def forked_holder(ctx):
    return ForkedHolder(ctx)


def _log(event, slot):
    line = f"{event} {slot} {time.monotonic()}".encode() + b"\n"
    fd = os.open("recycle.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


class LongTask(IdleSource):
    """One task that keeps the worker busy in Python bytecode for ``task_ms`` (a source
    option), logged as ``task-started``/``task-ended`` in recycle.log; then idle."""

    given = False

    def receive(self):
        if self.given:
            return super().receive()
        self.given = True
        seconds = self.ctx.options["task_ms"] / 1000

        def busy():
            _log("task-started", self.ctx.slot)
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                pass
            _log("task-ended", self.ctx.slot)

        return Task(busy)


def long_task(ctx):
    return LongTask(ctx)


class Logged(Quick):
    """Quick tasks; logs its readiness and its clean exit, for the recycle test."""

    def assert_ready(self):
        import atexit

        atexit.register(_log, "exit", self.ctx.slot)
        _log("ready", self.ctx.slot)


def logged(ctx):
    return Logged(ctx)


class Leaving(IdleSource):
    """At the stop, leaves a non-daemon thread running, an atexit handler and unflushed
    stdout: the worker's clean exit must join the thread, then run the handler, then flush."""

    def assert_ready(self):
        import atexit

        sys.stdout = open(f"stdout-{self.ctx.slot}.txt", "w")  # noqa: SIM115 - the exit closes it
        print("buffered")
        atexit.register(_note, self.ctx.slot, "atexit")

    def receive(self):
        import threading

        self.ctx.wait_for_stop(None)
        threading.Thread(target=_late_note, args=(self.ctx.slot,)).start()


def _late_note(slot):
    time.sleep(0.2)  # the main thread is well into its exit by then
    _note(slot, "thread")


def _note(slot, event):
    with open(f"leaving-{slot}.log", "a") as log:
        log.write(event + "\n")


def leaving(ctx):
    return Leaving(ctx)


def bad_hook():
    raise RuntimeError("hook saw /secret/path")


def good_hook():
    pass


class Escaping(OneTask):
    """One task that starts ``setsid sleep 1000`` through ``subprocess`` (its own session,
    no descriptor of ours: ``close_fds``) and notes its pid in ``escapee.pid``."""

    def receive(self):
        if not self.given:
            self.given = True
            return Task(_escape)
        return IdleSource.receive(self)


def _escape():
    import subprocess

    child = subprocess.Popen(["setsid", "sleep", "1000"], close_fds=True)
    fd = os.open("escapee.pid", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, f"{child.pid}\n".encode())
    finally:
        os.close(fd)


def escaping(ctx):
    return Escaping(ctx)


class EscapeeWatch(IdleSource):
    """Notes, when booting, whether an escapee of ``escapee.pid`` still runs (``seen``)."""

    def assert_ready(self):
        with open("escapee.pid") as noted:
            pids = [int(line) for line in noted.read().split()]
        alive = [pid for pid in pids if _running(pid)]
        fd = os.open("escapee-seen.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, f"{len(alive)}\n".encode())
        finally:
            os.close(fd)


def _running(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def escapee_watch(ctx):
    return EscapeeWatch(ctx)


class OnGo(IdleSource):
    """One task once ``go`` exists in the root, then idle: with ``max_requests = 1`` its
    worker retires when the test says, and a recycled one boots."""

    given = False

    def receive(self):
        while not self.given:
            if os.path.exists("go"):
                self.given = True
                return Task(lambda: None)
            if self.ctx.wait_for_stop(0.02):
                return None
        return super().receive()


def on_go(ctx):
    return OnGo(ctx)
