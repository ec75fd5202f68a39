"""The handlers of ``bench/pipeline.py``'s pools: standard library only, both sides alike.

``bench/pipeline.py`` copies this file into each throw-away project root as ``app.py``. A
Coretsia pool names a handler in ``[worker.source_options] handler = "app:noop"``; the
Huey side (``pipeline_huey_app.py``, copied as ``hueyapp.py``) wraps the same ``run_*``
functions in its tasks, so both sides record exactly the same way.

Each finished handler call appends one line to ``records.log`` beside this file::

    <payload> <pid> <start> <end>

``start`` and ``end`` are ``time.monotonic()`` (one system-wide clock on Linux, the one the
benchmark reads too); the line goes out in one ``write`` on an ``O_APPEND`` descriptor, so
lines from many processes never interleave. A handler killed before its ``write`` leaves
no line: a line means the handler ran to its end.

The Coretsia handlers also write, on their first call in a process, the ``journal_mode``
and ``synchronous`` of the queue connection that leased the task to ``probe.log`` (read
after the run: the durability actually in force, not what a document says), or
``unprobed`` and why when that connection could not be found.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # not typing's: as in bench_app.py, a worker need not import typing
if TYPE_CHECKING:
    from types import FrameType

_HERE = os.path.dirname(os.path.abspath(__file__))
RECORDS = os.path.join(_HERE, "records.log")
PROBE = os.path.join(_HERE, "probe.log")
VICTIM = os.path.join(_HERE, "victim.pid")
_probed = False


def _append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _record(payload: str, start: float) -> None:
    _append(RECORDS, f"{payload} {os.getpid()} {start!r} {time.monotonic()!r}\n")


def run_noop(payload: str) -> None:
    _record(payload, time.monotonic())


def run_sleep(payload: str, seconds: float) -> None:
    start = time.monotonic()
    time.sleep(seconds)
    _record(payload, start)


def _probe() -> None:
    """Once per process: the pragmas of the queue connection that leased this task.

    Read from the caller's frames (``SqliteTask.run`` holds the task, whose private
    ``_source`` is the ``SqliteSource``, whose ``queue`` is the ``SqliteQueue``, whose
    private ``_conn`` is its ``Connection``, whose ``raw`` is the sqlite3 connection): two
    ``PRAGMA`` reads, a few microseconds, on the first task only. There is no public way
    to reach that connection, so when those names change the line says so
    (``<pid> unprobed <why>``) and the benchmark stops with that reason instead of
    reporting the durability as not probed.
    """
    global _probed
    if _probed:
        return
    _probed = True
    import sys

    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        queue = getattr(getattr(frame.f_locals.get("self"), "_source", None), "queue", None)
        if queue is not None:
            conn = getattr(getattr(queue, "_conn", None), "raw", None)
            if conn is None:
                why = f"{type(queue).__name__} has no _conn.raw"
                _append(PROBE, f"{os.getpid()} unprobed {why}\n")
                return
            journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
            synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
            _append(PROBE, f"{os.getpid()} {journal} {synchronous}\n")
            return
        frame = frame.f_back
    _append(PROBE, f"{os.getpid()} unprobed no caller frame holds self._source\n")


def noop(payload: str) -> None:
    """The no-op task of the throughput runs and the soak."""
    _probe()
    run_noop(payload)


def sleep50(payload: str) -> None:
    """The I/O-bound task: 50 ms of sleep."""
    _probe()
    run_sleep(payload, 0.05)


def sleep10(payload: str) -> None:
    """The two-pool scenario's task: 10 ms, long enough for leases to overlap a recovery."""
    _probe()
    run_sleep(payload, 0.01)


def soak(payload: str) -> None:
    """The soak's no-op task; the one payload ending in ``!`` is where a worker is killed.

    That task writes its pid to ``victim.pid`` and sleeps, holding its lease, until the
    benchmark SIGKILLs it: the kill lands mid-task by construction, not by chance. Once
    ``victim.pid`` exists (the rerun after recovery) it is a no-op like the others.
    """
    _probe()
    start = time.monotonic()
    if payload.endswith("!") and not os.path.exists(VICTIM):
        _append(VICTIM, f"{os.getpid()}\n")
        time.sleep(120)
    _record(payload, start)
