"""The procrastinate side of ``bench/pg_queue.py``: an App on the same server, one task.

Copied into a throw-away root as ``procapp.py`` next to ``app.py`` (``pipeline_app.py``)
and run by ``procrastinate --app=procapp.app worker --concurrency 1`` (one process per
worker, as a Coretsia pool has) from that root. Its task calls the same ``run_noop`` as
the Coretsia handler, so both sides record alike. The connection string comes from
``CQ_PG_DSN`` (the benchmark's own server, a fresh database per drain).
"""

from __future__ import annotations

import os
from typing import Any

import procrastinate
from app import run_noop

app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=os.environ["CQ_PG_DSN"]))


@app.task(name="noop")
def noop(payload: str) -> None:
    run_noop(payload)


def enqueue(count: int) -> None:
    """Defer ``count`` jobs in one batch (one statement), as Coretsia's batch ``enqueue``."""
    jobs: list[dict[str, Any]] = [{"payload": f"t{i}"} for i in range(count)]
    with app.open():
        noop.batch_defer(*jobs)
