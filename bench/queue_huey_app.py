"""The Huey side of ``bench/queue.py``: a ``SqliteHuey`` and its tasks.

Copied into a throw-away root as ``hueyapp.py`` next to ``app.py`` (``queue_app.py``) and
run by ``huey_consumer hueyapp.huey -k process -w N`` from that root. The tasks call the
same ``run_*`` functions as the Coretsia handlers, so both sides record alike.

Durability is set to match Coretsia's queue: WAL, ``synchronous=FULL`` (``fsync=True``),
a 10 s busy timeout (Coretsia's ``busy_timeout`` default). ``results=False``: Coretsia
stores no handler result either (and Huey would store none for a ``None`` anyway).
"""

from __future__ import annotations

import os

from app import run_noop, run_sleep
from huey import SqliteHuey

huey = SqliteHuey(
    "bench",
    filename=os.path.join(os.path.dirname(os.path.abspath(__file__)), "huey.sqlite3"),
    journal_mode="wal",
    fsync=True,
    timeout=10,
    results=False,
)


@huey.task()
def noop(payload: str) -> None:
    run_noop(payload)


@huey.task()
def sleep50(payload: str) -> None:
    run_sleep(payload, 0.05)
