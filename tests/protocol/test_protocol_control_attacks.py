"""The attacks the control handshake must stop, without sockets: replays from another
connection, reflection of one end's proof as the other's, substitution of an answer,
truncation and reordering, and a property: any change to any byte of any sealed frame is
refused.
"""

from __future__ import annotations

import json

import pytest
from conversation_pairs import ADDRESS, ANSWERS, CREDENTIAL, HEALTH, PROGRESS, STATUS, STOPPED, Pair
from handshake_refusals import refused_by_client, refused_by_server
from hypothesis import given, settings
from hypothesis import strategies as st

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    ControlResponse,
    Hello,
    StopProgress,
    encode_request,
)
from coretsia.worker_protocol.control_conversation import (
    ClientConversation,
    ControlState,
    ServerConversation,
)
from coretsia.worker_protocol.exceptions import ProtocolError, RemoteProtocolError
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.vocabulary import ControlCommand, ShutdownPhase, Transport


def _session(command: ControlCommand = ControlCommand.STATUS) -> tuple[Pair, bytes, bytes]:
    """A genuine handshake and request: the pair, the challenge's and the request's bytes."""
    pair = Pair()
    pair.server.receive_data(pair.client.hello())
    assert isinstance(pair.server.next_event(), Hello)
    challenge = pair.server.challenge()
    pair.client.receive_data(challenge)
    assert isinstance(pair.client.next_event(), Challenge)
    request = pair.client.send(ControlRequest(command))
    pair.server.receive_data(request)
    assert pair.server.next_event() == ControlRequest(command)
    return pair, challenge, request


class TestReplay:
    def test_an_old_challenge_does_not_prove_a_server(self) -> None:
        """A challenge recorded from another connection fails the new client's check."""
        _, challenge, _ = _session()
        client = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        client.hello()
        refused_by_client(client, challenge)

    def test_an_old_request_does_not_prove_a_client(self) -> None:
        """A request recorded from another connection is refused after a new handshake."""
        _, _, request = _session(ControlCommand.STOP)
        pair = Pair()
        pair.handshake()
        refused_by_server(pair.server, request)

    def test_an_old_answer_does_not_answer(self) -> None:
        """An answer recorded from another connection is refused by the new client."""
        old, _, _ = _session()
        recorded = old.server.send(STATUS)
        pair = Pair()
        pair.ask(ControlCommand.STATUS)
        refused_by_client(pair.client, recorded)


class TestReflection:
    def test_the_servers_proof_is_not_the_clients(self) -> None:
        """The challenge's MAC sent back as the request's is refused."""
        pair = Pair()
        pair.hello()
        challenge = pair.server.challenge()
        mac = json.loads(challenge)["mac"]
        refused_by_server(
            pair.server, encode_request(ControlRequest(ControlCommand.STATUS), lambda _b: mac)
        )

    def test_a_challenge_sent_back_to_the_server(self) -> None:
        """The server's own challenge line is no client frame at all."""
        pair = Pair()
        pair.hello()
        pair.server.receive_data(pair.server.challenge())
        with pytest.raises(RemoteProtocolError) as info:
            pair.server.next_event()
        assert info.value.reason is Reason.FRAME_UNKNOWN_TYPE

    def test_a_hello_sent_back_to_the_client(self) -> None:
        """The client's own hello line is no server frame at all."""
        client = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        client.receive_data(client.hello())
        with pytest.raises(RemoteProtocolError) as info:
            client.next_event()
        assert info.value.reason is Reason.FRAME_UNKNOWN_TYPE


class TestSubstitution:
    def test_an_answer_from_a_concurrent_connection(self) -> None:
        """A genuine answer of another live connection is refused here."""
        mine = Pair()
        mine.ask(ControlCommand.HEALTH)
        theirs = Pair()
        theirs.ask(ControlCommand.HEALTH)
        refused_by_client(mine.client, theirs.server.send(HEALTH))

    def test_an_altered_answer(self) -> None:
        """A status whose ready count was changed in transit is refused."""
        pair = Pair()
        pair.ask(ControlCommand.STATUS)
        obj = json.loads(pair.server.send(STATUS))
        obj["ready_worker_count"] = 0
        refused_by_client(pair.client, json.dumps(obj).encode() + b"\n")


class TestTruncation:
    def test_a_dropped_progress_line(self) -> None:
        """A stop-progress dropped in transit fails the next frame's check."""
        pair = Pair()
        pair.ask(ControlCommand.STOP)
        assert pair.answer(StopProgress(ShutdownPhase.COOPERATIVE, 10)) is not None
        pair.server.send(StopProgress(ShutdownPhase.TERMINATE, 10))  # never delivered
        refused_by_client(pair.client, pair.server.send(STOPPED))

    def test_reordered_progress_lines(self) -> None:
        """Two progress lines swapped in transit are refused."""
        pair = Pair()
        pair.ask(ControlCommand.STOP)
        first = pair.server.send(StopProgress(ShutdownPhase.COOPERATIVE, 10))
        second = pair.server.send(StopProgress(ShutdownPhase.TERMINATE, 10))
        refused_by_client(pair.client, second + first)

    def test_a_cut_answer(self) -> None:
        """A stream that ends in the middle of an answer is truncated, not an answer."""
        pair = Pair()
        pair.ask(ControlCommand.STATUS)
        pair.client.receive_data(pair.server.send(STATUS)[:-10])
        pair.client.receive_data(b"")
        with pytest.raises(RemoteProtocolError) as info:
            pair.client.next_event()
        assert info.value.reason is Reason.FRAME_TRUNCATED

    def test_a_close_before_stopped(self) -> None:
        """Progress then a close: CLOSED, never DONE, so no client takes it for stopped."""
        pair = Pair()
        pair.ask(ControlCommand.STOP)
        pair.answer(PROGRESS)
        pair.client.receive_data(b"")
        assert pair.client.next_event() is Need.CLOSED
        assert pair.client.state is ControlState.CLOSED


# -- properties ------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    command=st.sampled_from(ControlCommand),
    progress=st.integers(0, 3),
    data=st.data(),
)
def test_any_change_to_any_sealed_frame_is_refused(
    command: ControlCommand, progress: int, data: st.DataObject
) -> None:
    """One byte changed anywhere in any sealed frame (the challenge, the request or an
    answer; the newline aside): the end that receives it refuses it."""
    pair = Pair()
    pair.server.receive_data(pair.client.hello())
    pair.server.next_event()
    answers: list[ControlResponse] = [PROGRESS] * (
        progress if command is ControlCommand.STOP else 0
    )
    answers.append(ANSWERS[command])
    target = data.draw(st.integers(0, 1 + len(answers) - 1), label="frame")
    for index in range(2 + len(answers)):
        end: ClientConversation | ServerConversation
        if index == 0:
            line, end = pair.server.challenge(), pair.client
        elif index == 1:
            line, end = pair.client.send(ControlRequest(command)), pair.server
        else:
            line, end = pair.server.send(answers[index - 2]), pair.client
        if index == target:
            position = data.draw(st.integers(0, len(line) - 2), label="position")
            # Not the same byte, nor a newline (which would only cut the line in two).
            others = [b for b in range(256) if b not in (line[position], 10)]
            byte = data.draw(st.sampled_from(others), label="byte")
            end.receive_data(line[:position] + bytes([byte]) + line[position + 1 :])
            with pytest.raises(ProtocolError):
                end.next_event()
            return
        end.receive_data(line)
        assert not isinstance(end.next_event(), Need)
