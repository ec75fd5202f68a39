"""Coretsia Worker's benchmark: real pools against a bare-Python floor, in one run.

Run it with ``.venv/bin/nox -s bench`` (or ``python bench/run.py`` in the project's
environment). Every scenario runs real processes: ``coretsia-supervisor start`` with a
real guardian and real worker interpreters, in throw-away project roots under the
system's temporary directory. Results go to ``bench/results/<timestamp>.json`` and
``.md`` and the table to stdout; the budgets and the reasons behind any miss are in
``docs/performance.md``.

Scenarios (absolute medians, and ratios to the floor measured in the same run):

* floor: ``bench/floor.py``, a bare script that ``Popen``\\ s N minimal workers (an
  interpreter that sends one readiness datagram and sleeps), waits for N datagrams,
  then SIGTERMs and reaps them; and one spawn-to-ready of a minimal worker.
* S1 start: ``coretsia-supervisor start`` of N idle task workers, launch to ``running``.
* S2 stop: ``coretsia-supervisor stop`` until the supervisor exited, every worker is
  reaped and the lock is free (N = 64).
* S3 recycle: a worker's clean exit (``atexit``) to its replacement's readiness
  (``assert_ready``), both read from the workers' monotonic clocks.
* S4 containment: SIGKILL the supervisor; until every process of the tree is gone and
  the lock is free (N = 64).
* S5 idle cost: CPU seconds and voluntary context switches of the supervisor, guardian
  (and proc host) over 10 s of idle with 64 workers; their RSS; a worker's RSS against a
  bare interpreter's.
* S6 control: ``coretsia-supervisor status`` as a process against ``python -c pass``;
  ``ControlClient.status()`` round trip in-process.
* S7 task loop: per-task overhead of ``run_unit`` / ``work`` with an in-memory source
  and a no-op task against a bare loop calling the same no-op.
* launcher alone ("boot"): the launcher spawned through its internal contract, with no
  supervisor or guardian: spawn to ready, stop to reaped, CPU per life (explains S1-S3).

Options: ``--runs`` (default 3), ``--quick`` (N = 8 and 64 only, 2 s idle windows: a smoke
run), ``--no-1024`` (skip the N = 1024 start), ``--only`` (some of start, s3, boot, s4,
s5, s6, s7, big), ``--no-compile`` (measure without first compiling missing ``.pyc``),
``--wait-idle SECONDS`` (first wait, at most that long, until no pytest or nox process
other than our own ancestors runs), ``--spawn exec|forkserver`` and ``--containment LEVEL``
(every pool's ``[worker]`` key; S5's ``proc`` pool refuses ``forkserver``).

This script is the entry point only: the pools, the floor's runs, each group of scenarios
and the table are modules of ``pool_bench/`` beside it, and what the queue benchmark
(``pipeline.py``) shares with it is in ``harness/``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from harness.machine import begin, load_average
from harness.results import report, save
from pool_bench.control import scenario_control
from pool_bench.floors import cleanup_floors
from pool_bench.idle import IDLE_WINDOW_S, scenario_idle
from pool_bench.lifecycle import scenario_boot, scenario_containment, scenario_recycle
from pool_bench.pools import WORKER_SETTINGS, cleanup_pools, running_pool
from pool_bench.start import BIG, START_SIZES, scenario_big, scenario_start_stop
from pool_bench.table import table
from pool_bench.task_loop import scenario_task_loop


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-1024", dest="big", action="store_false")
    parser.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--no-compile", dest="compile", action="store_false")
    parser.add_argument("--only", default="", help="comma-separated: start,big,s3,boot,s4,s5,s6,s7")
    parser.add_argument("--spawn", choices=("exec", "forkserver"), help="every pool's spawn mode")
    parser.add_argument("--containment", help="every pool's containment level")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    results, started = begin(args.runs, args.wait_idle, args.compile)
    only = set(filter(None, args.only.split(",")))
    for key in ("spawn", "containment"):
        if getattr(args, key) is not None:
            WORKER_SETTINGS[key] = getattr(args, key)
            results.notes.append(f"every pool: {key} = {getattr(args, key)}")

    def wanted(name: str) -> bool:
        return not only or name in only

    clock = time.monotonic()
    try:
        if wanted("start"):
            with running_pool(8):  # warm-up, discarded: page cache, pyc files
                pass
            sizes = START_SIZES[:2] if args.quick else START_SIZES
            scenario_start_stop(results, sizes, args.runs)
        if wanted("s3"):
            scenario_recycle(results, args.runs)
        if wanted("boot"):
            scenario_boot(results, args.runs)
        if wanted("s4"):
            scenario_containment(results, args.runs)
        if wanted("s5"):
            windows, window_s = (1, 2.0) if args.quick else (args.runs, IDLE_WINDOW_S)
            for driver in ("fork", "proc"):
                scenario_idle(results, driver, windows, window_s)
        if wanted("s6"):
            scenario_control(results, args.runs)
        if wanted("s7"):
            scenario_task_loop(results, args.runs)
        if wanted("big") and args.big and not args.quick:  # last: it loads the machine
            scenario_big(results)
        elif not args.big:
            results.notes.append(f"S1 N={BIG} skipped (--no-1024)")
    finally:
        cleanup_pools()
        cleanup_floors()
    results.data["load_average_after"] = load_average()
    results.data["wall_s"] = time.monotonic() - clock

    text = report(results, "Coretsia Worker benchmark", [table(results)])
    save(results, text, started)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up on TERM too
    sys.exit(main())
