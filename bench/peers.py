"""Coretsia Worker beside its peers: the same idle workers under each supervisor, one run.

Run it with ``.venv/bin/nox -s bench_peers`` (which installs supervisord, circus,
gunicorn and honcho from the locked ``peers`` group), or ``python bench/peers.py`` in an
environment that has them. Every side runs the same worker, a fresh interpreter that
sends one datagram to ``ready.sock`` in its root and idles (gunicorn's are forks of its
arbiter, its only way); readiness is the datagram's arrival, for every side. Sides:
the floor (bare ``subprocess.Popen`` of N workers), supervisord, circus, gunicorn,
honcho, and Coretsia in each ``--spawn`` mode its configuration accepts (others: n/a):
``exec``, ``forkserver``, and ``preload`` (the fork server with the application's modules
preloaded, as gunicorn's arbiter has them before it forks).

Figures (medians of ``--runs``): launch to all N ready (``--sizes``, default 8, 64, 256)
and to the first; at N = 64 the graceful stop (request until every process ended) and
the pool's total PSS; respawn after a worker dies (SIGKILL of a worker until its
replacement's datagram; Coretsia: the recycle, S3); workers alive 3 s after the
supervisor's SIGKILL (N = 64, once); ``status`` as a process; the quick start's 128 task
workers to ``running`` against 128 bare interpreters. Every process a scenario started
is killed by pid at its end, and the run fails if any is left.

Options: ``--runs`` (3), ``--quick`` (N = 8 and 64 only), ``--sizes 8,64``,
``--spawn exec,forkserver,preload``, ``--sides floor,coretsia`` (some of floor, supervisord,
circus, gunicorn, honcho, coretsia), ``--only`` (some of start, control, containment,
quickstart), ``--no-compile``, ``--wait-idle SECONDS``. Results go to
``bench/results/peers-<timestamp>.{json,md}``; ``docs/performance.md`` reads them.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from harness.machine import begin, load_average
from harness.results import report, save
from peer_bench.running import cleanup_all
from peer_bench.scenarios import (
    scenario_containment,
    scenario_control,
    scenario_quickstart,
    scenario_start,
)
from peer_bench.sides import PEERS, sides
from peer_bench.table import table
from pool_bench.pools import cleanup_pools
from pool_bench.start import START_SIZES

SCENARIOS = ("start", "control", "containment", "quickstart")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default="")
    parser.add_argument("--spawn", default="exec,forkserver,preload")
    parser.add_argument("--sides", default=",".join([*PEERS, "coretsia"]))
    parser.add_argument("--only", default="", help="comma-separated: " + ",".join(SCENARIOS))
    parser.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--no-compile", dest="compile", action="store_false")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    sizes = START_SIZES[:2] if args.quick else START_SIZES
    args.sizes = tuple(int(n) for n in args.sizes.split(",")) if args.sizes else sizes
    args.only = set(filter(None, args.only.split(","))) or set(SCENARIOS)
    if args.only - set(SCENARIOS):
        parser.error(f"--only takes some of {','.join(SCENARIOS)}")
    args.sides = args.sides.split(",")
    if set(args.sides) - {*PEERS, "coretsia"}:
        parser.error(f"--sides takes some of {','.join(PEERS)},coretsia")
    return args


def main() -> int:
    args = _arguments()
    results, started = begin(args.runs, args.wait_idle, args.compile)
    measured, missing = sides(args.sides, args.spawn.split(","))
    modes = [m for m in args.spawn.split(",") if m not in missing and "coretsia" in args.sides]
    for mode in missing:
        results.notes.append(f"spawn = {mode!r}: not accepted by this Coretsia (n/a)")
    clock = time.monotonic()
    try:
        for run in range(args.runs):
            if "start" in args.only:
                scenario_start(results, measured, args.sizes, run)
            if "control" in args.only:
                scenario_control(results, measured, run)
            if "quickstart" in args.only:
                scenario_quickstart(results, modes, run)
        if "containment" in args.only:
            scenario_containment(results, measured)
    finally:
        cleanup_all()
        cleanup_pools()
    results.data["load_average_after"] = load_average()
    results.data["wall_s"] = time.monotonic() - clock
    sides_table = table(results, [s.name for s in measured], missing, args.sizes)
    text = report(results, "Coretsia Worker beside its peers", [sides_table])
    save(results, text, started, prefix="peers-")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up on TERM too
    sys.exit(main())
