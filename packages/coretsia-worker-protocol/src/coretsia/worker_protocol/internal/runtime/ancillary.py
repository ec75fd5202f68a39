"""What rides beside a message on a UNIX socket: descriptors (``SCM_RIGHTS``) and who sent
it, in the kernel's word (``SCM_CREDENTIALS`` on a channel with ``SO_PASSCRED``, the fork
server's datagrams), never a pid the peer reports.

Read with ``recvmsg`` itself: ``socket.recv_fds`` ignores its ``flags`` (CPython 3.10 to
3.13), so neither ``MSG_CMSG_CLOEXEC`` nor ``MSG_DONTWAIT`` would reach the kernel."""

from __future__ import annotations

import array
import socket
import struct
from typing import Final

_UCRED: Final = struct.Struct("iII")
"""``struct ucred``: pid, uid, gid."""

CREDENTIALS_SPACE: Final = socket.CMSG_SPACE(_UCRED.size)
"""Room for the ancillary data of a datagram received with ``SO_PASSCRED``."""


def sender_pid(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    """The sender's pid from a datagram's ``SCM_CREDENTIALS``; None without them (or 0: a
    sender the receiver's PID namespace cannot see)."""
    for level, kind, data in ancillary:
        credentials = level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS
        if credentials and len(data) >= _UCRED.size:
            pid: int = _UCRED.unpack_from(data)[0]
            return pid if pid > 0 else None
    return None


def passed_fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    """The descriptors a message carried (``SCM_RIGHTS``), in order."""
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return list(fds)
