"""The control server in this trio loop, on real UNIX sockets: its listener and sessions.

What the module and architecture.md say of it, each checked in-process (faster and
more direct than through a whole pool): the socket is a socket of mode exactly 0600 and
replaces a stale one; a path it cannot take fails with ``worker-lifecycle-failed``; a path
longer than ``sun_path`` is bound through ``/proc/self/fd``; closing the listener leaves
open sessions alone (a ``stop`` client still hears ``stopped`` after the socket is gone,
the shutdown's order); a client frame out of order (a second ``hello``) gets the silent
close of any malformed request, counted as ``malformed``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from control_handlers import Handler

from coretsia.supervisor.daemon.control_server import ControlServer
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    ControlResponse,
    StatusResponse,
    StoppedResponse,
)
from coretsia.worker_protocol.control_conversation import ClientConversation
from coretsia.worker_protocol.exceptions import WorkerLifecycleFailedError
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.vocabulary import ControlCommand, Transport

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="UNIX sockets, /proc/self/fd")

CREDENTIAL = secrets.token_hex(32)
ADDRESS = "var/tmp/worker.sock"
WAIT = 10


class StopHandler(Handler):
    """Also hands each ``stop`` client a channel the test feeds."""

    def __init__(self) -> None:
        super().__init__()
        self.stops: list[trio.MemorySendChannel[ControlResponse]] = []
        self.stop_asked = trio.Event()

    def subscribe_stop(self) -> trio.MemoryReceiveChannel[ControlResponse]:
        send, receive = trio.open_memory_channel[ControlResponse](1)
        self.stops.append(send)
        self.stop_asked.set()
        return receive


@contextlib.asynccontextmanager
async def _serving(path: Path, handler: Handler) -> AsyncIterator[ControlServer]:
    server = await ControlServer.open_unix(path, ADDRESS)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.serve, CREDENTIAL, handler)
            yield server
            nursery.cancel_scope.cancel()
    finally:
        server.close()


async def _connect(path: Path) -> trio.socket.SocketType:
    """A client socket connected to ``path`` (through its directory's descriptor when the
    path is too long for ``sun_path``, as the real client does)."""
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        await sock.connect(f"/proc/self/fd/{dir_fd}/{path.name}")
    except OSError:
        sock.close()
        raise
    finally:
        os.close(dir_fd)
    return sock


async def _ask(sock: trio.socket.SocketType, command: ControlCommand) -> list[object]:
    """Go through the handshake, ask ``command``; every answer up to the server's close."""
    conversation = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
    await sock.send(conversation.hello())
    answers: list[object] = []
    while (event := conversation.next_event()) is not Need.CLOSED:
        if event is Need.DATA:
            conversation.receive_data(await sock.recv(4096))
        elif isinstance(event, Challenge):
            await sock.send(conversation.send(ControlRequest(command)))
        else:
            answers.append(event)
    return answers


@pytest.fixture
def path(runtime_root: Path) -> Path:
    return runtime_root / ADDRESS


class TestListener:
    async def test_socket_of_mode_0600_replacing_a_stale_one(self, path: Path) -> None:
        """A stale file at the path is replaced by the listening socket, mode exactly 0600,
        and a client with the credential gets its answer."""
        path.write_text("stale")
        handler = Handler()
        with trio.fail_after(WAIT):
            async with _serving(path, handler):
                info = os.lstat(path)
                assert stat.S_ISSOCK(info.st_mode)
                assert stat.S_IMODE(info.st_mode) == 0o600
                with await _connect(path) as sock:
                    assert await _ask(sock, ControlCommand.STATUS) == [
                        StatusResponse(handler.pool.summary())
                    ]

    async def test_a_directory_at_the_path_fails_the_start(self, path: Path) -> None:
        """A path that cannot be unlinked and bound is ``worker-lifecycle-failed``."""
        (path / "inside").mkdir(parents=True)
        with pytest.raises(WorkerLifecycleFailedError) as info:
            await ControlServer.open_unix(path, ADDRESS)
        assert info.value.reason is Reason.LIFECYCLE_FAILED

    async def test_a_path_longer_than_sun_path(self, runtime_root: Path) -> None:
        """A socket path beyond ``sun_path`` (108 bytes) is bound all the same."""
        deep = runtime_root / ("d" * 60) / ("e" * 60)
        deep.mkdir(parents=True)
        long_path = deep / "worker.sock"
        assert len(str(long_path)) > 108
        with trio.fail_after(WAIT):
            async with _serving(long_path, Handler()):
                assert stat.S_ISSOCK(os.lstat(long_path).st_mode)
                with await _connect(long_path) as sock:
                    assert len(await _ask(sock, ControlCommand.STATUS)) == 1


class TestClose:
    async def test_a_stop_client_hears_stopped_after_the_listener_closed(self, path: Path) -> None:
        """``close`` removes the socket and refuses new clients, while the open ``stop``
        session still gets its terminal answer, then the server's close."""
        handler = StopHandler()
        with trio.fail_after(WAIT):
            async with _serving(path, handler) as server, trio.open_nursery() as nursery:
                answers: list[object] = []

                async def stop_client() -> None:
                    with await _connect(path) as sock:
                        answers.extend(await _ask(sock, ControlCommand.STOP))

                nursery.start_soon(stop_client)
                await handler.stop_asked.wait()
                server.close()
                assert not path.exists()
                with pytest.raises(OSError):  # no listener any more (and the socket closed)
                    await _connect(path)
                handler.stops[0].send_nowait(StoppedResponse())
                handler.stops[0].close()
                await server.wait_idle(WAIT)
            assert answers == [StoppedResponse()]


class TestOutOfOrder:
    async def test_a_second_hello_gets_a_silent_close(
        self, path: Path, lines: list[dict[str, object]]
    ) -> None:
        """A client frame out of order gets no answer, only the close, and is counted as
        a malformed refusal (the server's ``worker-frame-unexpected``)."""
        conversation = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        hello = conversation.hello()
        with trio.fail_after(WAIT):
            async with _serving(path, Handler()) as server:
                with await _connect(path) as sock:
                    await sock.send(hello + hello)
                    received = b""
                    while chunk := await sock.recv(4096):
                        received += chunk
                await server.wait_idle(WAIT)
        conversation.receive_data(received)
        assert isinstance(conversation.next_event(), Challenge)  # its challenge, then nothing
        conversation.receive_data(b"")
        assert conversation.next_event() is Need.CLOSED
        refused = [line for line in lines if line["event"] == "control.refused"]
        assert [(line["cause"], line["count"]) for line in refused] == [("malformed", 1)]
