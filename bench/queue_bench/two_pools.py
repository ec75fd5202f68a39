"""Two pools, one database: messages run by both pools at overlapping times (must be 0)."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.results import Results

from coretsia.sources.sqlite_queue import SqliteQueue
from queue_bench.events import failure_reasons, read_events
from queue_bench.records import Record, read_records
from queue_bench.roots import (
    DEADLINE_S,
    SUPERVISOR,
    make_root,
    release,
    spawn,
    stop_pool,
    wait_until,
    write_config,
)

PAIR_TASKS, PAIR_WORKERS, PAIR_MAX_REQUESTS = 2_000, 2, 25


def two_pools(results: Results, tasks: int) -> None:
    """Two roots, one database: messages run by both pools at overlapping times."""
    shared = make_root("cq-db-", app=False)
    roots = [shared]
    try:
        roots += [make_root(), make_root()]
        results.data["two_pools"] = _two_pools(shared / "queue.sqlite3", roots[1:], tasks)
    finally:
        release(roots)


def _two_pools(db: Path, roots: list[Path], tasks: int) -> dict[str, Any]:
    with SqliteQueue(db) as queue:
        queue.enqueue(f"p{i}" for i in range(tasks))
    for root in roots:
        write_config(root, PAIR_WORKERS, "app:sleep10", PAIR_MAX_REQUESTS, database=str(db))
    out: dict[str, Any] = {"tasks": tasks, "workers_per_pool": PAIR_WORKERS}
    out["max_requests"] = PAIR_MAX_REQUESTS
    argv = [SUPERVISOR, "start", "--log-format", "json", "--root"]
    procs = [spawn([*argv, str(root)], root, root / "supervisor.log") for root in roots]

    def settled() -> bool:
        with SqliteQueue(db, create=False) as queue:
            stats = queue.stats()
        both_gone = all(p.poll() is not None for p in procs)
        return both_gone or stats["done"] + stats["failed"] >= tasks

    wait_until(settled, time.monotonic() + DEADLINE_S, "the two pools to drain")
    out["exit_status"] = [stop_pool(r, p) for r, p in zip(roots, procs, strict=True)]
    with SqliteQueue(db, create=False) as queue:
        out["stats"] = queue.stats()
    runs: dict[str, list[tuple[int, Record]]] = defaultdict(list)
    out["records_per_pool"] = []
    for index, root in enumerate(roots):
        records = read_records(root / "records.log")
        out["records_per_pool"].append(len(records))
        for record in records:
            runs[record.payload].append((index, record))
    concurrent = 0
    by_both = 0
    for entries in runs.values():
        pools = {index for index, _ in entries}
        if len(pools) < 2:
            continue
        by_both += 1
        a = [r for i, r in entries if i == 0]
        b = [r for i, r in entries if i == 1]
        if any(x.start < y.end and y.start < x.end for x in a for y in b):
            concurrent += 1
    out["ran_by_both"] = by_both
    out["ran_by_both_concurrently"] = concurrent
    out["ran_twice"] = sum(1 for entries in runs.values() if len(entries) > 1)
    out["not_run"] = tasks - len(runs)  # still in the database: pending, not lost
    out["failures"] = [
        [e for e in failure_reasons(read_events(r / "supervisor.log")) if "pool.failed" in e]
        for r in roots
    ]
    return out
