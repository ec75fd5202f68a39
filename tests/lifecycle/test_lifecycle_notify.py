"""systemd notification against a real datagram socket: READY, STATUS, STOPPING, WATCHDOG."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from pools import Supervisors, cli


def _collect(sock: socket.socket, until: bytes, limit: int = 200) -> list[bytes]:
    messages = []
    for _ in range(limit):
        message = sock.recv(4096)
        messages.append(message)
        if until in message:
            return messages
    raise AssertionError("notification not received")


@pytest.mark.parametrize("address", ["path", "abstract"])
def test_ready_status_stopping_in_order(root: Path, supervisors: Supervisors, address: str) -> None:
    """READY=1 only when running, STOPPING=1 at shutdown, watchdog fed, nothing leaked."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.settimeout(30)
    if address == "path":
        target = str(root / "notify.sock")
        sock.bind(target)
    else:
        name = f"coretsia-test-{os.getpid()}-{root.name}"
        sock.bind(b"\0" + name.encode())
        target = "@" + name
    env = dict(os.environ, NOTIFY_SOCKET=target, WATCHDOG_USEC="200000")
    with sock:
        supervisor = supervisors(root, env=env)
        supervisor.wait_running()
        before_ready = _collect(sock, b"READY=1")
        ready = before_ready[-1].split(b"\n")
        assert b"STATUS=running: 2/2 workers ready" in ready
        assert _collect(sock, b"WATCHDOG=1")  # fed from the event loop
        for worker in [*supervisor.workers(), supervisor.guardian()]:
            assert "NOTIFY_SOCKET" not in worker.environ()
            assert "WATCHDOG_USEC" not in worker.environ()
        assert cli(root, "stop").returncode == 0
        stopping = _collect(sock, b"STOPPING=1")
        assert all(b"READY=1" not in m for m in stopping)
        assert supervisor.finish() == 0
    assert not any(b"READY=1" in m for m in before_ready[:-1])


def test_no_notify_socket_is_silent(root: Path, supervisors: Supervisors) -> None:
    """Without NOTIFY_SOCKET nothing is sent and nothing is printed."""
    env = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}
    supervisor = supervisors(root, env=env)
    supervisor.wait_running()
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0
    assert supervisor.error == ""
