"""The two sides: how Coretsia's pool and Huey's consumer each drain a prepared root."""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coretsia.sources.sqlite_queue import SqliteQueue
from queue_bench.records import line_count, measure, probes, read_records
from queue_bench.roots import (
    BIN,
    DEADLINE_S,
    SUPERVISOR,
    make_root,
    release,
    spawn,
    stop_pool,
    wait_until,
    write_config,
)

HUEY_CONSUMER = str(BIN / "huey_consumer")


@dataclass(frozen=True)
class Side:
    """How one side drains a prepared root: its command, its log, its stop, its extras."""

    argv: list[str]
    log_name: str
    stop: Callable[[Path, subprocess.Popen[bytes]], int | None]
    """Stop the drained consumer; its exit status (None if it did not exit in time)."""
    extras: Callable[[Path], dict[str, Any]]
    """Side-specific figures, read after the stop."""


def coretsia_side(root: Path, workers: int, tasks: int, task: str) -> Side:
    """A pool of ``workers`` on the ``sqlite`` source, ``tasks`` messages enqueued."""
    write_config(root, workers, f"app:{task}", max_requests=100_000)
    db = root / "var" / "queue.sqlite3"
    with SqliteQueue(db) as queue:
        queue.enqueue(f"t{i}" for i in range(tasks))

    def extras(root: Path) -> dict[str, Any]:
        with SqliteQueue(db, create=False) as queue:
            stats = queue.stats()
        return {"stats": stats, "worker_pragmas": probes(root)}

    argv = [SUPERVISOR, "start", "--root", str(root), "--log-format", "json"]
    return Side(argv, "supervisor.log", stop_pool, extras)


@contextlib.contextmanager
def _huey_app(root: Path) -> Iterator[Any]:
    """``root/hueyapp.py`` imported as ``hueyapp`` (Huey names tasks by module), fresh;
    forgotten again (with the ``app`` it imports) on the way out."""
    names = ("hueyapp", "app")
    for name in names:
        sys.modules.pop(name, None)
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("hueyapp")
    finally:
        sys.path.remove(str(root))
        for name in names:
            sys.modules.pop(name, None)


def huey_enqueue(root: Path, task: str, tasks: int) -> str:
    """Enqueue in one transaction (as Coretsia's batch ``enqueue``); the pragmas in force.

    ``SqliteHuey`` has no batch enqueue: the messages are serialized by Huey itself
    (``serialize_task``) and inserted with its own SQL in one transaction, so the setup
    does not pay 5,000 fsyncs. Not measured either way: it happens before the consumer
    starts. The pragmas are read on a connection made by the storage's own constructor.
    """
    with _huey_app(root) as module:
        huey = module.huey
        wrapper = getattr(module, task)
        rows = [(huey.name, huey.serialize_task(wrapper.s(f"t{i}")), 0) for i in range(tasks)]
        with huey.storage.db(commit=True) as cursor:
            cursor.executemany("insert into task (queue, data, priority) values (?, ?, ?)", rows)
        conn = huey.storage.conn
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
        huey.storage.close()
    return f"{journal} {synchronous}"


def _stop_huey(root: Path, proc: subprocess.Popen[bytes]) -> int | None:
    """SIGINT, Huey's graceful stop (workers finish their task; none is left anyway)."""
    if proc.poll() is None:  # not reaped: the group is still ours
        os.killpg(proc.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        return proc.wait(timeout=30)
    return None


def huey_side(root: Path, workers: int, tasks: int, task: str) -> Side:
    """``huey_consumer -k process -w N``, ``tasks`` messages enqueued."""
    pragmas = huey_enqueue(root, task, tasks)

    def extras(root: Path) -> dict[str, Any]:
        with contextlib.closing(sqlite3.connect(root / "huey.sqlite3")) as conn:
            left = conn.execute("select count(*) from task").fetchone()[0]
        return {"stats": {"pending": left}, "pragmas": pragmas}

    # -q: no INFO line per task (Huey logs two by default, Coretsia none); -n: no periodic
    # tasks (there are none). Everything else is Huey's default.
    argv = [HUEY_CONSUMER, "hueyapp.huey", "-k", "process", "-w", str(workers), "-n", "-q"]
    return Side(argv, "consumer.log", _stop_huey, extras)


SIDES: dict[str, Callable[[Path, int, int, str], Side]] = {
    "coretsia": coretsia_side,
    "huey": huey_side,
}


def drain(side: str, workers: int, tasks: int, task: str) -> dict[str, Any]:
    """One side's ``workers`` draining ``tasks`` messages enqueued before its start."""
    root = make_root()
    try:
        how = SIDES[side](root, workers, tasks, task)
        records_path = root / "records.log"
        launched = time.monotonic()
        proc = spawn(how.argv, root, root / how.log_name)

        def drained() -> bool:
            if proc.poll() is not None:
                tail = (root / how.log_name).read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{side} exited with {proc.returncode}: {tail}")
            return line_count(records_path) >= tasks

        wait_until(drained, time.monotonic() + DEADLINE_S, f"{tasks} tasks ({side})")
        stop_status = how.stop(root, proc)
        result = measure(read_records(records_path), tasks, workers, launched)
        result["stop_status"] = stop_status
        result.update(how.extras(root))
        return result
    finally:
        release([root])
