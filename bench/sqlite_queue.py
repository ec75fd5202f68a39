"""Contention benchmark of the SQLite queue: how evenly processes share, how fast they boot.

Run with the project's environment: ``.venv/bin/python bench/sqlite_queue.py``. Everything
is real: separate interpreters on one database file in a temporary directory.

* **drain**: ``--messages`` no-op messages are queued, ``--workers`` processes each open
  the queue (as a worker does: ``SqliteQueue``, ``recover``), wait for a common start
  line, then lease and ack in a loop until the queue is empty. Reported: tasks per
  second (messages / time from the start line to the last process done), each
  process's count, and their coefficient of variation (population standard deviation
  over the mean; 0 is a perfect share).
* **boot**: ``--workers - 1`` processes lease and fail (back to pending) in an endless
  loop, the heaviest write load a pool puts on the file, while ``--boots`` fresh
  processes one after the other open the queue, recover and check it, as a booting
  worker does. Reported: each boot's time inside the process (interpreter start-up
  excluded).

It uses only the public API, so it runs unchanged against older versions of the queue
(a keyword the older version lacks is simply not passed).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from coretsia.sources.sqlite_queue import SqliteQueue

CHILD = r"""
import sys, time
from coretsia.sources.sqlite_queue import LeaseLostError, SqliteQueue

mode, db, generation = sys.argv[1:4]


def open_queue():
    try:
        return SqliteQueue(db, synchronous="NORMAL")  # what a worker uses, where supported
    except TypeError:
        return SqliteQueue(db)


started = time.perf_counter()
queue = open_queue()
queue.recover(generation)
queue.check()
boot = time.perf_counter() - started
if mode == "boot":
    print(f"boot {boot:.6f}", flush=True)
    sys.exit(0)
print("ready", flush=True)
sys.stdin.readline()  # the common start line
count = 0
while True:
    message = queue.lease(generation)
    if message is None:
        break
    try:
        if mode == "drain":
            queue.ack(message)
        else:  # churn: back to pending, for ever
            queue.fail(message, 10**9)
    except LeaseLostError:  # an old queue's recover() took a live lease: count it anyway
        pass
    count += 1
print(f"done {count}", flush=True)
"""


def _spawn(mode: str, db: Path, generation: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, mode, str(db), generation],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def drain(db: Path, workers: int, messages: int) -> dict[str, object]:
    """Each process leases and acks until the queue is empty; counts and rate."""
    with SqliteQueue(db) as queue:
        queue.enqueue(f"m{i}" for i in range(messages))
    procs = [_spawn("drain", db, "bench-drain") for _ in range(workers)]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        started = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        counts = []
        for proc in procs:
            out, _ = proc.communicate(timeout=600)
            counts.append(int(out.split()[-1]))
        elapsed = time.perf_counter() - started
    finally:
        _reap(procs)
    mean = statistics.fmean(counts)
    return {
        "tasks_per_s": messages / elapsed,
        "elapsed_s": elapsed,
        "counts": counts,
        "cv": statistics.pstdev(counts) / mean if mean else 0.0,
    }


def boot(db: Path, workers: int, boots: int) -> list[float]:
    """Boot times (seconds) of fresh processes while ``workers - 1`` others churn."""
    with SqliteQueue(db) as queue:
        queue.enqueue(f"c{i}" for i in range(1000))
    churn = [_spawn("churn", db, "bench-churn") for _ in range(max(workers - 1, 1))]
    times = []
    try:
        for proc in churn:
            assert proc.stdout is not None
            assert proc.stdin is not None
            assert proc.stdout.readline().strip() == "ready"
            proc.stdin.write("go\n")
            proc.stdin.flush()
        time.sleep(0.5)  # a benchmark, not a test: let the churn reach its steady state
        for i in range(boots):
            booted = _spawn("boot", db, f"bench-boot-{i}")
            out, _ = booted.communicate(timeout=120)
            times.append(float(out.split()[-1]))
    finally:
        _reap(churn)
    return times


def _reap(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--boots", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for run in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory(prefix="cqb-") as tmp:
            result = drain(Path(tmp) / "q.sqlite3", args.workers, args.messages)
        print(
            f"drain run {run}: {result['tasks_per_s']:.0f} tasks/s, "
            f"{result['elapsed_s']:.2f} s, counts {result['counts']}, cv {result['cv']:.3f}"
        )
    if args.boots:
        with tempfile.TemporaryDirectory(prefix="cqb-") as tmp:
            times = boot(Path(tmp) / "q.sqlite3", args.workers, args.boots)
        print(
            f"boot under load ({args.workers - 1} churning): "
            + ", ".join(f"{t * 1000:.0f}" for t in times)
            + f" ms; median {statistics.median(times) * 1000:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
