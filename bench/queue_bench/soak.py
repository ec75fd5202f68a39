"""The soak: a recycling pool, one worker SIGKILLed mid-task, restarted; nothing lost."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

from harness.results import Results

from coretsia.sources.sqlite_queue import SqliteQueue
from queue_bench.events import (
    count_events,
    failure_reasons,
    pool_failed,
    read_events,
    spawn_to_ready,
)
from queue_bench.records import line_count, probes, read_records
from queue_bench.roots import (
    DEADLINE_S,
    SUPERVISOR,
    log,
    make_root,
    release,
    spawn,
    stop_pool,
    wait_until,
    workers_of,
    write_config,
)

SOAK_TASKS, SOAK_WORKERS, SOAK_MAX_REQUESTS = 20_000, 4, 50


def _db_rows(db: Path) -> dict[str, int]:
    """What the queue's table itself says (read-only, beside ``stats()``)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        one = conn.execute
        return {
            "rows": one("select count(*) from messages").fetchone()[0],
            "done": one("select count(*) from messages where state = 'done'").fetchone()[0],
            "retried_rows": one("select count(*) from messages where attempts > 0").fetchone()[0],
            "max_attempts_seen": one("select coalesce(max(attempts), 0) from messages").fetchone()[
                0
            ],
        }
    finally:
        conn.close()


def soak(results: Results, tasks: int) -> None:
    """Recycling pool, one worker SIGKILLed mid-run, restarted, drained; nothing lost."""
    root = make_root()
    try:
        results.data["soak"] = _soak(root, tasks)
    finally:
        release([root])


def _soak(root: Path, tasks: int) -> dict[str, Any]:
    write_config(root, SOAK_WORKERS, "app:soak", max_requests=SOAK_MAX_REQUESTS)
    db = root / "var" / "queue.sqlite3"
    victim_at = tasks // 4
    expected = [f"s{i}" if i != victim_at else f"s{i}!" for i in range(tasks)]
    with SqliteQueue(db) as queue:
        queue.enqueue(expected)
    records_path = root / "records.log"
    out: dict[str, Any] = {"tasks": tasks, "workers": SOAK_WORKERS}
    out["max_requests"] = SOAK_MAX_REQUESTS
    argv = [SUPERVISOR, "start", "--root", str(root), "--log-format", "json"]
    started = time.monotonic()
    first = spawn(argv, root, root / "supervisor-1.log")
    victim_file = root / "victim.pid"
    wait_until(
        lambda: first.poll() is not None or victim_file.exists(),
        time.monotonic() + DEADLINE_S,
        "the victim task (a quarter into the soak)",
    )
    if first.poll() is not None:
        raise RuntimeError(f"the soak pool exited early with {first.returncode}")
    time.sleep(0.2)  # the others go on meanwhile: the kill lands in a busy pool
    victim = int(victim_file.read_text().split()[0])
    if victim not in workers_of(first):
        raise RuntimeError(f"the victim {victim} is not one of the pool's workers")
    os.kill(victim, signal.SIGKILL)  # a worker of a live, unreaped supervisor: still it
    out["killed_pid"] = victim
    out["killed_after_records"] = line_count(records_path)
    log(f"soak: SIGKILLed worker {victim} after {out['killed_after_records']} tasks")
    first.wait(timeout=DEADLINE_S)  # an unexpected worker exit fails the pool
    out["first_exit_status"] = first.returncode
    with SqliteQueue(db, create=False) as queue:
        out["stats_after_failure"] = queue.stats()
    log(f"soak: the pool exited {first.returncode}; {out['stats_after_failure']}")

    second = spawn(argv, root, root / "supervisor-2.log")

    def settled() -> bool:
        if second.poll() is not None:
            raise RuntimeError(f"the restarted pool exited with {second.returncode}")
        with SqliteQueue(db, create=False) as queue:
            stats = queue.stats()
        return stats["done"] + stats["failed"] >= tasks

    wait_until(settled, time.monotonic() + DEADLINE_S, "the soak to drain")
    out["second_exit_status"] = stop_pool(root, second)
    out["wall_s"] = time.monotonic() - started
    with SqliteQueue(db, create=False) as queue:
        out["stats"] = queue.stats()
    out["db"] = _db_rows(db)
    records = read_records(records_path)
    per_payload = Counter(r.payload for r in records)
    per_process = Counter(r.pid for r in records)
    out["records"] = len(records)
    out["lost"] = len(set(expected) - per_payload.keys())
    out["ran_twice"] = sorted(p for p, c in per_payload.items() if c > 1)
    out["max_per_process"] = max(per_process.values())
    out["processes"] = len(per_process)
    out["done_equals_tasks"] = out["stats"]["done"] == tasks == out["db"]["done"]
    logs = [read_events(root / f"supervisor-{i}.log") for i in (1, 2)]
    recycle_times = [t for events in logs for t in spawn_to_ready(events)]
    out["retired_events"] = sum(count_events(e, "worker.retired") for e in logs)
    out["recycles"] = len(recycle_times)
    out["recycle_spawn_to_ready_s"] = recycle_times
    out["task_failed_events"] = sum(count_events(e, "task.failed") for e in logs)
    out["settlement_failures"] = sum(
        1 for e in logs for reason in failure_reasons(e) if "settlement-failed" in reason
    )
    out["first_pool_failed"] = pool_failed(logs[0])
    out["first_pool_failure"] = failure_reasons(logs[0])[-3:]
    out["worker_pragmas"] = probes(root)
    return out
