"""The control server: ``status``, ``health`` and ``stop`` for holders of the credential.

Security and robustness rules:

* The listener is private: a UNIX socket created under the supervisor's umask 077 and
  verified 0600 after ``bind`` (no window where another user could connect), or TCP on
  exactly 127.0.0.1.
* A session must go through the handshake and deliver its request within
  :data:`READ_DEADLINE_S`. What may be said and when (its size, the proofs of both ends,
  one answer or a stop's progress, each answer sealed) is the sans-IO
  :class:`~coretsia.worker_protocol.control_conversation.ServerConversation`'s to judge;
  this module only moves bytes. The credential never crosses the socket: the server
  proves it holds it first, then the client does. A malformed request, a wrong proof or
  a frame of protocol version 1 gets no answer: the connection is closed silently, and
  counted in a rate-limited ``control.refused`` line (:mod:`coretsia.supervisor.daemon.refusals`)
  by cause, so a flood cannot drown the pool's real events.
* At most :data:`MAX_PENDING` sessions may be waiting for their request at once; when a
  new connection arrives at the cap, the oldest waiting one is dropped. A flood of idle
  connections therefore delays a real ``status`` by at most one round trip, never
  indefinitely.
* A client that disconnects at any point affects nothing but its own session.
"""

from __future__ import annotations

import collections
import contextlib
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Final, Protocol

import trio

from coretsia.supervisor.daemon.refusals import RefusalCause, RefusalLog
from coretsia.supervisor.shared.telemetry import NO_TELEMETRY, Telemetry
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control import ControlRequest, ControlResponse
from coretsia.worker_protocol.control_conversation import (
    CredentialRefusedError,
    ServerConversation,
)
from coretsia.worker_protocol.exceptions import ProtocolError, WorkerLifecycleFailedError
from coretsia.worker_protocol.internal.runtime.channel import FramedChannel
from coretsia.worker_protocol.vocabulary import ControlCommand, Transport

READ_DEADLINE_S: Final = 2.0
"""How long a connection may take to go through the handshake and send its request."""

MAX_PENDING: Final = 32
"""Most connections waiting for their request line at once."""

_SUN_PATH_MAX: Final = 100
_BACKLOG: Final = 256


class ControlHandler(Protocol):
    """What the server asks of the supervisor."""

    def answer(self, command: ControlCommand) -> ControlResponse:
        """The immediate answer to ``status`` or ``health``."""

    def subscribe_stop(self) -> trio.MemoryReceiveChannel[ControlResponse]:
        """Request shutdown; the channel yields progress, then one terminal answer."""


