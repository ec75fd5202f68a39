"""Entries of the example process pool: plain functions and a typed Process class.

Every entry is a module-level function or class: each worker is a fresh interpreter that
imports this module again and rebuilds the entry (a class is constructed once in the
parent to register it, and again in every worker, with no arguments).
"""

from __future__ import annotations

import os
import time

from coretsia.supervisor.process import WorkerPool

TICKS = int(os.environ.get("EXAMPLE_TICKS", "5"))


def say(*words: object) -> None:
    """One line on stdout: the workers' output goes straight to the terminal."""
    print(*words, flush=True)


def consumer(pool: WorkerPool, worker_id: int) -> None:
    """A long-running loop: does a unit of work, then waits (or stops) between units."""
    say(f"consumer {pool.name} (worker {worker_id}) started")
    handled = 0
    try:
        while not pool.wait_for_stop(0.2):  # the entry's sleep that wakes up on a stop
            handled += 1
    finally:
        say(f"consumer {pool.name} stopping after {handled} units")


def flaky(pool: WorkerPool, worker_id: int) -> None:
    """Works a little, then returns: while the pool runs, it is replaced by a new worker.

    (An entry that returned at once would be replaced at most every 100 ms, the
    ``respawn_interval_ms``: never a busy loop.)
    """
    if not pool.wait_for_stop(1.5):
        say(f"flaky (worker {worker_id}) in pid {os.getpid()} returns: it will be replaced")


class Scheduler:
    """A typed entry (seed 003's ProcessInterface): every second, one tick.

    This example is finite: after ``EXAMPLE_TICKS`` ticks the scheduler asks for the
    whole pool's shutdown, as a finite job must (returning would only get it replaced).
    """

    enabled = True
    enable_async = False

    def execute(self, pool: WorkerPool, worker_id: int) -> None:
        for tick in range(1, TICKS + 1):
            if pool.wait_for_stop(1.0):
                return
            say(f"scheduler tick {tick}/{TICKS} at {time.strftime('%H:%M:%S')}")
        say("scheduler: done, asking the pool to shut down")
        pool.shutdown()
        pool.wait_for_stop(None)
