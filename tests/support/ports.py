"""TCP ports for tests that must name one in a configuration before anything listens on it.

Imported by test modules as ``ports`` (``tests/support`` is on pytest's pythonpath).

A port the kernel picks (``bind(("127.0.0.1", 0))``) and the probe releases at once may be
handed out again before the pool binds it: to an outgoing connection, or to the same probe
in another pytest-xdist worker. So each worker takes ports from a block of its own below the
kernel's ephemeral range (``/proc/sys/net/ipv4/ip_local_port_range``, 32768 and up by
default), which the kernel never picks, and steps through it, so a test never gets the
port an earlier test of the same worker may still hold in TIME_WAIT.
"""

from __future__ import annotations

import itertools
import os
import socket

BASE = 20000
"""The first port of the first worker's block."""
BLOCK = 500
"""Ports per worker: up to 24 workers fit below 32768."""


def _worker_index() -> int:
    """This pytest-xdist worker's number (``gw3`` is 3); 0 without xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(worker.removeprefix("gw"))


_offsets = itertools.cycle(range(BLOCK))


def free_port() -> int:
    """A port of this worker's block that nothing is bound to now."""
    first = BASE + _worker_index() * BLOCK
    for _ in range(BLOCK):
        port = first + next(_offsets)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {first}..{first + BLOCK - 1}")
