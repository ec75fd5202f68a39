"""``status_success`` / ``status_failure`` from the real control server, on a real socket.

The server runs in this trio loop with an in-memory OpenTelemetry pipeline injected; the
clients are real UNIX-socket connections. A client that shut down its reading side
before asking makes the answer's send fail deterministically (Linux and the BSDs refuse
to write to a peer that can no longer read): that is a status failure.
"""

from __future__ import annotations

import secrets
import socket
import sys
from pathlib import Path

import pytest
import trio
from control_handlers import Handler
from conversation_pairs import forged
from telemetry_memory import Pipeline

from coretsia.supervisor.daemon.control_server import ControlServer
from coretsia.supervisor.shared.telemetry import Telemetry
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    encode_request,
)
from coretsia.worker_protocol.control_conversation import ClientConversation
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.vocabulary import ControlCommand, Transport

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="UNIX control socket")

CREDENTIAL = secrets.token_hex(32)
ADDRESS = "ctl.sock"
WAIT = 10


async def _handshake(sock: trio.socket.SocketType) -> ClientConversation:
    """Say hello and check the server's proof; the conversation is then ready to ask."""
    conversation = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
    await sock.send(conversation.hello())
    while not isinstance(event := conversation.next_event(), Challenge):
        assert event is Need.DATA
        conversation.receive_data(await sock.recv(4096))
    return conversation


async def _ask(
    server: ControlServer, path: Path, command: ControlCommand, *, forge: bool = False
) -> bytes:
    """Send one request (sealed by a forger's MAC if ``forge``); return the answer (up to
    EOF)."""
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with sock:
        await sock.connect(str(path))
        conversation = await _handshake(sock)
        request = ControlRequest(command)
        await sock.send(forged(request, encode_request) if forge else conversation.send(request))
        answer = b""
        while chunk := await sock.recv(4096):
            answer += chunk
    await server.wait_idle(WAIT)
    return answer


async def _ask_without_reading(server: ControlServer, handler: Handler, path: Path) -> None:
    """Ask for ``status`` after shutting down our reading side (once the handshake is
    done); wait for the session to end."""
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with sock:
        await sock.connect(str(path))
        conversation = await _handshake(sock)
        sock.shutdown(socket.SHUT_RD)
        await sock.send(conversation.send(ControlRequest(ControlCommand.STATUS)))
        await handler.answered.wait()
        await server.wait_idle(WAIT)


async def test_answers_are_status_success_and_a_vanished_client_status_failure(
    tmp_path: Path, pipeline: Pipeline
) -> None:
    """status and health count as status_success; an unsendable answer as status_failure."""
    tracer_provider, meter_provider, recorded = pipeline
    telemetry = Telemetry(tracer_provider.get_tracer("t"), meter_provider.get_meter("t"))
    path = tmp_path / "ctl.sock"
    server = await ControlServer.open_unix(path, ADDRESS)
    handler = Handler()
    try:
        with trio.fail_after(WAIT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(server.serve, CREDENTIAL, handler, telemetry)
                assert await _ask(server, path, ControlCommand.STATUS)
                assert await _ask(server, path, ControlCommand.HEALTH)
                refused = await _ask(server, path, ControlCommand.STATUS, forge=True)
                assert refused == b""  # refused silently, and not a status answer
                handler.answered = trio.Event()
                await _ask_without_reading(server, handler, path)
                nursery.cancel_scope.cancel()
    finally:
        server.close()
    assert sorted(recorded.points("worker.process_total"), key=str) == [
        ({"status": "status_failure"}, 1),
        ({"status": "status_success"}, 2),
    ]
    assert sorted(map(str, recorded.span_attributes("worker.process"))) == sorted(
        map(
            str,
            [
                {"operation": "status", "outcome": "success"},
                {"operation": "status", "outcome": "success"},
                {"operation": "status", "outcome": "failure"},
            ],
        )
    )