class ControlServer:
    """A bound listener plus the sessions it serves.

    ``address`` is the endpoint as the locator names it (the root-relative socket path,
    or ``127.0.0.1:<port>``): the handshake's proofs are bound to it.
    """

    def __init__(
        self,
        listener: trio.socket.SocketType,
        socket_path: Path | None,
        transport: Transport,
        address: str,
    ) -> None:
        self._listener = listener
        self._socket_path = socket_path
        self._transport = transport
        self._address = address
        self._pending: collections.OrderedDict[int, trio.CancelScope] = collections.OrderedDict()
        self._sessions = 0
        self._idle = trio.Event()
        self._idle.set()
        self._refusals = RefusalLog()

    @classmethod
    async def open(
        cls, transport: Transport, root: Path, socket_path: str, port: int
    ) -> ControlServer:
        """The listener of ``transport``: the socket at ``socket_path`` under ``root``, or
        TCP ``port``."""
        if transport is Transport.UNIX:
            return await cls.open_unix(root / socket_path, socket_path)
        return await cls.open_tcp(port)

    @classmethod
    async def open_unix(cls, path: Path, address: str) -> ControlServer:
        """Bind a UNIX socket at ``path`` (replacing a stale one; the lock is ours);
        ``address`` is the path as the locator names it."""
        sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # A stale socket goes; a directory there cannot, and fails the start like a bind.
            path.unlink(missing_ok=True)
            if len(str(path)) > _SUN_PATH_MAX:
                await _bind_long_path(sock, path)
            else:
                await sock.bind(str(path))
            # Born 0700 under the supervisor's umask 077 (no window for other users);
            # the seed asks for exactly 0600, so drop the owner's x bit and verify.
            os.chmod(path, 0o600)
            info = os.lstat(path)
            if not stat.S_ISSOCK(info.st_mode) or stat.S_IMODE(info.st_mode) != 0o600:
                raise PermissionError
            sock.listen(_BACKLOG)
        except OSError as exc:
            sock.close()
            raise WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED) from exc
        return cls(sock, path, Transport.UNIX, address)

    @classmethod
    async def open_tcp(cls, port: int) -> ControlServer:
        """Bind TCP on exactly 127.0.0.1:``port``."""
        sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            await sock.bind(("127.0.0.1", port))
            sock.listen(_BACKLOG)
        except OSError as exc:
            sock.close()
            raise WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED) from exc
        return cls(sock, None, Transport.TCP, f"127.0.0.1:{port}")

    async def serve(
        self, credential: str, handler: ControlHandler, telemetry: Telemetry = NO_TELEMETRY
    ) -> None:
        """Accept connections until cancelled or closed.

        Each answered ``status`` or ``health`` is one ``worker.process`` (operation
        ``status``): a success once the whole answer was sent, a failure otherwise.
        """
        async with trio.open_nursery() as sessions:
            while True:
                try:
                    conn, _ = await self._listener.accept()
                except (OSError, trio.ClosedResourceError):
                    return
                sessions.start_soon(self._session, conn, credential, handler, telemetry)

    def close(self) -> None:
        """Stop listening and remove the socket file; open sessions carry on."""
        self._listener.close()
        self._refusals.flush()
        if self._socket_path is not None:
            try:
                self._socket_path.unlink()
            except FileNotFoundError:
                pass

    async def wait_idle(self, timeout: float) -> None:
        """Let open sessions finish sending (the final ``stopped``), at most ``timeout``."""
        with trio.move_on_after(timeout):
            await self._idle.wait()

    async def _session(
        self,
        conn: trio.socket.SocketType,
        credential: str,
        handler: ControlHandler,
        telemetry: Telemetry,
    ) -> None:
        with self._counted(), conn:
            conversation = ServerConversation(credential, self._transport, self._address)
            request = await self._read_request(conn, conversation)
            if not isinstance(request, ControlRequest):
                self._refusals.refused(request)
                return
            if request.command is ControlCommand.STOP:
                answering = None  # a stop is recorded when the shutdown ends
            else:
                answering = telemetry.process("status")
            try:
                if answering is None:
                    await _stream(conn, conversation, handler.subscribe_stop())
                else:
                    await _send(conn, conversation.send(handler.answer(request.command)))
                    answering.finish("success")
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
                return  # the client went away; nothing else is affected
            finally:
                if answering is not None:
                    answering.finish("failure")  # no-op once the answer was sent

    @contextlib.contextmanager
    def _counted(self) -> Iterator[None]:
        """Count the session as open while it runs, so :meth:`wait_idle` sees the last end."""
        self._sessions += 1
        self._idle = trio.Event()
        try:
            yield
        finally:
            self._sessions -= 1
            if self._sessions == 0:
                self._idle.set()

    async def _read_request(
        self, conn: trio.socket.SocketType, conversation: ServerConversation
    ) -> ControlRequest | RefusalCause:
        key = id(conn)
        if len(self._pending) >= MAX_PENDING:
            _, oldest = self._pending.popitem(last=False)
            oldest.cancel()
        with trio.move_on_after(READ_DEADLINE_S) as scope:
            self._pending[key] = scope
            try:
                return await _receive_request(conn, conversation)
            finally:
                self._pending.pop(key, None)
        return RefusalCause.INCOMPLETE


async def _receive_request(
    conn: trio.socket.SocketType, conversation: ServerConversation
) -> ControlRequest | RefusalCause:
    """The request once both ends proved themselves, or why it gets no answer (the
    conversation judges, the one framed read loop moves the bytes)."""
    channel = FramedChannel(conn, ancillary=False)
    try:
        while (event := await channel.receive(conversation)) is not None:
            if isinstance(event, ControlRequest):
                return event
            await _send(conn, conversation.challenge())  # the hello: prove ourselves
    except CredentialRefusedError:
        return RefusalCause.CREDENTIAL
    except ProtocolError as exc:
        if exc.reason is Reason.FRAME_UNSUPPORTED_VERSION:
            return RefusalCause.VERSION
        return RefusalCause.MALFORMED
    except OSError:
        return RefusalCause.INCOMPLETE
    return RefusalCause.INCOMPLETE


async def _send(conn: trio.socket.SocketType, data: bytes) -> None:
    view = memoryview(data)
    while view:
        sent = await conn.send(view)
        view = view[sent:]


async def _stream(
    conn: trio.socket.SocketType,
    conversation: ServerConversation,
    answers: trio.MemoryReceiveChannel[ControlResponse],
) -> None:
    async with answers:
        async for response in answers:
            await _send(conn, conversation.send(response))


async def _bind_long_path(sock: trio.socket.SocketType, path: Path) -> None:
    """Bind through ``/proc/self/fd`` when the absolute path overflows ``sun_path``."""
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        await sock.bind(f"/proc/self/fd/{dir_fd}/{path.name}")
    finally:
        os.close(dir_fd)
