"""What both benchmarks share: the machine, the result files, process lookups, bytecode.

``run.py`` (the pool benchmark, ``nox -s bench``) and ``pipeline.py`` (the queue
benchmark, ``nox -s bench_queue``) run as scripts from this directory, so this package is
imported from ``sys.path[0]``; nothing here imports the test suite's helpers (the tests may
change them freely).
"""

from __future__ import annotations

from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
"""The ``bench/`` directory: the scripts, the pools' applications and ``results/``."""
