"""The PostgreSQL drains of ``bench/pg_queue.py``: Coretsia's ``postgres`` source (one or
several pools) and procrastinate's workers, each on a fresh database of one server."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from harness import BENCH
from pg_server import PgServer

from coretsia.sources.postgres_queue import PostgresQueue
from queue_bench.records import line_count, measure, read_records
from queue_bench.roots import (
    BIN,
    DEADLINE_S,
    SUPERVISOR,
    make_root,
    release,
    spawn,
    stop_pool,
    wait_until,
)

PROCRASTINATE = [str(BIN / "python"), "-m", "procrastinate", "--app=procapp.app"]
"""``-m`` from the root: ``procapp`` (and the ``app`` it imports) are on the path."""
_databases = itertools.count()


def fresh_database(server: PgServer) -> str:
    """A new empty database on ``server``; its libpq string."""
    name = f"bench{os.getpid()}_{next(_databases)}"
    server.create_database(name)
    return server.dsn(name)


def _config(root: Path, workers: int, dsn: str) -> None:
    (root / "coretsia.toml").write_text(
        "[worker]\n"
        f"workers = {workers}\n"
        'task_type = "queue"\n'
        'task_source = "postgres"\n'
        "max_requests = 100000\n"
        "start_timeout_ms = 120000\n"
        "stop_timeout_ms = 20000\n"
        "\n[worker.source_options]\n"
        f'dsn = "{dsn}"\n'
        'handler = "app:run_noop"\n'
    )


def _drain(roots: list[Path], procs: list[subprocess.Popen[bytes]], tasks: int) -> None:
    def drained() -> bool:
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"a consumer exited with {proc.returncode} before the end")
        return sum(line_count(root / "records.log") for root in roots) >= tasks

    wait_until(drained, time.monotonic() + DEADLINE_S, f"{tasks} tasks")


def coretsia_postgres(server: PgServer, workers: int, tasks: int, pools: int = 1) -> dict[str, Any]:
    """``pools`` pools of ``workers`` each on one queue, ``tasks`` messages enqueued first."""
    dsn = fresh_database(server)
    with PostgresQueue(dsn) as queue:
        queue.enqueue(f"t{i}" for i in range(tasks))
    roots = [make_root("pq-") for _ in range(pools)]
    try:
        for root in roots:
            _config(root, workers, dsn)
        launched = time.monotonic()
        argv = [SUPERVISOR, "start", "--log-format", "json", "--root"]
        procs = [spawn([*argv, str(root)], root, root / "supervisor.log") for root in roots]
        _drain(roots, procs, tasks)
        statuses = [stop_pool(root, proc) for root, proc in zip(roots, procs, strict=True)]
        records = [r for root in roots for r in read_records(root / "records.log")]
        result = measure(records, tasks, workers * pools, launched)
        with PostgresQueue(dsn, create=False) as queue:
            result["stats"] = queue.stats()
        result["stop_status"] = statuses
        return result
    finally:
        release(roots)


def procrastinate(server: PgServer, workers: int, tasks: int) -> dict[str, Any]:
    """``workers`` procrastinate worker processes (concurrency 1 each), same workload."""
    dsn = fresh_database(server)
    root = make_root("pp-")
    try:
        shutil.copy(BENCH / "pipeline_procrastinate_app.py", root / "procapp.py")
        os.environ["CQ_PG_DSN"] = dsn  # procapp reads it; spawn() passes our environment on
        setup = [
            [*PROCRASTINATE, "schema", "--apply"],
            [str(BIN / "python"), "-c", f"import procapp; procapp.enqueue({tasks})"],
        ]
        for argv in setup:
            subprocess.run(argv, cwd=root, check=True, timeout=DEADLINE_S, capture_output=True)
        launched = time.monotonic()
        argv = [*PROCRASTINATE, "worker", "--concurrency", "1"]
        procs = [spawn(argv, root, root / f"worker{i}.log") for i in range(workers)]
        _drain([root], procs, tasks)
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)  # procrastinate's graceful stop
        statuses = [proc.wait(timeout=DEADLINE_S) for proc in procs]
        result = measure(read_records(root / "records.log"), tasks, workers, launched)
        result["stop_status"] = statuses
        return result
    finally:
        release([root])
