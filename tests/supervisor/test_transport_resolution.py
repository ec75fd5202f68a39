"""Control transport selection (seed 000) in real supervisors: ``auto`` is ``unix`` where
UNIX sockets exist and the platform is not Windows, ``tcp`` otherwise.

The resolver itself is tested against the facts it reads in ``test_drivers.py``, beside
the driver's. ``start`` never gets to the fallback: without UNIX sockets no driver can
run either (the guardian's and the workers' channels are UNIX socket pairs), so the
driver is refused first. A socket path too long for ``sun_path`` is not among the facts:
a real pool in a root that deep still runs on ``unix`` (the socket is bound through
``/proc/self/fd``), and the commands reach it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pools
import pytest

WITHOUT_UNIX_SOCKETS = """
import socket
del socket.AF_UNIX
from coretsia.supervisor.cli import main
main()
"""
"""The real ``coretsia-supervisor`` in a process whose platform has no UNIX sockets."""


@pytest.mark.parametrize("transport", ["auto", "unix", "tcp"])
def test_start_without_unix_sockets_refuses_the_driver(root: Path, transport: str) -> None:
    """Whatever the transport, no driver runs without UNIX sockets (their channels are
    socket pairs): a configuration error naming the driver, before anything is written,
    never ``start``'s catch-all."""
    pools.write_root(root, tables={"worker.control": {"transport": transport}})
    pools.assert_start_refused(
        root, "worker.driver", "unavailable", command=(sys.executable, "-c", WITHOUT_UNIX_SOCKETS)
    )


@pytest.fixture
def deep_root(short_root: Path) -> Iterator[Path]:
    """A root whose control socket path is longer than ``sun_path`` (108 bytes on Linux)."""
    deep = short_root / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    assert len(str(deep / "var/tmp/worker.sock")) > 108
    yield pools.write_root(deep, workers=1)
    pools.assert_none_left(deep)


def test_auto_stays_unix_in_a_root_too_deep_for_sun_path(
    deep_root: Path, supervisors: pools.Supervisors
) -> None:
    """``auto`` is ``unix`` whatever the root's depth, and status and stop reach it."""
    supervisor = supervisors.running(deep_root)
    assert "control unix" in supervisor.summary
    status = pools.cli(deep_root, "status", "--json")
    assert json.loads(status.stdout)["control_transport"] == "unix", status.stderr
    state = json.loads((deep_root / "var/tmp/worker.state.json").read_text())
    assert (state["control_transport_requested"], state["control_transport"]) == ("auto", "unix")
    assert pools.cli(deep_root, "stop").returncode == 0
    assert supervisor.finish() == 0
