"""Periodic jobs: one supervised process entry that runs each job at its interval.

The entry is a plain loop. It waits for the next job with ``pool.wait_for_stop``, which
wakes up at once when the pool stops, so a stop never waits for a sleep; a job in flight
at a stop has ``stop_timeout_ms`` to finish. Each job runs at a fixed rate, one interval
after the previous due time (no drift); runs missed while another job overran are
skipped, not run in a burst. A job that raises is logged and runs again at its next
time. The first run of each job is one interval after the pool starts.

``PERIODIC_EVERY_S`` (60 by default) sets the interval of ``report``; ``prune`` runs ten
times less often.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

from coretsia.supervisor.process import WorkerPool

logger = logging.getLogger("example.periodic")

EVERY_S = float(os.environ.get("PERIODIC_EVERY_S", "60"))
EXPORTS = Path("var/exports")
"""Where the application leaves files that ``prune`` removes after a day."""


def report() -> None:
    """A job: one line on stdout (the workers' output goes to the supervisor's)."""
    print(f"report at {time.strftime('%H:%M:%S')}", flush=True)


def prune() -> None:
    """A job: remove files older than a day from ``var/exports``."""
    cutoff = time.time() - 86400
    removed = 0
    for path in EXPORTS.glob("*") if EXPORTS.is_dir() else ():
        if path.is_file() and path.stat().st_mtime < cutoff:
            path.unlink()
            removed += 1
    print(f"prune removed {removed} files", flush=True)


SCHEDULE: tuple[tuple[float, Callable[[], None]], ...] = (
    (EVERY_S, report),
    (10 * EVERY_S, prune),
)
"""Each job and its interval in seconds."""


def next_run(origin: float, interval: float, now: float) -> float:
    """The first time after ``now`` on the grid ``origin + k * interval``."""
    due = origin + (math.floor((now - origin) / interval) + 1) * interval
    return due if due > now else due + interval  # rounding can land on ``now`` itself


def scheduler(pool: WorkerPool, worker_id: int) -> None:
    """The entry: run each job of :data:`SCHEDULE` when it is due, until the pool stops."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    origin = time.monotonic()
    due = [origin + interval for interval, _job in SCHEDULE]
    while not pool.wait_for_stop(max(0.0, min(due) - time.monotonic())):
        for index, (interval, job) in enumerate(SCHEDULE):
            if pool.stopping:
                break
            if due[index] > time.monotonic():
                continue
            try:
                job()
            except Exception:  # one failing job must not stop the others
                logger.exception("job %s failed", job.__name__)
            due[index] = next_run(origin, interval, time.monotonic())
