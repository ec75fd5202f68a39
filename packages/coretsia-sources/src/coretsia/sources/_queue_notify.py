"""Wake-ups without polling: ``AF_UNIX`` datagram pokes to the sockets in ``<db>.notify``.

Why this shape, and why a poke can never be lost to the order of things, is told in
:mod:`coretsia.sources.sqlite_queue` ("Waiting without polling"). Here: the sending side
(:class:`Notifier`, one per queue) and the waiting side (:class:`Waiter`, one per idle
worker). Pokes are only an optimisation: every failure here is silent, and a waiter
still looks at the queue every few seconds.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import socket
import time
from typing import Final

from coretsia.sources._private_files import make_private_dirs

NOTIFY_SUFFIX: Final = ".notify"
"""``<db>`` + this: the directory of the waiters' sockets."""
_SOCKET_SUFFIX: Final = ".sock"


class Notifier:
    """Pokes every waiter of one database; its sending socket is made on first use."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._sender: socket.socket | None = None

    def notify(self) -> None:
        """Poke every waiting worker; never raises (the data is committed already).

        A socket that refuses the poke has no process behind it (its owner died without
        removing it): remove it. A full socket already has a poke waiting: skip it.
        """
        family = getattr(socket, "AF_UNIX", None)
        if family is None:
            return
        try:
            names = os.listdir(self.directory)
        except OSError:
            return  # no directory: nobody has ever waited
        try:
            if self._sender is None:
                self._sender = socket.socket(family, socket.SOCK_DGRAM)
                self._sender.settimeout(0.0)  # non-blocking
        except OSError:
            return
        for name in names:
            if not name.endswith(_SOCKET_SUFFIX):
                continue
            target = os.path.join(self.directory, name)
            try:
                self._sender.sendto(b"\0", target)
            except OSError as error:
                if error.errno == errno.ECONNREFUSED:
                    with contextlib.suppress(OSError):
                        os.unlink(target)

    def close(self) -> None:
        """Close the sending socket, if any; idempotent."""
        if self._sender is not None:
            self._sender.close()
            self._sender = None


class Waiter:
    """Sleeps until the queue is poked, ``stop_fileno`` becomes readable, or a timeout.

    Binds its socket at construction, so create it *before* the first look at the queue
    (:mod:`coretsia.sources.sqlite_queue` tells why that order loses no wake-up). ``notifying`` is
    False when no socket could be bound; :meth:`wait` then wakes only for stop or timeout,
    and the caller should use a short timeout.
    """

    def __init__(self, notify_dir: str, stop_fileno: int | None = None) -> None:
        self._dir = notify_dir
        self._stop_fileno = stop_fileno
        self._sock: socket.socket | None = None
        self._sock_path: str | None = None
        # poll(), not epoll: two descriptors, and poll accepts any kind of descriptor.
        self._selector: selectors.BaseSelector = (
            selectors.PollSelector()
            if hasattr(selectors, "PollSelector")
            else selectors.SelectSelector()
        )
        if stop_fileno is not None:
            self._selector.register(stop_fileno, selectors.EVENT_READ, "stop")
        self._bind()

    @property
    def notifying(self) -> bool:
        """True while pokes can reach this waiter."""
        return self._sock is not None

    def _bind(self) -> None:
        """Bind a fresh socket under a never-reused name; stay silent if we cannot."""
        family = getattr(socket, "AF_UNIX", None)
        if family is None:
            return
        path = os.path.join(self._dir, f"{os.getpid()}-{os.urandom(4).hex()}{_SOCKET_SUFFIX}")
        try:
            make_private_dirs(self._dir)
            sock = socket.socket(family, socket.SOCK_DGRAM)
        except OSError:
            return
        try:
            sock.bind(path)
            sock.settimeout(0.0)  # non-blocking
        except OSError:  # too long a path, read-only directory...: fall back to re-checks
            sock.close()
            return
        self._sock, self._sock_path = sock, path
        self._selector.register(sock, selectors.EVENT_READ, "poke")

    def _unbind(self) -> None:
        if self._sock is None:
            return
        self._selector.unregister(self._sock)
        self._sock.close()
        if self._sock_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._sock_path)
        self._sock = self._sock_path = None

    def wait(self, timeout: float) -> bool:
        """Sleep until poked, stop or ``timeout`` seconds; True when stop is readable."""
        if not self._selector.get_map():
            time.sleep(timeout)  # nothing to wait on: no socket and no stop descriptor
            return False
        events = self._selector.select(timeout)
        stopping = any(key.data == "stop" for key, _ in events)
        if self._sock is not None:
            self._drain(self._sock)
            if not events and self._sock_path and not os.path.exists(self._sock_path):
                self._unbind()  # our file was removed by hand: rebind so pokes reach us
                self._bind()
        elif not events:
            self._bind()  # maybe the directory is usable now
        return stopping

    @staticmethod
    def _drain(sock: socket.socket) -> None:
        """Read every queued poke: one look at the queue answers all of them."""
        while True:
            try:
                sock.recv(64)
            except OSError:  # BlockingIOError: empty
                return

    def close(self) -> None:
        """Remove the socket (so enqueuers stop poking it) and free the selector."""
        self._unbind()
        self._selector.close()
