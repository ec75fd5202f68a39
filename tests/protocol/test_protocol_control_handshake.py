"""The control handshake's proofs, without sockets: the attacks it must stop.

A wrong MAC on either side, replays from another connection, reflection of one end's
proof as the other's, substitution of an answer, truncation and reordering, the old
protocol version, and a property: any change to any byte of any sealed frame is refused.
"""

from __future__ import annotations

import json

import pytest
from conversation_pairs import (
    ADDRESS,
    ANSWERS,
    CREDENTIAL,
    HEALTH,
    PROGRESS,
    STATUS,
    STOPPED,
    Pair,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    ControlResponse,
    Hello,
    StatusResponse,
    StopProgress,
    encode_request,
    encode_response,
    open_response,
)
from coretsia.worker_protocol.control_auth import Role, Transcript, hmac_sha256
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
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.vocabulary import ControlCommand, ShutdownPhase, Transport

OTHER = "d" * 64


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


def _refused_by_client(client: ClientConversation, data: bytes) -> None:
    client.receive_data(data)
    with pytest.raises(CredentialRefusedError) as info:
        client.next_event()
    assert (info.value.reason, info.value.path) == (Reason.FRAME_INVALID_VALUE, "$.mac")
    assert client.state is ControlState.ERROR


def _refused_by_server(server: ServerConversation, data: bytes) -> None:
    server.receive_data(data)
    with pytest.raises(CredentialRefusedError):
        server.next_event()
    assert server.state is ControlState.ERROR
    with pytest.raises(LocalProtocolError):  # silence: nothing can be answered
        server.send(STATUS)


class TestProofs:
    def test_a_server_without_the_credential_learns_nothing(self) -> None:
        """A server that cannot prove itself is refused, and the client then sends no
        command: it cannot, its end is over."""
        pair = Pair(server_credential=OTHER)
        with pytest.raises(CredentialRefusedError):
            pair.handshake()
        assert pair.client.state is ControlState.ERROR
        with pytest.raises(LocalProtocolError):
            pair.client.send(ControlRequest(ControlCommand.STATUS))

    def test_a_client_without_the_credential_is_refused(self) -> None:
        """A client that skips checking the server and seals its request with another
        credential, over the very transcript, gets no answer."""
        server = ServerConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        rogue = Transcript(OTHER, Transport.UNIX, ADDRESS)
        hello = encode_request(Hello("1" * 64))
        rogue.add(hello[:-1])
        server.receive_data(hello)
        assert isinstance(server.next_event(), Hello)
        rogue.add(open_response(server.challenge())[1])

        def seal(body: bytes) -> str:
            rogue.add(body)
            return rogue.mac(Role.CLIENT)

        _refused_by_server(server, encode_request(ControlRequest(ControlCommand.STOP), seal))

    def test_the_same_steps_with_the_credential_pass(self) -> None:
        """The rogue client of the test above, holding the credential: accepted (so the
        transcript is exactly as the module documents it)."""
        server = ServerConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        honest = Transcript(CREDENTIAL, Transport.UNIX, ADDRESS)
        hello = encode_request(Hello("1" * 64))
        honest.add(hello[:-1])
        server.receive_data(hello)
        server.next_event()
        _challenge, body, mac = open_response(server.challenge())
        honest.add(body)
        assert mac == honest.mac(Role.SERVER)

        def seal(body: bytes) -> str:
            honest.add(body)
            return honest.mac(Role.CLIENT)

        server.receive_data(encode_request(ControlRequest(ControlCommand.STOP), seal))
        assert server.next_event() == ControlRequest(ControlCommand.STOP)

    @pytest.mark.parametrize(
        ("transport", "address"),
        [(Transport.UNIX, "var/tmp/other.sock"), (Transport.TCP, ADDRESS)],
        ids=["address", "transport"],
    )
    def test_proofs_are_bound_to_the_endpoint(self, transport: Transport, address: str) -> None:
        """A server's proof for another endpoint does not convince the client."""
        pair = Pair(transport=transport, address=address)
        with pytest.raises(CredentialRefusedError):
            pair.handshake()

    def test_the_credential_never_travels(self) -> None:
        """No byte either end sends holds the credential, in hex or raw."""
        pair = Pair()
        sent = [pair.client.hello()]
        pair.server.receive_data(sent[-1])
        pair.server.next_event()
        sent.append(pair.server.challenge())
        pair.client.receive_data(sent[-1])
        pair.client.next_event()
        sent.append(pair.client.send(ControlRequest(ControlCommand.STOP)))
        pair.server.receive_data(sent[-1])
        pair.server.next_event()
        sent += [pair.server.send(PROGRESS), pair.server.send(STOPPED)]
        wire = b"".join(sent)
        assert CREDENTIAL.encode() not in wire
        assert bytes.fromhex(CREDENTIAL) not in wire

    def test_the_hello_says_nothing_but_a_fresh_nonce(self) -> None:
        """The hello is a nonce, no MAC, no command; a new one each conversation."""
        first = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS).hello()
        second = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS).hello()
        assert set(json.loads(first)) == {"client_nonce", "type", "version"}
        assert first != second

    def test_roles_seal_differently(self) -> None:
        """Over one transcript, the client's MAC and the server's differ."""
        transcript = Transcript(CREDENTIAL, Transport.UNIX, ADDRESS)
        transcript.add(b"{}")
        assert transcript.mac(Role.CLIENT) != transcript.mac(Role.SERVER)


