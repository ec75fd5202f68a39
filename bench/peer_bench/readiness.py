"""One readiness mechanism for every side: a datagram to ``ready.sock``, stamped on arrival.

The socket is bound in the side's project root before it launches; every worker sends one
datagram to the relative path ``ready.sock`` (its working directory is the root). The
kernel attaches the sender's pid (``SO_PASSCRED``), so the minimal worker need not say
who it is, and a respawned worker is told from the one it replaces. A thread receives
and stamps each datagram at once: a unix datagram socket queues only
``net.unix.max_dgram_qlen`` (10 here) messages, and a sender blocks past that, so an
unread socket would slow the very start it measures.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from pathlib import Path

READY_NAME = "ready.sock"
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
_STOP = b"stop-listening"


class Readiness:
    """The datagrams of one side's workers: ``(monotonic arrival, sender pid)``, in order."""

    def __init__(self, root: Path) -> None:
        self.address = str(root / READY_NAME)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(self.address)
        self.events: list[tuple[float, int]] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._receive, name="readiness", daemon=True)
        self._thread.start()

    def _receive(self) -> None:
        space = socket.CMSG_SPACE(_UCRED.size)
        while True:
            data, ancillary, _, _ = self.sock.recvmsg(64, space)
            stamp = time.monotonic()
            pid = next(
                (
                    _UCRED.unpack(payload[: _UCRED.size])[0]
                    for level, kind, payload in ancillary
                    if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS
                ),
                0,
            )
            if data == _STOP and pid == os.getpid():
                return
            with self._changed:
                self.events.append((stamp, pid))
                self._changed.notify_all()

    def wait_count(self, count: int, deadline: float) -> bool:
        """Block until ``count`` datagrams arrived in all (or the deadline): whether they did."""
        with self._changed:
            return self._changed.wait_for(
                lambda: len(self.events) >= count, max(0.0, deadline - time.monotonic())
            )

    def pids(self) -> list[int]:
        with self._changed:
            return [pid for _, pid in self.events]

    def close(self) -> None:
        """Stop the thread (a datagram from ourselves) and close the socket."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as own:
            own.sendto(_STOP, self.address)
        self._thread.join(10)
        self.sock.close()
