"""The container path, run for real: ``nox -s container`` (``bench/container.py``).

It finds or starts a Docker engine, makes a local base image where no image registry is
reachable, builds ``docs/deploy/Dockerfile`` with the commands the deployment docs show,
and checks the pool inside: PID 1, the probes through ``docker exec``, a graceful
``docker stop``, a SIGKILL of the real supervisor, and ``docker kill``. Like the
benchmarks, it runs as a script from ``bench/`` and imports this package from
``sys.path[0]``; nothing here imports the test suite's helpers.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository root: the build context of ``docs/deploy/Dockerfile``."""
