"""Control transport selection (seed 000): ``auto`` is ``unix`` where UNIX sockets exist
and the platform is not Windows, ``tcp`` otherwise; an explicit ``unix`` is honoured or
refused, never replaced by ``tcp``.

The resolver is tested against the facts it reads (``sys.platform``, ``socket.AF_UNIX``),
changed for the duration of a call, as the driver's is. ``start`` never gets to the
fallback: without UNIX sockets no driver can run either (the guardian's and the workers'
channels are UNIX socket pairs), so the driver is refused first. A socket path too long for
``sun_path`` is not among them: a real pool in a root that deep still runs on ``unix``
(the socket is bound through ``/proc/self/fd``), and the commands reach it.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pools
import pytest

from coretsia.supervisor.drivers import resolve_transport
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.vocabulary import Transport, TransportRequest

AUTO, UNIX, TCP = TransportRequest.AUTO, TransportRequest.UNIX, TransportRequest.TCP
UNAVAILABLE = None

EXPECTED: dict[str, dict[TransportRequest, Transport | None]] = {
    "posix": {AUTO: Transport.UNIX, UNIX: Transport.UNIX, TCP: Transport.TCP},
    "no-unix-sockets": {AUTO: Transport.TCP, UNIX: UNAVAILABLE, TCP: Transport.TCP},
    "windows": {AUTO: Transport.TCP, UNIX: UNAVAILABLE, TCP: Transport.TCP},
}


@pytest.mark.parametrize("requested", [AUTO, UNIX, TCP])
@pytest.mark.parametrize("platform", sorted(EXPECTED))
def test_resolution(
    monkeypatch: pytest.MonkeyPatch, platform: str, requested: TransportRequest
) -> None:
    """``auto`` falls back to ``tcp`` without UNIX sockets; ``unix`` is then refused."""
    expected = EXPECTED[platform][requested]
    with monkeypatch.context() as patched:
        if platform == "no-unix-sockets":
            patched.delattr(socket, "AF_UNIX")
        elif platform == "windows":
            patched.setattr(sys, "platform", "win32")
        try:
            resolved: Transport | WorkerConfigError = resolve_transport(requested)
        except WorkerConfigError as exc:
            resolved = exc
    if expected is UNAVAILABLE:
        assert isinstance(resolved, WorkerConfigError)
        assert (resolved.key, resolved.rule) == ("worker.control.transport", ConfigRule.UNAVAILABLE)
    else:
        assert resolved is expected


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
