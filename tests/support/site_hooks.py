"""A ``sitecustomize`` for the real processes a test starts: to watch them or fault them.

Production code carries no test hooks. A test that must see inside a real guardian or
proc host (which pids it signals, what it spawns) or make one misbehave (claim another
version) writes a ``sitecustomize.py`` into a directory of its own and puts that
directory first on ``PYTHONPATH``: every interpreter started with the environment runs it
before anything else, and the daemons pass the environment down the tree. The hook
tells the processes apart by ``sys.orig_argv`` (``-m coretsia.guardian``, ...).
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from pathlib import Path


def site_env(directory: Path, code: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Write ``code`` as ``directory/sitecustomize.py``; return an environment that runs it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(textwrap.dedent(code))
    return pythonpath_first(directory, env)


def pythonpath_first(directory: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (default: ours) with ``directory`` first on ``PYTHONPATH``, so its
    ``sitecustomize`` runs in every interpreter started with it (also ``faults``' seam)."""
    result = dict(os.environ if env is None else env)
    result["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(directory), result.get("PYTHONPATH")) if part
    )
    return result


SIGNAL_LOG_ENV = "CORETSIA_TEST_SIGNAL_LOG"

SIGNAL_LOG = """
import os, sys
if "coretsia.guardian" in sys.orig_argv or "coretsia.proc_host" in sys.orig_argv:
    def _logged(real):
        def send(pid, sig):
            with open(os.environ["CORETSIA_TEST_SIGNAL_LOG"], "a") as log:
                log.write(f"{pid} {int(sig)}\\n")
            return real(pid, sig)
        return send
    os.kill = _logged(os.kill)  # psutil's send_signal ends here
    os.killpg = _logged(os.killpg)
"""
"""Records every ``kill`` and ``killpg`` of the guardian and the proc host in the file
named by ``CORETSIA_TEST_SIGNAL_LOG``."""


def signals_sent(log: Path) -> list[tuple[int, int]]:
    """``(pid or group, signal)`` for each call :data:`SIGNAL_LOG` recorded, in order."""
    if not log.exists():
        return []
    return [
        (int(pid), int(sig)) for pid, sig in (line.split() for line in log.read_text().splitlines())
    ]
