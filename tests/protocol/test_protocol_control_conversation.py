"""The control conversation, both ends, without sockets: every legal path, every illegal one.

Like h11's ``ConnectionPair``, a :class:`Pair` wires a client and a server conversation in
memory, so a test reads as the exchange it checks. The handshake's proofs (a wrong MAC on
either side) are in ``test_protocol_control_handshake.py``, its attacks (replays,
reflection, substitution, truncation) in ``test_protocol_control_attacks.py``.
"""

from __future__ import annotations

import itertools

import pytest
from conversation_pairs import (
    ADDRESS,
    ANSWERS,
    CREDENTIAL,
    ERROR,
    EVERY_RESPONSE,
    PROGRESS,
    STATUS,
    STOPPED,
    Pair,
    forged,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    ControlResponse,
    Hello,
    encode_request,
)
from coretsia.worker_protocol.control_conversation import (
    ClientConversation,
    ControlState,
    ServerConversation,
)
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
)
from coretsia.worker_protocol.framing import MAX_FRAME_BYTES, Need
from coretsia.worker_protocol.vocabulary import ControlCommand, Transport


def legal_terminals(command: ControlCommand) -> set[ControlResponse]:
    return {ANSWERS[command], ERROR}


class TestLegalConversations:
    def test_handshake_states(self) -> None:
        """hello, then the challenge: both ends stand at REQUEST, the server proven."""
        pair = Pair()
        states = [(pair.client.state, pair.server.state)]
        pair.server.receive_data(pair.client.hello())
        states.append((pair.client.state, pair.server.state))
        assert isinstance(pair.server.next_event(), Hello)
        states.append((pair.client.state, pair.server.state))
        pair.client.receive_data(pair.server.challenge())
        states.append((pair.client.state, pair.server.state))
        assert isinstance(pair.client.next_event(), Challenge)
        states.append((pair.client.state, pair.server.state))
        hello, challenge, request = ControlState.HELLO, ControlState.CHALLENGE, ControlState.REQUEST
        assert states == [
            (hello, hello),
            (challenge, hello),
            (challenge, challenge),
            (challenge, request),
            (request, request),
        ]

    @pytest.mark.parametrize("command", [ControlCommand.STATUS, ControlCommand.HEALTH])
    def test_status_and_health_get_one_answer(self, command: ControlCommand) -> None:
        """status and health: one request, one answer, then both ends are done."""
        pair = Pair()
        assert pair.ask(command) == ControlRequest(command)
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
        pair = Pair()
        pair.ask(ControlCommand.STATUS)
        for byte in pair.server.send(STATUS):
            assert pair.client.next_event() is Need.DATA
            pair.client.receive_data(bytes([byte]))
        assert pair.client.next_event() == STATUS


