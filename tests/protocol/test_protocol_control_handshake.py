"""The control handshake's proofs, without sockets: only an end holding the credential proves
itself, over a transcript bound to the endpoint; the credential never travels; which frames
are sealed; the old protocol version is refused; and the MAC is HMAC-SHA256 byte for byte.
"""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from conversation_pairs import ADDRESS, CREDENTIAL, PROGRESS, STATUS, STOPPED, Pair
from handshake_refusals import refused_by_server
from hypothesis import given
from hypothesis import strategies as st

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    Hello,
    StatusResponse,
    encode_request,
    encode_response,
    open_response,
)
from coretsia.worker_protocol.control_auth import Role, Transcript
from coretsia.worker_protocol.control_conversation import (
    ClientConversation,
    ControlState,
    CredentialRefusedError,
    ServerConversation,
)
from coretsia.worker_protocol.exceptions import LocalProtocolError, RemoteProtocolError
from coretsia.worker_protocol.vocabulary import ControlCommand, Transport

OTHER = "d" * 64


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

        refused_by_server(server, encode_request(ControlRequest(ControlCommand.STOP), seal))

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


@given(
    bodies=st.lists(st.binary(max_size=300).filter(lambda b: b"\n" not in b), max_size=5),
    role=st.sampled_from(Role),
)
def test_the_mac_is_hmac_sha256_of_the_documented_message(bodies: list[bytes], role: Role) -> None:
    """The MAC is HMAC-SHA256 over the message ``control_auth``'s doc spells out, in hex."""
    transcript = Transcript(CREDENTIAL, Transport.UNIX, ADDRESS)
    for body in bodies:
        transcript.add(body)
    message = b"\0".join((b"coretsia-control-v2", role.value.encode(), b"unix", ADDRESS.encode()))
    message += b"\0" + b"".join(body + b"\n" for body in bodies)
    key = bytes.fromhex(CREDENTIAL)
    assert transcript.mac(role) == hmac.new(key, message, hashlib.sha256).hexdigest()