class TestReplay:
    def test_an_old_challenge_does_not_prove_a_server(self) -> None:
        """A challenge recorded from another connection fails the new client's check."""
        _, challenge, _ = _session()
        client = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        client.hello()
        _refused_by_client(client, challenge)

    def test_an_old_request_does_not_prove_a_client(self) -> None:
        """A request recorded from another connection is refused after a new handshake."""
        _, _, request = _session(ControlCommand.STOP)
        pair = Pair()
        pair.handshake()
        _refused_by_server(pair.server, request)

    def test_an_old_answer_does_not_answer(self) -> None:
        """An answer recorded from another connection is refused by the new client."""
        old, _, _ = _session()
        recorded = old.server.send(STATUS)
        pair = Pair()
        pair.ask(ControlCommand.STATUS)
        _refused_by_client(pair.client, recorded)


class TestReflection:
    def test_the_servers_proof_is_not_the_clients(self) -> None:
        """The challenge's MAC sent back as the request's is refused."""
        pair = Pair()
        pair.hello()
        challenge = pair.server.challenge()
        mac = json.loads(challenge)["mac"]
        _refused_by_server(
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
        _refused_by_client(mine.client, theirs.server.send(HEALTH))

    def test_an_altered_answer(self) -> None:
        """A status whose ready count was changed in transit is refused."""
        pair = Pair()
        pair.ask(ControlCommand.STATUS)
        obj = json.loads(pair.server.send(STATUS))
        obj["ready_worker_count"] = 0
        _refused_by_client(pair.client, json.dumps(obj).encode() + b"\n")


class TestTruncation:
    def test_a_dropped_progress_line(self) -> None:
        """A stop-progress dropped in transit fails the next frame's check."""
        pair = Pair()
        pair.ask(ControlCommand.STOP)
        assert pair.answer(StopProgress(ShutdownPhase.COOPERATIVE, 10)) is not None
        pair.server.send(StopProgress(ShutdownPhase.TERMINATE, 10))  # never delivered
        _refused_by_client(pair.client, pair.server.send(STOPPED))

    def test_reordered_progress_lines(self) -> None:
        """Two progress lines swapped in transit are refused."""
        pair = Pair()
        pair.ask(ControlCommand.STOP)
        first = pair.server.send(StopProgress(ShutdownPhase.COOPERATIVE, 10))
        second = pair.server.send(StopProgress(ShutdownPhase.TERMINATE, 10))
        _refused_by_client(pair.client, second + first)

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


class TestSealRules:
    @pytest.mark.parametrize(
        "frame",
        [Challenge("1" * 64), STATUS],
        ids=["challenge", "answer"],
    )
    def test_a_server_frame_without_a_mac(self, frame: Challenge | StatusResponse) -> None:
        """Every server frame is sealed: one without a mac is missing its key."""
        pair = Pair()
        if isinstance(frame, Challenge):
            pair.client.hello()
        else:
            pair.ask(ControlCommand.STATUS)
        pair.client.receive_data(encode_response(frame))
        with pytest.raises(RemoteProtocolError) as info:
            pair.client.next_event()
        assert (info.value.reason, info.value.path) == (Reason.FRAME_MISSING_KEY, "$.mac")

    def test_a_request_without_a_mac(self) -> None:
        """The request is sealed: one without a mac is missing its key."""
        pair = Pair()
        pair.handshake()
        pair.server.receive_data(encode_request(ControlRequest(ControlCommand.STATUS)))
        with pytest.raises(RemoteProtocolError) as info:
            pair.server.next_event()
        assert (info.value.reason, info.value.path) == (Reason.FRAME_MISSING_KEY, "$.mac")

    def test_a_hello_with_a_mac(self) -> None:
        """The hello proves nothing, so it carries no mac: one that does is refused."""
        server = ServerConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        server.receive_data(encode_request(Hello("1" * 64), lambda _b: "0" * 64))
        with pytest.raises(RemoteProtocolError) as info:
            server.next_event()
        assert info.value.reason is Reason.FRAME_UNKNOWN_KEY

    def test_a_malformed_mac(self) -> None:
        """A mac that is not 64 lowercase hex characters is an invalid value."""
        pair = Pair()
        pair.client.hello()
        obj = json.loads(encode_response(Challenge("1" * 64), lambda _b: "0" * 64))
        obj["mac"] = "0" * 63
        pair.client.receive_data(json.dumps(obj).encode() + b"\n")
        with pytest.raises(RemoteProtocolError) as info:
            pair.client.next_event()
        assert (info.value.reason, info.value.path) == (Reason.FRAME_INVALID_VALUE, "$.mac")


class TestVersion1:
    def test_a_version_1_request_is_refused(self) -> None:
        """A version 1 client's request line is an unsupported version, not a hello."""
        server = ServerConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        line = json.dumps({"command": "status", "credential": CREDENTIAL, "version": 1})
        server.receive_data(line.encode() + b"\n")
        with pytest.raises(RemoteProtocolError) as info:
            server.next_event()
        assert info.value.reason is Reason.FRAME_UNSUPPORTED_VERSION
        assert server.state is ControlState.ERROR

    def test_a_version_1_answer_is_refused(self) -> None:
        """A version 1 server's answer, where the challenge belongs, is refused."""
        client = ClientConversation(CREDENTIAL, Transport.UNIX, ADDRESS)
        client.hello()
        line = json.loads(encode_response(STATUS))
        line["version"] = 1
        client.receive_data(json.dumps(line).encode() + b"\n")
        with pytest.raises(RemoteProtocolError) as info:
            client.next_event()
        assert info.value.reason is Reason.FRAME_UNSUPPORTED_VERSION


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


@given(key=st.binary(max_size=200), message=st.binary(max_size=2000))
def test_the_mac_is_hmac_sha256_byte_for_byte(key: bytes, message: bytes) -> None:
    """The probe's own HMAC (no OpenSSL import) is the standard library's, for any key length."""
    import hashlib
    import hmac

    assert hmac_sha256(key, message) == hmac.new(key, message, hashlib.sha256).digest()
