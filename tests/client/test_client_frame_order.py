"""``worker-frame-unexpected`` as the docs give it, reached over a real socket.

operations.md: "a frame came out of the order the conversation allows (the peer sent it,
or this side was asked to send it)", a ``CORETSIA_WORKER_PROTOCOL_VIOLATION`` (exit 4)
seen only by Python code using the protocol package; the commands, and
:class:`ControlClient`, turn it into ``worker-communication-failed`` (the protocol error
kept as the cause). The peer here is a stub supervisor on a real UNIX socket, behind a
real lock and locator, that sends well-formed frames at the wrong moment.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from stub_supervisor import SUMMARY, Session, StartStub

from coretsia.worker_protocol.catalogue import ErrorCode, Reason
from coretsia.worker_protocol.client import ControlClient
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    StatusResponse,
    StopProgress,
    encode_response,
)
from coretsia.worker_protocol.control_conversation import ClientConversation, ControlState
from coretsia.worker_protocol.exceptions import (
    RemoteProtocolError,
    WorkerCommunicationFailedError,
)
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.vocabulary import (
    ControlCommand,
    ShutdownPhase,
)


def _answer_twice(session: Session, _request: ControlRequest) -> None:
    """The sealed answer, then the very same bytes again: each frame is genuine, the
    second one comes after the conversation's end."""
    answer = session.conversation.send(StatusResponse(SUMMARY))
    session.send_raw(answer + answer)


def _progress_for_status(session: Session, _request: ControlRequest) -> None:
    """A stop's progress line in answer to ``status``."""
    session.send_raw(encode_response(StopProgress(ShutdownPhase.KILL, 1), lambda _b: "f" * 64))


def _ask_status_and_read_on(
    sock: socket.socket, conversation: ClientConversation, received: list[object]
) -> None:
    """``status``, then read every frame that comes, into ``received``, until one raises."""
    sock.sendall(conversation.hello())
    while True:
        event = conversation.next_event()
        if event is Need.DATA:
            conversation.receive_data(sock.recv(4096))
        elif isinstance(event, Challenge):
            sock.sendall(conversation.send(ControlRequest(ControlCommand.STATUS)))
        else:
            received.append(event)


def test_a_frame_after_the_answer_is_unexpected(supervisor: StartStub) -> None:
    """Python code reading on after the terminal answer gets ``RemoteProtocolError``
    ``worker-frame-unexpected`` (exit 4) for the replayed frame, and the conversation
    is over."""
    stub = supervisor(_answer_twice)
    locator = stub.locator
    conversation = ClientConversation(locator.credential, locator.transport, locator.address)
    received: list[object] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(Path(stub.root) / "var/tmp/worker.sock"))
        with pytest.raises(RemoteProtocolError) as info:
            _ask_status_and_read_on(sock, conversation, received)
    assert received == [StatusResponse(SUMMARY)]
    assert (info.value.code, info.value.reason) == (
        ErrorCode.PROTOCOL_VIOLATION,
        Reason.FRAME_UNEXPECTED,
    )
    assert info.value.exit_code == 4
    assert conversation.state is ControlState.ERROR


def test_control_client_keeps_it_as_the_cause(supervisor: StartStub) -> None:
    """``ControlClient`` answers a frame out of order with a communication failure whose
    cause is the ``worker-frame-unexpected`` protocol error."""
    stub = supervisor(_progress_for_status)
    with pytest.raises(WorkerCommunicationFailedError) as info:
        ControlClient(stub.root).status()
    cause = info.value.__cause__
    assert isinstance(cause, RemoteProtocolError)
    assert cause.reason is Reason.FRAME_UNEXPECTED
