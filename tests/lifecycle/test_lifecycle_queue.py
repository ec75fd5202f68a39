"""The reference SQLite queue under a real pool: a task in flight at stop, a killed worker.

Load and recycling bounds: test_lifecycle_load.py.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import psutil
from pools import Supervisors, cli, install_app, wait_for, wait_gone, write_root

from coretsia.sources.sqlite_queue import SqliteQueue


def queue_root(root: Path, handler: str = "handle", **worker: Any) -> SqliteQueue:
    """A pool of the sqlite source running ``apps/queue_app.py``'s ``handler``."""
    write_root(
        root, task_source="sqlite", source_options={"handler": f"queue_app:{handler}"}, **worker
    )
    install_app(root, "queue_app.py")
    return SqliteQueue(str(root / "var/queue.sqlite3"))


def handled(root: Path) -> list[tuple[str, str]]:
    """``(payload, pid of the worker that ran it)`` for every task the handler ran."""
    log = root / "handled.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [(payload, pid) for payload, pid in (line.split() for line in lines)]


class TestQueuePool:
    def test_task_in_flight_at_stop_finishes_and_is_settled(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A stop lets the running task end and be acknowledged: nothing stays leased."""
        queue = queue_root(root, handler="until_stop", workers=1)
        queue.enqueue(["in-flight"])
        supervisor = supervisors(root)
        supervisor.wait_running()
        wait_for(lambda: handled(root) != [])
        assert queue.stats()["in_flight"] == 1
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0
        assert (root / "finished.log").read_text() == "stop-seen"
        stats = queue.stats()
        assert (stats["done"], stats["pending"], stats["in_flight"]) == (1, 0, 0)
        queue.close()

    def test_a_stop_mid_drain_leaves_nothing_leased(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """Messages leased ahead by the stopping workers go back pending, attempts untouched."""
        queue = queue_root(root, workers=2, max_requests=1000)
        total = 300
        queue.enqueue([f"task-{n}" for n in range(total)])
        supervisor = supervisors(root)
        supervisor.wait_running()
        wait_for(lambda: queue.stats()["done"] >= 20)
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0
        stats = queue.stats()
        assert (stats["in_flight"], stats["failed"]) == (0, 0)
        assert stats["done"] + stats["pending"] == total
        assert stats["done"] == len(handled(root))  # every run settled, no other
        conn = sqlite3.connect(root / "var/queue.sqlite3")
        try:
            tried = conn.execute("SELECT count(*) FROM messages WHERE attempts > 0").fetchone()
        finally:
            conn.close()
        assert tried == (0,)
        queue.close()

    def test_killed_worker_loses_nothing(self, root: Path, supervisors: Supervisors) -> None:
        """A SIGKILLed worker fails the pool; after a restart every task is acknowledged."""
        queue = queue_root(root, workers=2, max_requests=1000)
        payloads = [f"task-{n}" for n in range(200)]
        queue.enqueue(payloads)
        supervisor = supervisors(root)
        supervisor.wait_running()
        wait_for(lambda: queue.stats()["done"] >= 20)
        victim = supervisor.workers()[0]
        victim.kill()
        assert supervisor.finish() == 1
        assert supervisor.error == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-child-exited"
        assert wait_gone(root) == []
        assert queue.stats()["done"] < 200
        again = supervisors(root)
        again.wait_running()
        wait_for(lambda: queue.stats()["done"] == 200, timeout=60)
        assert cli(root, "stop").returncode == 0
        assert again.finish() == 0
        stats = queue.stats()
        assert (stats["done"], stats["failed"], stats["in_flight"]) == (200, 0, 0)
        # Nothing lost: each at least once (the killed worker's task may have run twice).
        assert {p for p, _ in handled(root)} == set(payloads)
        queue.close()
        psutil.wait_procs([victim], timeout=1)
