"""A framed channel that can carry descriptors, and the one async framed read loop.

Every trio end of every channel reads through :meth:`FramedChannel.receive`: the
supervisor's control server, its guardian link and its workers' channels, the guardian's
link to its supervisor, its proc host's and its fork server's (from the protocol
distribution, so neither daemon imports the other). It moves bytes, descriptors and
senders only: which frames may travel, and in what order, is the conversation's business
(:mod:`coretsia.worker_protocol.conversation_engine`'s engine, one table per channel),
which :meth:`FramedChannel.receive` feeds until it has a frame. (The ends that load no
event loop read with the engine's one blocking loop,
:func:`~coretsia.worker_protocol.conversation_engine.receive_sync`.)

A ``spawn`` frame carries the worker's end of its worker channel as ``SCM_RIGHTS``
ancillary data, so the supervisor keeps reading readiness directly from each worker while
the guardian alone owns the processes. Received descriptors queue up in arrival order;
the frame that announced them takes them with :meth:`FramedChannel.take_fd`.
"""

from __future__ import annotations

import array
import collections
import os
import socket
from collections.abc import Sequence
from typing import Final, Protocol, TypeVar

import trio

from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.internal.runtime.ancillary import (
    CREDENTIALS_SPACE,
    passed_fds,
    sender_pid,
)

_MAX_FDS_PER_MESSAGE: Final = 8
_RECV_BYTES: Final = 65536

F = TypeVar("F", covariant=True)


class FrameReader(Protocol[F]):
    """What :meth:`FramedChannel.receive` feeds: a sans-IO reader of frames."""

    def receive_data(self, data: bytes) -> None:
        """Buffer bytes read from the peer (``b""`` at the end of the stream)."""

    def next_event(self) -> F | Need:
        """The next frame, or what is needed first."""


class FramedChannel:
    """One end of a UNIX stream socket speaking newline frames plus descriptors."""

    def __init__(self, sock: trio.socket.SocketType, *, ancillary: bool = True) -> None:
        """``ancillary=False`` for a peer that may not pass descriptors (a control
        client): the kernel then discards any it sends, so none can pile up here."""
        self._sock = sock
        self._ancillary = (
            socket.CMSG_SPACE(_MAX_FDS_PER_MESSAGE * 4) + CREDENTIALS_SPACE if ancillary else 0
        )
        self._fds: collections.deque[int] = collections.deque()
        self._send_lock = trio.Lock()
        self.sender: int | None = None
        """The pid that sent the last message read, from its ``SCM_CREDENTIALS`` (a
        ``SOCK_SEQPACKET`` channel with ``SO_PASSCRED``, where a message is a frame)."""

    @classmethod
    def from_fd(cls, fd: int) -> FramedChannel:
        """Adopt an inherited descriptor (the guardian's end).

        An inherited descriptor is inheritable by definition; it must not pass on to the
        workers the guardian spawns, so it becomes close-on-exec first.
        """
        os.set_inheritable(fd, False)  # noqa: FBT003 - positional-only in the stdlib
        return cls(trio.socket.from_stdlib_socket(socket.socket(fileno=fd)))

    async def send(self, data: bytes, fds: Sequence[int] = ()) -> None:
        """Send one encoded frame; ``fds`` ride on its first byte."""
        async with self._send_lock:
            view = memoryview(data)
            if fds:
                ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
                sent = await self._sock.sendmsg([view], ancillary)
                view = view[sent:]
            while view:
                sent = await self._sock.send(view)
                view = view[sent:]

    async def receive(self, conversation: FrameReader[F]) -> F | None:
        """``conversation``'s next frame, read as it needs; None once the peer closed.

        A broken stream (reset, or closed under us) ends like a closed one, so the
        conversation sees one kind of end; whatever it raises (a broken rule) goes to the
        caller.
        """
        while (event := conversation.next_event()) is Need.DATA:
            try:
                data = await self._receive_some()
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            conversation.receive_data(data)
        return None if isinstance(event, Need) else event

    async def _receive_some(self) -> bytes:
        """What the socket has (``b""`` at its end); descriptors with it queue up."""
        flags = getattr(socket, "MSG_CMSG_CLOEXEC", 0)
        data, ancillary, _flags, _addr = await self._sock.recvmsg(
            _RECV_BYTES, self._ancillary, flags
        )
        self.sender = sender_pid(ancillary)
        self._fds.extend(passed_fds(ancillary))
        return data

    def take_fd(self) -> int | None:
        """The oldest received descriptor not yet taken, if any."""
        return self._fds.popleft() if self._fds else None

    def close(self) -> None:
        """Close the socket and every descriptor received but never taken."""
        while self._fds:
            os.close(self._fds.popleft())
        self._sock.close()
