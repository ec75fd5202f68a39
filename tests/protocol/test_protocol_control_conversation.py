"""The control conversation, both ends, without sockets: every legal path, every illegal one.

Like h11's ``ConnectionPair``, a :class:`Pair` wires a client and a server conversation in
memory, so a test reads as the exchange it checks.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coretsia.worker_protocol.catalogue import HealthReason, Reason
from coretsia.worker_protocol.control import (
    ControlRequest,
    ControlResponse,
    ErrorResponse,
    HealthResponse,
    PoolSummary,
    StatusResponse,
    StoppedResponse,
    StopProgress,
    encode_request,
    encode_response,
)
from coretsia.worker_protocol.control_conversation import (
    ClientConversation,
    ControlState,
    CredentialRefusedError,
    ServerConversation,
)
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
)
from coretsia.worker_protocol.framing import MAX_FRAME_BYTES, Need
from coretsia.worker_protocol.vocabulary import (
    ControlCommand,
    Driver,
    PoolStatus,
    ShutdownPhase,
    Transport,
)

CREDENTIAL = "c" * 64
SUMMARY = PoolSummary(PoolStatus.RUNNING, 1, 2, 2, Driver.FORK, Transport.UNIX, "0" * 32)
STATUS = StatusResponse(SUMMARY)
HEALTH = HealthResponse(SUMMARY, healthy=True, reason=HealthReason.HEALTHY)
PROGRESS = StopProgress(ShutdownPhase.COOPERATIVE, 1000)
STOPPED = StoppedResponse()
ERROR = ErrorResponse(Reason.SHUTDOWN_FAILED)
ANSWERS: dict[ControlCommand, ControlResponse] = {
    ControlCommand.STATUS: STATUS,
    ControlCommand.HEALTH: HEALTH,
    ControlCommand.STOP: STOPPED,
}
EVERY_RESPONSE: tuple[ControlResponse, ...] = (STATUS, HEALTH, PROGRESS, STOPPED, ERROR)


def legal_terminals(command: ControlCommand) -> set[ControlResponse]:
    return {ANSWERS[command], ERROR}


class Pair:
    """A client and a server conversation joined in memory."""

    def __init__(self, credential: str = CREDENTIAL) -> None:
        self.client = ClientConversation()
        self.server = ServerConversation(CREDENTIAL)
        self.credential = credential

    def ask(self, command: ControlCommand) -> ControlRequest | Need:
        """The client sends its request; what the server makes of it."""
        self.server.receive_data(self.client.send(ControlRequest(command, self.credential)))
        return self.server.next_event()

    def answer(self, response: ControlResponse) -> ControlResponse | Need:
        """The server sends an answer; what the client makes of it."""
        self.client.receive_data(self.server.send(response))
        return self.client.next_event()


class TestLegalConversations:
    @pytest.mark.parametrize("command", [ControlCommand.STATUS, ControlCommand.HEALTH])
    def test_status_and_health_get_one_answer(self, command: ControlCommand) -> None:
        """status and health: one request, one answer, then both ends are done."""
        pair = Pair()
        assert pair.ask(command) == ControlRequest(command, CREDENTIAL)
        assert pair.server.state is ControlState.ANSWER
        assert pair.answer(ANSWERS[command]) == ANSWERS[command]
        assert pair.client.state is pair.server.state is ControlState.DONE

    @pytest.mark.parametrize("progress", [0, 1, 3])
    def test_stop_gets_progress_then_stopped(self, progress: int) -> None:
        """stop: any number of stop-progress lines, then the terminal stopped."""
        pair = Pair()
        pair.ask(ControlCommand.STOP)
        for _ in range(progress):
            assert pair.answer(PROGRESS) == PROGRESS
            assert pair.client.state is ControlState.STOPPING
        assert pair.answer(STOPPED) == STOPPED
        assert pair.client.state is ControlState.DONE

    @pytest.mark.parametrize("command", list(ControlCommand))
    def test_error_ends_any_command(self, command: ControlCommand) -> None:
        """An error answer is terminal for every command."""
        pair = Pair()
        pair.ask(command)
        assert pair.answer(ERROR) == ERROR
        assert pair.client.state is ControlState.DONE

    def test_close_after_the_answer_is_clean(self) -> None:
        """The server's close after the terminal answer is the end of the conversation."""
        pair = Pair()
        pair.ask(ControlCommand.STATUS)
        pair.answer(STATUS)
        pair.client.receive_data(b"")
        assert pair.client.next_event() is Need.CLOSED
        assert pair.client.state is ControlState.CLOSED

    def test_answer_split_into_bytes(self) -> None:
        """An answer arriving one byte at a time is reassembled, asking for data between."""
        client = ClientConversation()
        client.send(ControlRequest(ControlCommand.STATUS, CREDENTIAL))
        for byte in encode_response(STATUS):
            assert client.next_event() is Need.DATA
            client.receive_data(bytes([byte]))
        assert client.next_event() == STATUS


