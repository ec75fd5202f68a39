"""The Huey side of ``bench/pipeline.py``: a ``SqliteHuey`` and its tasks.

Copied into a throw-away root as ``hueyapp.py`` next to ``app.py`` (``pipeline_app.py``) and
run by ``huey_consumer hueyapp.huey -k process -w N`` from that root. The tasks call the
same ``run_*`` functions as the Coretsia handlers, so both sides record alike.

Durability is set like Coretsia's queue: WAL, and ``PRAGMA synchronous`` from
``CQ_HUEY_SYNCHRONOUS`` (``FULL`` or ``NORMAL``; the benchmark sets it to what Coretsia's
workers use, read from them in the same run). ``SqliteHuey``'s own ``fsync`` option
only knows ``FULL`` (True) and ``OFF`` (False), so the storage sets the pragma itself on
every connection it makes. A 10 s busy timeout (Coretsia's default); ``results=False``:
Coretsia stores no handler result either (and Huey would store none for ``None``).
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from app import run_noop, run_sleep
from huey import SqliteHuey
from huey.storage import SqliteStorage

SYNCHRONOUS = os.environ.get("CQ_HUEY_SYNCHRONOUS", "FULL")
if SYNCHRONOUS not in ("FULL", "NORMAL"):
    raise ValueError("CQ_HUEY_SYNCHRONOUS must be FULL or NORMAL")


class Storage(SqliteStorage):
    def _create_connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection = super()._create_connection()
        conn.execute(f"PRAGMA synchronous = {SYNCHRONOUS}")
        return conn


class BenchHuey(SqliteHuey):
    storage_class = Storage


huey: Any = BenchHuey(
    "bench",
    filename=os.path.join(os.path.dirname(os.path.abspath(__file__)), "huey.sqlite3"),
    journal_mode="wal",
    timeout=10,
    results=False,
)


@huey.task()
def noop(payload: str) -> None:
    run_noop(payload)


@huey.task()
def sleep50(payload: str) -> None:
    run_sleep(payload, 0.05)
