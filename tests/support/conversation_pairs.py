"""Control conversations joined in memory, for the sans-IO tests (helpers).

Imported by test modules as ``conversation_pairs`` (``tests/support`` is on pytest's
pythonpath). Like h11's ``ConnectionPair``: a :class:`Pair` wires a client and a server
conversation together, so a test reads as the exchange it checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coretsia.worker_protocol.catalogue import HealthReason, Reason
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    ControlResponse,
    ErrorResponse,
    HealthResponse,
    Hello,
    PoolSummary,
    StatusResponse,
    StoppedResponse,
    StopProgress,
    encode_response,
)
from coretsia.worker_protocol.control_conversation import (
    ClientConversation,
    ServerConversation,
)
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.vocabulary import (
    ControlCommand,
    Driver,
    PoolStatus,
    ShutdownPhase,
    Transport,
)

CREDENTIAL = "c" * 64
ADDRESS = "var/tmp/worker.sock"
FORGED_MAC = "f" * 64
"""A MAC of the right shape that proves nothing."""

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


def forged(frame: Any, encode: Callable[..., bytes] = encode_response) -> bytes:
    """``frame``'s line sealed with a MAC that proves nothing (``encode_response`` by
    default, ``encode_request`` for a client's frame)."""
    data: bytes = encode(frame, lambda _body: FORGED_MAC)
    return data


class Pair:
    """A client and a server conversation joined in memory.

    Each end may hold its own credential, transport and address, so a test can make them
    disagree on exactly one.
    """

    def __init__(
        self,
        credential: str = CREDENTIAL,
        *,
        server_credential: str = CREDENTIAL,
        transport: Transport = Transport.UNIX,
        address: str = ADDRESS,
    ) -> None:
        self.client = ClientConversation(credential, transport, address)
        self.server = ServerConversation(server_credential, Transport.UNIX, ADDRESS)

    def hello(self) -> Hello | ControlRequest | Need:
        """The client's hello; what the server makes of it."""
        self.server.receive_data(self.client.hello())
        return self.server.next_event()

    def handshake(self) -> Challenge | ControlResponse | Need:
        """hello and challenge; what the client makes of the challenge."""
        assert isinstance(self.hello(), Hello)
        self.client.receive_data(self.server.challenge())
        return self.client.next_event()

    def ask(self, command: ControlCommand) -> Hello | ControlRequest | Need:
        """The handshake, then the client's request; what the server makes of it."""
        assert isinstance(self.handshake(), Challenge)
        self.server.receive_data(self.client.send(ControlRequest(command)))
        return self.server.next_event()

    def answer(self, response: ControlResponse) -> Challenge | ControlResponse | Need:
        """The server sends an answer; what the client makes of it."""
        self.client.receive_data(self.server.send(response))
        return self.client.next_event()
