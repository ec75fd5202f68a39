"""The application the benchmark pools run: two task sources, standard library only.

``bench/run.py`` copies this file into each pool's project root (``app_path = ["."]``),
so the workers import it as ``bench_app`` exactly as they would import an application.

* ``idle``: the minimal task worker. Ready at once, hands out nothing, waits for the
  cooperative stop (S1, S2, S4, S5, S6).
* ``logged``: hands out no-op tasks as fast as they are asked for; writes a monotonic
  timestamp to ``recycle.log`` in ``assert_ready`` and from an ``atexit`` handler, so
  the time from one worker's clean exit to its replacement's readiness can be read from
  the workers' own clocks (S3).
* ``reporting``: the peers' benchmark worker (``bench/peers.py``). Reports ready as every
  peer's worker does, one datagram to ``ready.sock`` in the root, then idles as ``idle``.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # not typing's: a worker should not pay for importing typing
if TYPE_CHECKING:
    from coretsia.worker_protocol.task_source import TaskSourceContext


class NoopTask:
    """A task that does nothing; also the no-op task of ``run.py``'s S7 loop."""

    __slots__ = ()

    def run(self) -> object:
        return None

    def complete(self, result: object) -> None:
        pass

    def fail(self, error: BaseException) -> None:
        pass


_TASK = NoopTask()


class IdleSource:
    """Waits for stop; hands out no task."""

    def __init__(self, context: TaskSourceContext) -> None:
        self.context = context

    def assert_ready(self) -> None:
        pass

    def receive(self) -> NoopTask | None:
        self.context.wait_for_stop(None)
        return None


def idle(context: TaskSourceContext) -> IdleSource:
    return IdleSource(context)


def _log(event: str, slot: int) -> None:
    line = f"{event} {slot} {time.monotonic()!r}\n".encode()
    fd = os.open("recycle.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


class LoggedSource(IdleSource):
    """No-op tasks as fast as they are asked for; logs readiness and clean exit."""

    def assert_ready(self) -> None:
        import atexit

        slot: int = self.context.slot
        atexit.register(_log, "exit", slot)
        _log("ready", slot)

    def receive(self) -> NoopTask | None:
        if self.context.stopping:
            return None
        return _TASK


def logged(context: TaskSourceContext) -> LoggedSource:
    return LoggedSource(context)


class ReportingSource(IdleSource):
    """Reports ready with one datagram to ``ready.sock`` (the root is the working directory).

    Through ``_socket``, the C module: the launcher's boot does not import ``socket``, and
    a worker of this benchmark should not pay for it either.
    """

    def assert_ready(self) -> None:
        import _socket

        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM)
        try:
            sock.sendto(b"ready", "ready.sock")
        finally:
            sock.close()


def reporting(context: TaskSourceContext) -> ReportingSource:
    return ReportingSource(context)
