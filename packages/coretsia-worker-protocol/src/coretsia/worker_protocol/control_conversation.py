"""The control conversation, sans-IO: which frames may follow which on one connection.

The codec (:mod:`~coretsia.worker_protocol.control`) says what one frame may contain; this
module says in what order frames may travel, for both ends, so that no I/O code carries a
rule of its own. It is h11's ``Connection`` in miniature: feed received bytes with
``receive_data``, ask ``next_event`` for the next frame (or :data:`Need.DATA
<coretsia.worker_protocol.framing.Need>` / :data:`Need.CLOSED
<coretsia.worker_protocol.framing.Need>`), and turn a frame to send into bytes with
``send``. :class:`~coretsia.worker_protocol.client.ControlClient` drives a
:class:`ClientConversation` over a blocking socket; the supervisor's control server drives
a :class:`ServerConversation` over a trio socket; a third party may drive either over
anything.

The rules (all of them live here; both ends apply the same ones):

1. A connection carries one request, client to server.
2. The request carries this supervisor's credential, compared in constant time. One that
   does not is refused (:class:`CredentialRefusedError`): like a request that does not
   decode, it gets no answer at all, the server closes in silence. To a client, a close
   before the terminal answer is exactly how a refusal looks.
3. ``status`` and ``health`` get exactly one answer: their own kind, or ``error``.
4. ``stop`` gets zero or more ``stop-progress``, then one terminal answer: ``stopped`` or
   ``error``.
5. Nothing follows the terminal answer; the server closes.
6. A frame out of this order is ``worker-frame-unexpected``: a
   :class:`~coretsia.worker_protocol.exceptions.LocalProtocolError` for the end asked to
   send it, a :class:`~coretsia.worker_protocol.exceptions.RemoteProtocolError` for the
   end that received it (or any frame that does not decode). Either way the conversation
   is over (:attr:`ControlState.ERROR`) and any later use raises again.

A handshake (mutual challenge-response authentication) fits as one more state before
:attr:`ControlState.REQUEST`: its frames move the conversation there, and rule 2's
credential check becomes the handshake's proof.
"""

from __future__ import annotations

import enum

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control import (
    ControlRequest,
    ErrorResponse,
    HealthResponse,
    StatusResponse,
    StoppedResponse,
    StopProgress,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
)
from coretsia.worker_protocol.framing import LineFramer, Need
from coretsia.worker_protocol.vocabulary import ControlCommand

# Not ``from typing import ...``: the client imports this module on every probe, where
# importing typing costs milliseconds; type checkers honour a module-level TYPE_CHECKING.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final, TypeVar

    from coretsia.worker_protocol.control import ControlResponse

    F = TypeVar("F")


class ControlState(enum.Enum):
    """Where one control connection stands; the same for both of its ends."""

    REQUEST = "request"
    """No request yet: the client's to send, the server's to read."""
    ANSWER = "answer"
    """``status`` or ``health`` was asked: one answer follows."""
    STOPPING = "stopping"
    """``stop`` was asked: ``stop-progress`` lines, then the terminal answer."""
    DONE = "done"
    """The terminal answer went: only the close follows."""
    CLOSED = "closed"
    """The stream ended cleanly (before a request, before or after the answer)."""
    ERROR = "error"
    """A rule was broken (or the peer's bytes did not decode): the conversation is over."""


_TERMINAL: Final[dict[ControlCommand, tuple[type, ...]]] = {
    ControlCommand.STATUS: (StatusResponse, ErrorResponse),
    ControlCommand.HEALTH: (HealthResponse, ErrorResponse),
    ControlCommand.STOP: (StoppedResponse, ErrorResponse),
}
"""The answers that end the conversation, per command (rules 3 and 4)."""


class CredentialRefusedError(RemoteProtocolError):
    """Raised by the server's end when a request carries the wrong credential (rule 2).

    A protocol error of its own so the server can count it apart from garbage; it names
    the field, never the value.
    """

    def __init__(
        self, reason: Reason = Reason.FRAME_INVALID_VALUE, path: str = "$.credential"
    ) -> None:
        super().__init__(reason, path)


