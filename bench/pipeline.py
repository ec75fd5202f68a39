"""The task pipeline's throughput and soak, side by side with Huey, in one run.

Run it with ``.venv/bin/nox -s bench_queue`` (which also installs the ``bench`` dependency
group: Huey), or ``python bench/pipeline.py`` in an environment that has it. Everything is
real: ``coretsia-supervisor start --root R --log-format json`` with the ``sqlite`` task
source, and ``huey_consumer hueyapp.huey -k process -w N`` with ``SqliteHuey``, each in a
throw-away root ``/tmp/cq-*``. The handlers (``pipeline_app.py``, ``pipeline_huey_app.py``)
record ``<payload> <pid> <start> <end>`` themselves (``time.monotonic``, one ``O_APPEND``
write per task); every figure is computed from those records, the queue's ``stats()`` and
the supervisor's JSON log. Results: a markdown table on stdout and
``bench/results/queue-<timestamp>.{json,md}``; explained in ``docs/performance.md``.

Parts (``--only``, comma-separated; default ``throughput,io``; ``--soak`` adds
``soak,two-pools``):

* ``throughput``: ``--tasks`` (5,000) no-op tasks enqueued before the consumer starts,
  for N = ``--sizes`` (1, 2, 4) workers, ``--runs`` times (3), Coretsia and Huey
  interleaved (which side goes first alternates from run to run): tasks/s (first task
  start to last task end), launch to first task start, tasks per worker process (padded
  with zeros to N: a worker that never got a task counts) and their coefficient of
  variation (population standard deviation over the mean), over the whole drain and over
  the records from the moment every worker had taken a task (boot stagger excluded).
* ``io``: 200 tasks that sleep 50 ms on 4 workers, both sides: the fraction of ideal
  parallel throughput (ideal = 200 x 50 ms / 4 = 2.5 s over the measured window).
* ``soak``: ``--soak-tasks`` (20,000) no-op tasks through 4 workers with
  ``max_requests = 50`` (recycling); a quarter in, the worker running the one marked task
  (it sleeps, holding its lease) is SIGKILLed, so the kill lands mid-task by construction;
  the pool fails by design (an unexpected worker exit) and is started again to finish.
  Checks: nothing lost (every payload's handler ran to its end, ``stats()`` says all
  ``done``), no handler ran to its end twice, the killed lease recovered once, no
  settlement refused (``task.failed``, ``worker-task-settlement-failed``), the per-process
  attempt maximum (<= max_requests + 1), the restarted pool's clean stop; reported:
  recycles and the spawn-to-ready times of recycled workers from the JSON log.
* ``two-pools``: two roots (2 workers each, ``max_requests = 25``, 10 ms tasks) on one
  database (an absolute ``database`` path) draining 2,000 messages together; counts the
  messages run by both pools, those run by both at overlapping times (must be 0), and
  how each pool ended.

Huey's ``PRAGMA synchronous`` is by default what Coretsia's workers use, read from them in
the warm-up; ``--huey-synchronous FULL`` (or ``NORMAL``) forces it.

Every wait is bounded (``DEADLINE_S``); every process started here is killed by pid (its
tree while it is not reaped, and whatever runs in its root) as soon as its part is over,
and again at the end whatever happens, on failure and on SIGINT or SIGTERM too (a second
signal waits until the cleanup is done).

This script is the entry point only: the roots and their processes, the two sides, each
part and the tables are modules of ``queue_bench/`` beside it, and what it shares with the
pool benchmark (``run.py``) is in ``harness/``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import signal
import sys
import time

from harness.bytecode import ensure_bytecode
from harness.machine import load_average, machine
from harness.results import Results, save
from queue_bench.records import SYNC
from queue_bench.roots import cleanup, log
from queue_bench.soak import SOAK_TASKS, soak
from queue_bench.table import durability_lines, table
from queue_bench.throughput import io_bound, one_run, throughput
from queue_bench.two_pools import PAIR_TASKS, two_pools

PARTS = ("throughput", "io", "soak", "two-pools")


def queue_machine() -> dict[str, object]:
    import huey

    return {**machine(), "huey": huey.__version__}


def ensure_queue_bytecode() -> None:
    """Compile what the processes import (Coretsia's and Huey's) when no fresh .pyc exists.

    Without it, under ``PYTHONDONTWRITEBYTECODE=1`` and an installer that does not compile,
    every worker would compile its modules at every start (see docs/performance.md).
    """
    import compileall

    import huey

    ensure_bytecode()
    compileall.compile_dir(os.path.dirname(huey.__file__), quiet=1)


def _sizes(text: str) -> list[int]:
    """``--sizes``: comma-separated worker counts, each at least 1."""
    try:
        sizes = [int(n) for n in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"worker counts must be at least 1: {text!r}")
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument(
        "--sizes", type=_sizes, default=[1, 2, 4], help="worker counts (default 1,2,4)"
    )
    parser.add_argument("--only", default="", help=",".join(PARTS))
    parser.add_argument("--soak", action="store_true", help="add soak,two-pools")
    parser.add_argument("--soak-tasks", type=int, default=SOAK_TASKS)
    parser.add_argument(
        "--huey-synchronous",
        choices=("match", "FULL", "NORMAL"),
        default="match",
        help="Huey's PRAGMA synchronous (default: what Coretsia's workers use, read in the "
        "warm-up)",
    )
    args = parser.parse_args()
    if args.runs < 1 or args.tasks < 1:
        parser.error("--runs and --tasks must be at least 1")
    if args.soak_tasks < 8:
        parser.error("--soak-tasks must be at least 8")
    parts = set(filter(None, args.only.split(","))) or {"throughput", "io"}
    if args.soak:
        parts |= {"soak", "two-pools"}
    unknown = parts - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s): {', '.join(sorted(unknown))}")

    started = datetime.datetime.now(datetime.timezone.utc)
    results = Results(started.isoformat(timespec="seconds"), queue_machine(), args.runs)
    results.data["load_average_before"] = load_average()
    ensure_queue_bytecode()
    clock = time.monotonic()
    try:
        if parts & {"throughput", "io"}:
            log("warm-up (discarded): 200 tasks on each side")
            warm = one_run("coretsia", 1, 200, "noop")
            sync = args.huey_synchronous
            if sync == "match":
                used = {SYNC.get(p.split()[-1], "") for p in warm["worker_pragmas"]}
                if len(used) != 1 or not used <= {"FULL", "NORMAL"}:
                    raise RuntimeError(f"Coretsia's workers used {used}: use --huey-synchronous")
                sync = used.pop()
                results.notes.append(f"Huey's synchronous: {sync}, matching Coretsia's workers")
            else:
                results.notes.append(f"Huey's synchronous: {sync} (--huey-synchronous)")
            os.environ["CQ_HUEY_SYNCHRONOUS"] = sync
            one_run("huey", 1, 200, "noop")
        if "throughput" in parts:
            throughput(results, args.sizes, args.tasks, args.runs)
        if "io" in parts:
            io_bound(results, args.runs)
        if "soak" in parts:
            soak(results, args.soak_tasks)
        if "two-pools" in parts:
            two_pools(results, PAIR_TASKS)
    finally:
        cleanup()
    results.data["load_average_after"] = load_average()
    results.data["wall_s"] = time.monotonic() - clock
    durability = durability_lines(results)
    text = "\n".join(
        [
            f"# Coretsia queue benchmark, {results.started}",
            "",
            f"Machine: {results.machine['cores']} cores, {results.machine['memory_gib']} GiB,"
            f" CPython {results.machine['python']}, {results.machine['platform']};"
            f" Huey {results.machine['huey']}. Commit {results.machine['commit']}."
            f" Runs: {results.runs} (medians)."
            f" Load average before: {results.data['load_average_before']}, after:"
            f" {results.data['load_average_after']}. Wall time: {results.data['wall_s']:.0f} s.",
            "",
            *durability,
            "",
            table(results),
            *(f"- {note}" for note in results.notes),
        ]
    )
    save(results, text, started, prefix="queue-")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up on TERM too
    sys.exit(main())