class TestRefusal:
    def test_client_sees_silence_as_a_close_before_the_answer(self) -> None:
        """A close before the challenge (a refusal, a version 1 server) is CLOSED, not DONE."""
        client = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        client.hello()
        client.receive_data(b"")
        assert client.next_event() is Need.CLOSED
        assert client.state is ControlState.CLOSED

    def test_close_before_a_hello(self) -> None:
        """A client that closes without a word leaves the server CLOSED."""
        server = ServerConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        server.receive_data(b"")
        assert server.next_event() is Need.CLOSED

    @pytest.mark.parametrize(
        "line", [b"\n", b"{}\n", b"not json\n", b'{"type":"hello","version":2}\n']
    )
    def test_garbage_is_a_remote_error(self, line: bytes) -> None:
        """A frame that does not decode is a RemoteProtocolError, and the end is over."""
        server = ServerConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        server.receive_data(line)
        with pytest.raises(RemoteProtocolError):
            server.next_event()
        assert server.state is ControlState.ERROR
        with pytest.raises(LocalProtocolError):
            server.next_event()

    def test_oversized_hello(self) -> None:
        """A line past the limit is refused before it ends."""
        server = ServerConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
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
        client.client.receive_data(forged(response))
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
        pair.client.receive_data(forged(response))
        with pytest.raises(RemoteProtocolError):
            pair.client.next_event()

    @pytest.mark.parametrize(
        "frame", [Challenge("1" * 64), *EVERY_RESPONSE], ids=lambda r: type(r).__name__
    )
    def test_no_server_frame_before_the_hello(self, frame: Challenge | ControlResponse) -> None:
        """Nothing from the server before the client's hello, on either end."""
        server = ServerConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        with pytest.raises(LocalProtocolError) as local:
            server.challenge() if isinstance(frame, Challenge) else server.send(frame)
        _unexpected(local.value)
        client = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        client.receive_data(forged(frame))
        with pytest.raises(RemoteProtocolError) as remote:
            client.next_event()
        _unexpected(remote.value)

    @pytest.mark.parametrize("response", EVERY_RESPONSE, ids=lambda r: type(r).__name__)
    def test_no_answer_before_the_request(self, response: ControlResponse) -> None:
        """After the handshake, still no answer before the request, on either end."""
        pair = Pair()
        pair.handshake()
        with pytest.raises(LocalProtocolError):
            pair.server.send(response)
        pair = Pair()
        pair.handshake()
        pair.client.receive_data(forged(response))
        with pytest.raises(RemoteProtocolError) as remote:
            pair.client.next_event()
        _unexpected(remote.value)

    def test_no_request_before_the_server_proved_itself(self) -> None:
        """The client refuses to send its command before the challenge was checked, and
        the server refuses a request that comes before its challenge."""
        client = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        with pytest.raises(LocalProtocolError):
            client.send(ControlRequest(ControlCommand.STATUS))
        client = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        client.hello()
        with pytest.raises(LocalProtocolError):
            client.send(ControlRequest(ControlCommand.STATUS))
        request = forged(ControlRequest(ControlCommand.STATUS), encode_request)
        for hello_first in (False, True):
            server = ServerConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
            if hello_first:  # a hello, but no challenge sent yet: the request is early
                server.receive_data(encode_request(Hello("2" * 64)))
                assert isinstance(server.next_event(), Hello)
            server.receive_data(request)
            with pytest.raises(RemoteProtocolError) as info:
                server.next_event()
            _unexpected(info.value)

    def test_one_hello_and_one_challenge(self) -> None:
        """A second hello or challenge is refused by the sender's end and the receiver's."""
        pair = Pair()
        pair.handshake()
        with pytest.raises(LocalProtocolError):
            pair.client.hello()
        with pytest.raises(LocalProtocolError):
            pair.server.challenge()
        pair = Pair()
        pair.handshake()
        pair.server.receive_data(encode_request(Hello("2" * 64)))
        with pytest.raises(RemoteProtocolError) as info:
            pair.server.next_event()
        _unexpected(info.value)

    def test_one_request_per_connection(self) -> None:
        """A second request is refused by the client end and by the server end."""
        pair = Pair()
        pair.ask(ControlCommand.STATUS)
        request = ControlRequest(ControlCommand.STATUS)
        with pytest.raises(LocalProtocolError):
            pair.client.send(request)
        pair.server.receive_data(forged(request, encode_request))
        with pytest.raises(RemoteProtocolError) as info:
            pair.server.next_event()
        _unexpected(info.value)

    def test_broken_client_stays_broken(self) -> None:
        """After a violation, every use of the client end raises."""
        pair = Pair()
        pair.ask(ControlCommand.STATUS)
        pair.client.receive_data(forged(STOPPED))
        with pytest.raises(RemoteProtocolError):
            pair.client.next_event()
        with pytest.raises(LocalProtocolError):
            pair.client.next_event()
        with pytest.raises(LocalProtocolError):
            pair.client.send(ControlRequest(ControlCommand.STATUS))


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
        try:
            data = pair.server.send(response)
        except LocalProtocolError:
            pair.client.receive_data(forged(response))
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
    pair = Pair()
    pair.ask(command)
    client = pair.client
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
    """Any bytes: a frame, Need, or a ProtocolError; never another exception."""
    server = ServerConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
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
    pair = Pair()
    pair.handshake()
    data = pair.client.send(ControlRequest(command))
    bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    event: Hello | ControlRequest | Need = Need.DATA
    for start, end in itertools.pairwise(bounds):
        assert event is Need.DATA
        pair.server.receive_data(data[start:end])
        event = pair.server.next_event()
    assert event == ControlRequest(command)
