"""The client asks the kernel who listens on a UNIX socket, not only who owns the file.

A socket file can be ours while the process that listens on it is not (a bound socket
handed to another user's process): ``SO_PEERCRED`` tells. These tests need root, to run
a listener as ``nobody``, and Linux, where ``SO_PEERCRED`` is.
"""

from __future__ import annotations

import os
import pwd
import secrets
import socket
import sys
from pathlib import Path

import pytest
from forged_server import ForgedServer
from lock_holder import HoldLock

from coretsia.worker_protocol.client import ControlClient
from coretsia.worker_protocol.exceptions import WorkerCommunicationFailedError
from coretsia.worker_protocol.lifecycle import LOCATOR_PATH, LOCK_PATH
from coretsia.worker_protocol.locator import Locator, encode_locator
from coretsia.worker_protocol.vocabulary import Transport

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_PEERCRED is Linux's"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to listen as another user"),
]

SOCKET = "var/tmp/worker.sock"


def _publish(root: Path, hold_lock: HoldLock, credential: str) -> None:
    """A pool's lock and locator, as the socket at ``SOCKET`` would have them."""
    hold_lock(str(root / LOCK_PATH))
    locator = Locator(Transport.UNIX, credential, 300, 100, path=SOCKET)
    (root / LOCATOR_PATH).write_bytes(encode_locator(locator))
    os.chmod(root / LOCATOR_PATH, 0o600)


def _bound(root: Path) -> socket.socket:
    """A socket bound at ``SOCKET`` by us (the file is ours, mode 0600), not listening."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(root / SOCKET))
    os.chmod(root / SOCKET, 0o600)
    return sock


def test_socket_file_of_another_user(runtime_root: Path, hold_lock: HoldLock) -> None:
    """A socket at the locator's path owned by another uid is refused before connecting."""
    nobody = pwd.getpwnam("nobody")
    _publish(runtime_root, hold_lock, secrets.token_hex(32))
    with _bound(runtime_root) as listener:
        os.chown(runtime_root / SOCKET, nobody.pw_uid, nobody.pw_gid)
        listener.listen(1)
        listener.settimeout(0)
        with pytest.raises(WorkerCommunicationFailedError):
            ControlClient(runtime_root, timeout=2).status()
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody ever connected


@pytest.mark.parametrize("as_nobody", [True, False], ids=["nobody", "us"])
def test_listener_of_another_user(runtime_root: Path, hold_lock: HoldLock, as_nobody: bool) -> None:
    """Our socket file listened on by a process of another user that even holds the
    credential is refused, and hears nothing; the same listener running as us answers
    (so it is the listener's user that was refused, nothing else)."""
    credential = secrets.token_hex(32)
    _publish(runtime_root, hold_lock, credential)
    with _bound(runtime_root) as sock:
        fd = sock.fileno()
        drop = ["--as-nobody"] if as_nobody else []
        server = ForgedServer(
            "--fd", str(fd), *drop, f"honest:{credential}:unix:{SOCKET}", pass_fds=[fd]
        )
    try:
        assert (server.uid != 0) is as_nobody
        if as_nobody:
            with pytest.raises(WorkerCommunicationFailedError):
                ControlClient(runtime_root, timeout=5).status()
        else:
            assert ControlClient(runtime_root, timeout=5).status().summary.worker_count == 4
        (record,) = server.records()
    finally:
        server.close()
    assert (record["received"] == "") is as_nobody