class TestRefusal:
    def test_wrong_credential_is_refused(self) -> None:
        """A request with another credential raises, names the field, never the value."""
        pair = Pair(credential="d" * 64)
        with pytest.raises(CredentialRefusedError) as info:
            pair.ask(ControlCommand.STATUS)
        assert isinstance(info.value, RemoteProtocolError)
        assert info.value.path == "$.credential"
        assert "d" * 64 not in str(info.value) + repr(info.value)
        assert pair.server.state is ControlState.ERROR

    def test_refused_server_cannot_answer(self) -> None:
        """Silence after a refusal is the rule: the server end refuses to send."""
        pair = Pair(credential="d" * 64)
        with pytest.raises(CredentialRefusedError):
            pair.ask(ControlCommand.STATUS)
        with pytest.raises(LocalProtocolError):
            pair.server.send(STATUS)

    def test_client_sees_silence_as_a_close_before_the_answer(self) -> None:
        """A close before the terminal answer is CLOSED with the state not DONE."""
        client = ClientConversation()
        client.send(ControlRequest(ControlCommand.STATUS, CREDENTIAL))
        client.receive_data(b"")
        assert client.next_event() is Need.CLOSED
        assert client.state is ControlState.CLOSED

    def test_close_before_a_request(self) -> None:
        """A client that closes without a request leaves the server CLOSED."""
        server = ServerConversation(CREDENTIAL)
        server.receive_data(b"")
        assert server.next_event() is Need.CLOSED

    @pytest.mark.parametrize(
        "line", [b"\n", b"{}\n", b"not json\n", b'{"type":"status","version":1}\n']
    )
    def test_garbage_is_a_remote_error(self, line: bytes) -> None:
        """A request that does not decode is a RemoteProtocolError, and the end is over."""
        server = ServerConversation(CREDENTIAL)
        server.receive_data(line)
        with pytest.raises(RemoteProtocolError):
            server.next_event()
        assert server.state is ControlState.ERROR
        with pytest.raises(LocalProtocolError):
            server.next_event()

    def test_oversized_request(self) -> None:
        """A request line past the limit is refused before it ends."""
        server = ServerConversation(CREDENTIAL)
        server.receive_data(b"x" * (MAX_FRAME_BYTES + 1))
        with pytest.raises(RemoteProtocolError) as info:
            server.next_event()
        assert info.value.reason is Reason.FRAME_OVERSIZED


def _unexpected(error: ProtocolError) -> None:
    assert error.reason is Reason.FRAME_UNEXPECTED


