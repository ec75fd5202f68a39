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
import socket
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from coretsia.worker_protocol.internal.guardian import Exited, Spawned


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


class _Spawning(Protocol):
    def spawn(self, slot: int, code: str) -> socket.socket: ...
    def receive(self) -> object: ...


def quick_and_slow_workers(
    peer: _Spawning,
) -> tuple[list[socket.socket], dict[int, int], dict[int, str]]:
    """Through a guardian or proc host, spawn slot 0 (exits at once) and slot 1 (sleeps);
    return once both run and slot 0 was reaped: channels, pids and exit kinds by slot.

    What the signal-safety tests of both daemons need: one pid that must never be
    signalled again (reaped) beside one that may be.
    """
    channels = [peer.spawn(0, "pass"), peer.spawn(1, "import time; time.sleep(60)")]
    pids: dict[int, int] = {}
    exited: dict[int, str] = {}
    while len(pids) < 2 or 0 not in exited:
        frame = peer.receive()
        if isinstance(frame, Spawned):
            pids[frame.slot] = frame.pid
        elif isinstance(frame, Exited):
            exited[frame.slot] = frame.exit_kind
        else:
            raise AssertionError(frame)
    return channels, pids, exited
