"""A stand-in supervisor endpoint for client tests: a real socket served by a thread.

The client is tested against real UNIX and TCP sockets, a real lock held by a separate
process and a real locator file; only the answering side is scripted here, so each test can
make the supervisor misbehave in exactly one way. The handshake is the real one (a
:class:`ServerConversation`), with the stub's own credential unless told otherwise.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from coretsia.worker_protocol.control import ControlRequest, ControlResponse, Hello, PoolSummary
from coretsia.worker_protocol.control_conversation import ServerConversation
from coretsia.worker_protocol.exceptions import ProtocolError
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.lifecycle import LOCATOR_PATH
from coretsia.worker_protocol.locator import Locator, encode_locator
from coretsia.worker_protocol.vocabulary import Driver, PoolStatus, Transport

SUMMARY = PoolSummary(
    pool_status=PoolStatus.RUNNING,
    pid=os.getpid(),
    worker_count=4,
    ready_worker_count=4,
    driver=Driver.FORK,
    control_transport=Transport.UNIX,
    endpoint_hash="0" * 32,
)
"""The pool a stub supervisor describes in its answers."""


class Session:
    """One connection whose client proved itself: the script answers through it."""

    def __init__(self, conn: socket.socket, conversation: ServerConversation) -> None:
        self.conn = conn
        self.conversation = conversation

    def send(self, response: ControlResponse) -> None:
        """An answer, sealed, as the real server sends it."""
        self.conn.sendall(self.conversation.send(response))

    def send_raw(self, data: bytes) -> None:
        """Bytes no conversation would send (garbage, an unsealed or forged frame)."""
        self.conn.sendall(data)

    def wait_closed(self) -> None:
        """Block until the client gives up and closes."""
        self.conn.settimeout(None)
        self.conn.recv(1)


Script = Callable[[Session, ControlRequest], None]


class StubSupervisor:
    """Accepts connections, runs the real handshake, then a script.

    ``proves_with`` is the credential the stub's end of the handshake holds (by default
    the one in its locator): another one makes it a server that cannot prove itself.
    ``received`` is every byte any client sent it; ``requests`` the requests that got
    through the handshake.
    """

    def __init__(
        self,
        root: Path,
        transport: Transport,
        script: Script,
        proves_with: str | None = None,
    ) -> None:
        self.root = root
        self.credential = secrets.token_hex(32)
        self.proves_with = proves_with or self.credential
        self.script = script
        self.requests: list[ControlRequest] = []
        self.received = bytearray()
        if transport is Transport.UNIX:
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind(str(root / "var/tmp/worker.sock"))
            os.chmod(root / "var/tmp/worker.sock", 0o600)
            self.locator = Locator(
                transport=transport,
                credential=self.credential,
                stop_timeout_ms=300,
                force_kill_timeout_ms=100,
                path="var/tmp/worker.sock",
            )
        else:
            self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.listener.bind(("127.0.0.1", 0))
            self.locator = Locator(
                transport=transport,
                credential=self.credential,
                stop_timeout_ms=300,
                force_kill_timeout_ms=100,
                host="127.0.0.1",
                port=self.listener.getsockname()[1],
            )
        self.listener.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def write_locator(self, mode: int = 0o600, **changes: Any) -> None:
        """Publish the stub's locator, with ``changes`` to its fields: a test's one fault
        (another credential, host or path, other budgets)."""
        path = self.root / LOCATOR_PATH
        path.write_bytes(encode_locator(Locator(**{**self.locator._asdict(), **changes})))
        os.chmod(path, mode)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                conversation = ServerConversation(
                    self.proves_with, self.locator.transport, self.locator.address
                )
                try:
                    request = self._handshake(conn, conversation)
                except (OSError, ProtocolError):
                    continue  # silent close, as the real server does
                if request is not None:
                    self.requests.append(request)
                    self.script(Session(conn, conversation), request)

    def _handshake(
        self, conn: socket.socket, conversation: ServerConversation
    ) -> ControlRequest | None:
        while True:
            event = conversation.next_event()
            if event is Need.DATA:
                data = conn.recv(4096)
                self.received += data
                conversation.receive_data(data)
            elif isinstance(event, Hello):
                conn.sendall(conversation.challenge())
            elif event is Need.CLOSED:
                return None
            else:
                return event

    def close(self) -> None:
        try:
            # close() alone does not wake a thread blocked in accept(); shutdown() does.
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        self.thread.join(timeout=5)


class StartStub(Protocol):
    """The client tests' ``supervisor`` fixture: start a stub for the test's root."""

    def __call__(
        self, script: Script, transport: Transport = ..., proves_with: str | None = ...
    ) -> StubSupervisor: ...