class TestIllegalTransitions:
    @pytest.mark.parametrize("command", list(ControlCommand))
    @pytest.mark.parametrize("response", EVERY_RESPONSE, ids=lambda r: type(r).__name__)
    def test_every_wrong_first_answer(
        self, command: ControlCommand, response: ControlResponse
    ) -> None:
        """An answer the command does not allow: Local to send, Remote to receive."""
        if response in legal_terminals(command) or (
            command is ControlCommand.STOP and response == PROGRESS
        ):
            return
        pair = Pair()
        pair.ask(command)
        with pytest.raises(LocalProtocolError) as local:
            pair.server.send(response)
        _unexpected(local.value)
        client = Pair()
        client.ask(command)
        client.client.receive_data(encode_response(response))
        with pytest.raises(RemoteProtocolError) as remote:
            client.client.next_event()
        _unexpected(remote.value)
        assert client.client.state is ControlState.ERROR

    @pytest.mark.parametrize("command", list(ControlCommand))
    @pytest.mark.parametrize("response", EVERY_RESPONSE, ids=lambda r: type(r).__name__)
    def test_nothing_after_the_terminal_answer(
        self, command: ControlCommand, response: ControlResponse
    ) -> None:
        """After the terminal answer, every frame is unexpected on both ends."""
        pair = Pair()
        pair.ask(command)
        pair.answer(ANSWERS[command])
        with pytest.raises(LocalProtocolError):
            pair.server.send(response)
        pair.client.receive_data(encode_response(response))
        with pytest.raises(RemoteProtocolError):
            pair.client.next_event()

    @pytest.mark.parametrize("response", EVERY_RESPONSE, ids=lambda r: type(r).__name__)
    def test_no_answer_before_the_request(self, response: ControlResponse) -> None:
        """An answer before any request is unexpected on both ends."""
        with pytest.raises(LocalProtocolError):
            ServerConversation(CREDENTIAL).send(response)
        client = ClientConversation()
        client.receive_data(encode_response(response))
        with pytest.raises(RemoteProtocolError):
            client.next_event()

    def test_one_request_per_connection(self) -> None:
        """A second request is refused by the client end and by the server end."""
        pair = Pair()
        pair.ask(ControlCommand.STATUS)
        request = ControlRequest(ControlCommand.STATUS, CREDENTIAL)
        with pytest.raises(LocalProtocolError):
            pair.client.send(request)
        pair.server.receive_data(encode_request(request))
        with pytest.raises(RemoteProtocolError) as info:
            pair.server.next_event()
        _unexpected(info.value)

    def test_broken_client_stays_broken(self) -> None:
        """After a violation, every use of the client end raises."""
        client = ClientConversation()
        client.send(ControlRequest(ControlCommand.STATUS, CREDENTIAL))
        client.receive_data(encode_response(STOPPED))
        with pytest.raises(RemoteProtocolError):
            client.next_event()
        with pytest.raises(LocalProtocolError):
            client.next_event()
        with pytest.raises(LocalProtocolError):
            client.send(ControlRequest(ControlCommand.STATUS, CREDENTIAL))


# -- properties ------------------------------------------------------------------------

FUZZ = settings(max_examples=200, deadline=None)


@FUZZ
@given(
    command=st.sampled_from(ControlCommand),
    answers=st.lists(st.sampled_from(EVERY_RESPONSE), max_size=6),
)
def test_both_ends_apply_the_same_rules(
    command: ControlCommand, answers: list[ControlResponse]
) -> None:
    """Whatever the server tries to send, the client accepts exactly what it may send."""
    pair = Pair()
    pair.ask(command)
    for response in answers:
        data = encode_response(response)
        try:
            pair.server.send(response)
        except LocalProtocolError:
            pair.client.receive_data(data)
            with pytest.raises(RemoteProtocolError):
                pair.client.next_event()
            return
        pair.client.receive_data(data)
        assert pair.client.next_event() == response
        assert pair.client.state is pair.server.state


@FUZZ
@given(
    command=st.sampled_from(ControlCommand),
    chunks=st.lists(st.binary(min_size=1, max_size=64), max_size=12),
)
def test_arbitrary_bytes_never_crash_the_client(
    command: ControlCommand, chunks: list[bytes]
) -> None:
    """Any bytes: answers, Need, or a ProtocolError; never another exception."""
    client = ClientConversation()
    client.send(ControlRequest(command, CREDENTIAL))
    try:
        for chunk in [*chunks, b""]:
            client.receive_data(chunk)
            while not isinstance(client.next_event(), Need):
                pass
    except ProtocolError:
        assert client.state is ControlState.ERROR


@FUZZ
@given(chunks=st.lists(st.binary(min_size=1, max_size=64), max_size=12))
def test_arbitrary_bytes_never_crash_the_server(chunks: list[bytes]) -> None:
    """Any bytes: a request, Need, or a ProtocolError; never another exception."""
    server = ServerConversation(CREDENTIAL)
    try:
        for chunk in [*chunks, b""]:
            server.receive_data(chunk)
            if server.next_event() is not Need.DATA:
                return
    except ProtocolError:
        assert server.state is ControlState.ERROR


@FUZZ
@given(
    command=st.sampled_from(ControlCommand),
    cuts=st.lists(st.integers(0, 400), max_size=8),
)
def test_request_chunking_does_not_matter(command: ControlCommand, cuts: list[int]) -> None:
    """The request is the same however the stream is cut."""
    data = encode_request(ControlRequest(command, CREDENTIAL))
    server = ServerConversation(CREDENTIAL)
    bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    event: ControlRequest | Need = Need.DATA
    for start, end in itertools.pairwise(bounds):
        assert event is Need.DATA
        server.receive_data(data[start:end])
        event = server.next_event()
    assert event == ControlRequest(command, CREDENTIAL)
