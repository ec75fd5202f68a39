"""Real worker processes on one database: each message once, nothing lost on SIGKILL.

Each child (``tests/support/apps/sqlite_source_child.py``) builds the ``sqlite`` source
exactly as a worker would (``make_source`` with a context whose stop descriptor is an
inherited pipe), waits in ``receive`` between batches, and stops when the parent closes
the pipe's write end.
"""

from __future__ import annotations

import os
import select
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pools import install_app, wait_for

from coretsia.sources.sqlite_queue import SqliteQueue
from coretsia.sources.sqlite_source import make_source


class Workers:
    """Child worker processes sharing one stop pipe; all killed and reaped at the end.

    Their stdout is unbuffered bytes on our side: a line read leaves nothing behind in a
    Python buffer, so a ``select`` on the descriptor tells whether the next line is there.
    """

    def __init__(self, root: Path, app_dir: Path) -> None:
        self.root = root
        self.app_dir = app_dir
        self.stop_read, self.stop_write = os.pipe()
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, count: int, handler: str, generation: str) -> list[subprocess.Popen[bytes]]:
        started = [
            subprocess.Popen(
                [
                    sys.executable,
                    "sqlite_source_child.py",
                    str(self.stop_read),
                    "var/q.sqlite3",
                    str(self.app_dir),
                    handler,
                    generation,
                ],
                cwd=self.root,
                pass_fds=(self.stop_read,),
                stdout=subprocess.PIPE,
                bufsize=0,
            )
            for _ in range(count)
        ]
        self.procs += started
        for proc in started:
            assert read_line(proc, timeout=30) == "ready True"
        return started

    def stop(self) -> None:
        if self.stop_write >= 0:
            os.close(self.stop_write)
            self.stop_write = -1

    def close(self) -> None:
        self.stop()
        os.close(self.stop_read)
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
            if proc.stdout is not None:
                proc.stdout.close()


def read_line(proc: subprocess.Popen[bytes], timeout: float = 15) -> str:
    """The child's next line, without its end; fails the test if none comes in time.

    The children print each line in one flushed write (shorter than ``PIPE_BUF``), so a
    readable pipe holds a whole line and ``readline`` does not block after ``select``.
    """
    assert proc.stdout is not None
    if not select.select([proc.stdout], [], [], timeout)[0]:
        raise AssertionError(f"no line from pid {proc.pid} within {timeout} s")
    line = proc.stdout.readline().decode()
    assert line.endswith("\n"), f"pid {proc.pid} ended its output with {line!r}"
    return line[:-1]


@pytest.fixture
def workers(short_root: Path, handlers: str) -> Iterator[Workers]:
    install_app(short_root, "sqlite_source_child.py")
    pool = Workers(short_root, short_root / "app")
    yield pool
    pool.close()


def test_concurrent_workers_lease_every_message_exactly_once(
    workers: Workers, short_root: Path
) -> None:
    """Four processes, a fresh database, batches arriving while they work: no loss, no dup."""
    procs = workers.start(4, "cq_handlers:record", "gen-1")  # they create the database together
    total = 400
    with SqliteQueue(short_root / "var" / "q.sqlite3") as queue:
        for batch in range(10):
            queue.enqueue(f"m{batch}-{i}" for i in range(total // 10))
            time.sleep(0.02)
        wait_for(lambda: queue.stats()["done"] >= total, timeout=15)  # an ack pokes no one
        assert queue.stats() == {"pending": 0, "in_flight": 0, "done": total, "failed": 0}
    workers.stop()  # every waiting receive returns None at once
    leased: list[int] = []
    for proc in procs:
        out, _ = proc.communicate(timeout=10)
        lines = out.decode().splitlines()
        assert lines[-1] == "stopped"
        assert proc.returncode == 0
        leased += [int(line.split()[1]) for line in lines[:-1]]
    assert sorted(leased) == list(range(1, total + 1))


def test_a_sigkilled_worker_loses_nothing(
    workers: Workers,
    short_root: Path,
    handlers: str,
    make_context: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its lease survives the kill; the next generation gets the message back, once."""
    (victim,) = workers.start(1, "cq_handlers:hang", "gen-1")
    with SqliteQueue(short_root / "var" / "q.sqlite3") as queue:
        queue.enqueue(["precious", "next"])
    assert read_line(victim) == "leased 1"
    victim.kill()
    victim.wait(timeout=10)

    monkeypatch.chdir(short_root)
    options = {"handler": f"{handlers}:record", "database": "var/q.sqlite3"}
    source = make_source(make_context(options, generation="gen-2"))
    try:
        assert source.queue.stats()["pending"] == 2  # recovered at construction
        first = source.receive()
        assert first is not None
        assert (first.message.id, first.message.payload, first.message.attempts) == (
            1,
            "precious",
            1,
        )
        first.complete(first.run())
        # The acknowledgement leased "next" ahead; closing the source gives it back.
        assert source.queue.stats() == {"pending": 0, "in_flight": 1, "done": 1, "failed": 0}
    finally:
        source.close()
    with SqliteQueue(short_root / "var" / "q.sqlite3") as queue:
        assert queue.stats() == {"pending": 1, "in_flight": 0, "done": 1, "failed": 0}


def test_two_pools_on_one_database_never_take_each_others_live_lease(
    workers: Workers, short_root: Path
) -> None:
    """Pool B's recovery leaves pool A's running task alone; once A is killed, B takes it."""
    (pool_a,) = workers.start(1, "cq_handlers:hang", "pool-a")
    db = short_root / "var" / "q.sqlite3"
    with SqliteQueue(db) as queue:
        queue.enqueue(["long-task"])
    assert read_line(pool_a) == "leased 1"

    pool_b = workers.start(1, "cq_handlers:record", "pool-b")  # recovers at construction
    with SqliteQueue(db) as queue:
        assert queue.stats() == {"pending": 0, "in_flight": 1, "done": 0, "failed": 0}
        assert queue.recover("pool-c") == 0  # nor does a third pool's
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT generation FROM messages").fetchall() == [("pool-a",)]
    conn.close()

    pool_a.kill()
    pool_a.wait(timeout=10)
    pool_b += workers.start(1, "cq_handlers:record", "pool-b")  # a new worker recovers it
    with SqliteQueue(db) as queue:
        wait_for(lambda: queue.stats()["done"] == 1, timeout=15)  # an ack pokes no one
        assert queue.stats() == {"pending": 0, "in_flight": 0, "done": 1, "failed": 0}
    workers.stop()
    leased = []
    for proc in pool_b:
        assert proc.wait(timeout=10) == 0
        assert proc.stdout is not None
        out = proc.stdout.read().decode()  # the child has exited: this ends at end of file
        leased += [line for line in out.splitlines() if line.startswith("leased")]
    assert leased == ["leased 1"]  # once, by pool B, after pool A died
    assert not os.path.exists(f"{db}.generations/pool-a.lock")  # the dead pool's is swept
