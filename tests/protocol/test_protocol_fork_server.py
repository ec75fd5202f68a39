"""The fork-server channel's answer: whose pid a ``STARTED`` datagram carries.

Real socket pairs: the pid is the kernel's, from ``SCM_CREDENTIALS``, never the text.
"""

from __future__ import annotations

import os
import socket

from coretsia.worker_protocol.internal.fork_server import (
    CREDENTIALS_SPACE,
    STARTED,
    sender_pid,
)


def _received(*, passcred: bool) -> list[tuple[int, int, bytes]]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, theirs:
        if passcred:
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        theirs.sendall(STARTED)
        data, ancillary, _flags, _addr = ours.recvmsg(16, CREDENTIALS_SPACE)
    assert data == STARTED
    return ancillary


def test_the_sender_is_read_from_the_credentials() -> None:
    assert sender_pid(_received(passcred=True)) == os.getpid()


def test_no_credentials_no_pid() -> None:
    """Without ``SO_PASSCRED`` the datagram names nobody: no worker, not a guessed pid."""
    assert _received(passcred=False) == []
    assert sender_pid([]) is None
    rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS, b"\0\0\0\0")
    assert sender_pid([rights]) is None
