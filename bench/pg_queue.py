"""The ``postgres`` task source's throughput beside the SQLite source and procrastinate.

Run it with ``.venv/bin/nox -s bench_pg`` (which installs the ``bench`` dependency group:
procrastinate), or ``python bench/pg_queue.py`` in an environment that has it. It starts
its own PostgreSQL server (the tests' helper, ``tests/support/pg_server.py``: initdb in a
temporary directory, a UNIX socket only, as ``nobody`` when run as root; ``fsync`` off on
both PostgreSQL sides alike), and drains ``--tasks`` (2,000) no-op tasks, enqueued before
the consumers start, with every side on that server or beside it:

* ``sqlite``: Coretsia's ``sqlite`` source (``bench/pipeline.py``'s Coretsia side);
* ``postgres``: Coretsia's ``postgres`` source, one pool of N workers;
* ``procrastinate``: N ``procrastinate worker --concurrency 1`` processes (one process per
  worker, as a pool has), each on the same server, a fresh database per drain;
* ``postgres-2-pools``: two pools (two roots, as two machines) of N/2 workers (at least
  1) on one queue, for each N of ``--sizes`` above 1.

for N = ``--sizes`` (1, 2, 4), ``--runs`` times (3), the sides' order rotating from run
to run. Each handler records ``<payload> <pid> <start> <end>`` itself
(``pipeline_app.run_noop``); tasks/s is records over first start to last end, as in
``bench/pipeline.py``. Results: a markdown table on stdout and
``bench/results/pg-queue-<timestamp>.{json,md}``; explained in ``docs/performance.md``.
Every wait is bounded; every process started here is killed by pid at the end, whatever
happens, and the server is stopped and removed.
"""

from __future__ import annotations

import argparse
import datetime
import signal
import sys
import time
from collections import defaultdict
from typing import Any

from harness import BENCH
from harness.machine import load_average, machine
from harness.results import Results, median, save

sys.path.insert(0, str(BENCH.parent / "tests" / "support"))  # the tests' server helper
from pg_server import PgServer, find_bindir
from queue_bench.pg_sides import coretsia_postgres, procrastinate
from queue_bench.roots import cleanup, log
from queue_bench.sides import drain

SIDES = ("sqlite", "postgres", "procrastinate", "postgres-2-pools")


def one(side: str, server: PgServer, workers: int, tasks: int) -> dict[str, Any] | None:
    """One drain of ``side`` with ``workers`` in all; None where the side has no such N."""
    if side == "sqlite":
        result = drain("coretsia", workers, tasks, "noop")
    elif side == "postgres":
        result = coretsia_postgres(server, workers, tasks)
    elif side == "procrastinate":
        result = procrastinate(server, workers, tasks)
    elif workers < 2:
        return None
    else:
        result = coretsia_postgres(server, workers // 2, tasks, pools=2)
    log(f"{side} N={workers}: {result['tasks_per_s']:.0f} tasks/s, lost {result['lost']}")
    return result


def table(samples: dict[str, list[dict[str, Any]]], sizes: list[int]) -> str:
    lines = [
        "| side | " + " | ".join(f"N = {n}" for n in sizes) + " |",
        "| --- |" + " --- |" * len(sizes),
    ]
    for side in SIDES:
        cells = []
        for n in sizes:
            runs = samples.get(f"{side}_n{n}", [])
            cells.append(f"{median([r['tasks_per_s'] for r in runs]):.0f}" if runs else "-")
        lines.append(f"| {side} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--sizes", default="1,2,4", help="worker counts (default 1,2,4)")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    if args.runs < 1 or args.tasks < 1 or min(sizes) < 1:
        parser.error("--runs, --tasks and every size must be at least 1")
    bindir = find_bindir()
    if bindir is None:
        parser.error("no PostgreSQL binaries (initdb, pg_ctl): install Debian's postgresql")

    import procrastinate as procrastinate_package

    started = datetime.datetime.now(datetime.timezone.utc)
    info = {**machine(), "procrastinate": procrastinate_package.__version__}
    results = Results(started.isoformat(timespec="seconds"), info, args.runs)
    results.data["load_average_before"] = load_average()
    samples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    clock = time.monotonic()
    server = PgServer(bindir)
    try:
        server.start()
        log("warm-up (discarded): 200 tasks on each side")
        for side in SIDES:
            one(side, server, 2, 200)
        for index in range(args.runs):
            order = SIDES[index % len(SIDES) :] + SIDES[: index % len(SIDES)]
            for n in sizes:
                for side in order:
                    result = one(side, server, n, args.tasks)
                    if result is not None:
                        samples[f"{side}_n{n}"].append(result)
    finally:
        cleanup()
        server.remove()
    results.data["throughput"] = dict(samples)
    results.data["load_average_after"] = load_average()
    results.data["wall_s"] = time.monotonic() - clock
    text = "\n".join(
        [
            f"# PostgreSQL queue benchmark, {results.started}",
            "",
            f"Machine: {info['cores']} cores, {info['memory_gib']} GiB, CPython {info['python']};"
            f" procrastinate {info['procrastinate']}. Commit {info['commit']}."
            f" {args.tasks} no-op tasks, median tasks/s of {args.runs} runs."
            f" Load average before: {results.data['load_average_before']}, after:"
            f" {results.data['load_average_after']}. Wall time: {results.data['wall_s']:.0f} s.",
            "",
            table(samples, sizes),
        ]
    )
    save(results, text, started, prefix="pg-queue-")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up on TERM too
    sys.exit(main())
