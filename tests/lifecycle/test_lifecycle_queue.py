"""The reference SQLite queue under a real pool: load, recycles, and a killed worker."""

from __future__ import annotations

import collections
import textwrap
from pathlib import Path

import psutil
from pools import cli, wait_for, wait_gone, write_root

from coretsia.sources.sqlite_queue import SqliteQueue

HANDLER = """
import os


def handle(payload):
    if os.path.exists("slow"):
        import time
        time.sleep(0.02)
    line = f"{payload}" + chr(10)
    fd = os.open("handled.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return payload
"""


def queue_root(root: Path, **worker: object) -> SqliteQueue:
    write_root(root, task_source="sqlite", **worker)
    with (root / "coretsia.toml").open("a") as config:
        config.write('\n[worker.source_options]\nhandler = "queue_app:handle"\n')
    (root / "queue_app.py").write_text(textwrap.dedent(HANDLER))
    return SqliteQueue(str(root / "var/queue.sqlite3"))


def handled(root: Path) -> collections.Counter[str]:
    log = root / "handled.log"
    return collections.Counter(log.read_text().split() if log.exists() else [])


class TestQueuePool:
    def test_recycling_under_load_acknowledges_everything_once(
        self, root: Path, supervisors
    ) -> None:  # type: ignore[no-untyped-def]
        """1000 tasks, max_requests 50, 4 workers: every task done exactly once, none failed."""
        queue = queue_root(root, workers=4, max_requests=50)
        payloads = [f"task-{n}" for n in range(1000)]
        queue.enqueue(payloads)
        supervisor = supervisors(root)
        supervisor.wait_running()
        wait_for(lambda: queue.stats()["done"] == 1000, timeout=120)
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0
        stats = queue.stats()
        assert (stats["done"], stats["failed"], stats["pending"], stats["in_flight"]) == (
            1000,
            0,
            0,
            0,
        )
        assert handled(root) == collections.Counter(payloads)  # executed exactly once here
        queue.close()

    def test_killed_worker_loses_nothing(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """A SIGKILLed worker fails the pool; after a restart every task is acknowledged."""
        queue = queue_root(root, workers=2, max_requests=1000)
        (root / "slow").touch()
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
        (root / "slow").unlink()
        again = supervisors(root)
        again.wait_running()
        wait_for(lambda: queue.stats()["done"] == 200, timeout=60)
        assert cli(root, "stop").returncode == 0
        assert again.finish() == 0
        stats = queue.stats()
        assert (stats["done"], stats["failed"], stats["in_flight"]) == (200, 0, 0)
        counts = handled(root)
        assert set(counts) == set(payloads)  # nothing lost: at least once for each
        assert all(count >= 1 for count in counts.values())
        queue.close()
        psutil.wait_procs([victim], timeout=1)
