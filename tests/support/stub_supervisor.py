"""A stand-in supervisor endpoint for client tests: a real socket served by a thread.

The client is tested against real UNIX and TCP sockets, a real lock held by a separate
process and a real locator file; only the answering side is scripted here, so each test can
make the supervisor misbehave in exactly one way.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from coretsia.worker_protocol.control import ControlRequest, decode_request
from coretsia.worker_protocol.framing import LineFramer, Need
from coretsia.worker_protocol.lifecycle import LOCATOR_PATH
from coretsia.worker_protocol.locator import Locator, encode_locator
from coretsia.worker_protocol.vocabulary import Transport

Script = Callable[[socket.socket, ControlRequest], None]


class StubSupervisor:
    """Accepts connections, checks the credential like the real server, runs a script."""

    def __init__(self, root: Path, transport: Transport, script: Script) -> None:
        self.root = root
        self.credential = secrets.token_hex(32)
        self.script = script
        self.requests: list[ControlRequest] = []
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
                framer = LineFramer()
                frame: bytes | Need = Need.DATA
                while frame is Need.DATA:
                    data = conn.recv(4096)
                    framer.receive_data(data)
                    frame = framer.next_frame()
                if not isinstance(frame, bytes):
                    continue
                request = decode_request(frame)
                self.requests.append(request)
                if request.credential != self.credential:
                    continue  # silent close, as the real server does
                self.script(conn, request)

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

    def __call__(self, script: Script, transport: Transport = ...) -> StubSupervisor: ...