class _Conversation:
    """What both ends share: the framer, the state, and the rules about answers."""

    __slots__ = ("_command", "_framer", "state")

    def __init__(self) -> None:
        self._framer = LineFramer()
        self._command: ControlCommand | None = None
        self.state = ControlState.REQUEST

    def receive_data(self, data: bytes) -> None:
        """Buffer bytes read from the peer; ``b""`` means the peer closed the stream."""
        self._framer.receive_data(data)

    def _read(self, accept: Callable[[bytes], F]) -> F | Need:
        """The next frame as ``accept`` takes it, or what is needed first (rule 6)."""
        self._check_usable()
        try:
            line = self._framer.next_frame()
            if line is Need.CLOSED:
                self.state = ControlState.CLOSED
                return line
            if line is Need.DATA:
                return line
            return accept(line)
        except LocalProtocolError as exc:  # the peer made us break a rule: its fault
            self.state = ControlState.ERROR
            raise RemoteProtocolError(exc.reason, exc.path) from None
        except ProtocolError:
            self.state = ControlState.ERROR
            raise

    def _check_usable(self) -> None:
        if self.state is ControlState.ERROR:
            raise LocalProtocolError(Reason.FRAME_UNEXPECTED)

    def _request(self, request: ControlRequest) -> None:
        """Rule 1: one request, first."""
        self._require(self.state is ControlState.REQUEST)
        self._command = request.command
        stop = request.command is ControlCommand.STOP
        self.state = ControlState.STOPPING if stop else ControlState.ANSWER

    def _answer(self, response: ControlResponse) -> None:
        """Rules 3 to 5: progress only while stopping, then one terminal answer."""
        if isinstance(response, StopProgress):
            self._require(self.state is ControlState.STOPPING)
            return
        self._require(self.state in (ControlState.ANSWER, ControlState.STOPPING))
        assert self._command is not None  # set with the state by _request
        self._require(isinstance(response, _TERMINAL[self._command]))
        self.state = ControlState.DONE

    def _require(self, allowed: bool) -> None:
        if not allowed:
            self.state = ControlState.ERROR
            raise LocalProtocolError(Reason.FRAME_UNEXPECTED)


class ClientConversation(_Conversation):
    """The client's end: send one request, then read its answers."""

    __slots__ = ()

    def send(self, request: ControlRequest) -> bytes:
        """The request's bytes; only one, and only first."""
        self._check_usable()
        self._request(request)
        return encode_request(request)

    def next_event(self) -> ControlResponse | Need:
        """The next answer (``stop-progress`` or the terminal one), or what is needed.

        :data:`Need.CLOSED <coretsia.worker_protocol.framing.Need>` before the terminal
        answer (:attr:`state` is not ``DONE``) is a refusal or a crash: no answer came.
        """
        return self._read(self._accept)

    def _accept(self, line: bytes) -> ControlResponse:
        response = decode_response(line)
        self._answer(response)
        return response


class ServerConversation(_Conversation):
    """The server's end: read one request with this supervisor's credential, answer it."""

    __slots__ = ("_credential",)

    def __init__(self, credential: str) -> None:
        super().__init__()
        self._credential = credential

    def next_event(self) -> ControlRequest | Need:
        """The request, or what is needed; a refused one raises (and gets no answer)."""
        return self._read(self._accept)

    def send(self, response: ControlResponse) -> bytes:
        """One answer's bytes, if the conversation allows it now."""
        self._check_usable()
        self._answer(response)
        return encode_response(response)

    def _accept(self, line: bytes) -> ControlRequest:
        request = decode_request(line)
        # Imported here: the client side of this module never needs it, and hmac brings
        # hashlib (OpenSSL) with it, a cost the probe path does not pay.
        import hmac

        if not hmac.compare_digest(request.credential, self._credential):
            raise CredentialRefusedError
        self._request(request)
        return request
