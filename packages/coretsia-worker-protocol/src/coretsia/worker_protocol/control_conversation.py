"""The control conversation, sans-IO: which frames may follow which, and who proves what.

The codec (:mod:`~coretsia.worker_protocol.control`) says what one frame may contain; this
module says in what order frames may travel and which MAC each must carry, for both ends,
so that no I/O code carries a rule of its own: the rules are the control table
(:data:`TABLE`) and the proofs, run by the one conversation engine of every channel
(:mod:`~coretsia.worker_protocol.conversation_engine`), an end being its role, as in
h11's ``Connection``:
feed received bytes with ``receive_data``, ask ``next_event`` for the next frame (or
:data:`Need.DATA <coretsia.worker_protocol.framing.Need>` / :data:`Need.CLOSED
<coretsia.worker_protocol.framing.Need>`), and turn a frame to send into bytes.
:class:`~coretsia.worker_protocol.client.ControlClient` drives a
:class:`ClientConversation` over a blocking socket; the supervisor's control server drives
a :class:`ServerConversation` over a trio socket; a third party may drive either over
anything.

The rules (all of them live here; both ends apply the same ones):

1. The client opens with ``hello``: its fresh nonce, nothing secret.
2. The server answers with ``challenge``: its own fresh nonce, sealed with its proof. The
   client checks the proof before it sends anything more; a server that cannot prove it
   holds the credential is refused (:class:`CredentialRefusedError`) and never learns
   even the command.
3. The client then sends one ``request`` (the command), sealed with its proof. A wrong
   proof is refused (:class:`CredentialRefusedError`): like a frame that does not
   decode, it gets no answer at all, the server closes in silence. To a client, a close
   before the terminal answer is exactly how a refusal looks.
4. ``status`` and ``health`` get exactly one answer: their own kind, or ``error``.
5. ``stop`` gets zero or more ``stop-progress``, then one terminal answer: ``stopped`` or
   ``error``.
6. Nothing follows the terminal answer; the server closes.
7. Every frame but ``hello`` is sealed: its ``mac`` is its sender's MAC over the whole
   conversation up to it (:mod:`~coretsia.worker_protocol.control_auth`). A sealed frame
   without one is ``worker-frame-missing-key``; a ``hello`` with one,
   ``worker-frame-unknown-key``; a wrong one, :class:`CredentialRefusedError`.
8. A frame out of this order is ``worker-frame-unexpected``: a
   :class:`~coretsia.worker_protocol.exceptions.LocalProtocolError` for the end asked to
   send it, a :class:`~coretsia.worker_protocol.exceptions.RemoteProtocolError` for the
   end that received it (or any frame that does not decode, a version 1 frame
   included). Either way the conversation is over (:attr:`ControlState.ERROR`) and any
   later use raises again.
"""

from __future__ import annotations

import enum

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    ErrorResponse,
    HealthResponse,
    Hello,
    StatusResponse,
    StoppedResponse,
    StopProgress,
    encode_request,
    encode_response,
    open_request,
    open_response,
)
from coretsia.worker_protocol.control_auth import Role, Transcript, fresh_nonce
from coretsia.worker_protocol.conversation_engine import CLOSE, Conversation, Table
from coretsia.worker_protocol.exceptions import LocalProtocolError, RemoteProtocolError
from coretsia.worker_protocol.vocabulary import ControlCommand, Transport

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import Any, Final

    from coretsia.worker_protocol.control import ControlResponse
    from coretsia.worker_protocol.framing import Need


class ControlState(enum.Enum):
    """Where one control connection stands; the same for both of its ends."""

    HELLO = "hello"
    """Nothing yet: the client's ``hello`` is to go first."""
    CHALLENGE = "challenge"
    """The ``hello`` went: the server's sealed ``challenge`` is next."""
    REQUEST = "request"
    """The server proved itself: the client's sealed request is next."""
    ANSWER = "answer"
    """``status`` or ``health`` was asked: one answer follows."""
    STOPPING = "stopping"
    """``stop`` was asked: ``stop-progress`` lines, then the terminal answer."""
    DONE = "done"
    """The terminal answer went: only the close follows."""
    CLOSED = "closed"
    """The stream ended cleanly between frames (before the terminal answer: a refusal)."""
    ERROR = "error"
    """A rule was broken (or the peer's bytes did not decode): the conversation is over."""


def _kind(frame: object) -> object:
    """A request is keyed by its command (rules 4 and 5), any other frame by its class."""
    return frame.command if isinstance(frame, ControlRequest) else type(frame)


_C, _S, _St = Role.CLIENT, Role.SERVER, ControlState
_OPEN: Final = tuple(state for state in ControlState if state is not ControlState.ERROR)

TABLE: Final = Table(
    ControlState.HELLO,
    (_C, _S),
    [
        (_St.HELLO, _C, (Hello,), _St.CHALLENGE),  # rule 1
        (_St.CHALLENGE, _S, (Challenge,), _St.REQUEST),  # rule 2
        (_St.REQUEST, _C, (ControlCommand.STATUS, ControlCommand.HEALTH), _St.ANSWER),  # 3
        (_St.REQUEST, _C, (ControlCommand.STOP,), _St.STOPPING),
        (_St.ANSWER, _S, (StatusResponse, HealthResponse, ErrorResponse), _St.DONE),  # 4
        (_St.STOPPING, _S, (StopProgress,), _St.STOPPING),  # rule 5
        (_St.STOPPING, _S, (StoppedResponse, ErrorResponse), _St.DONE),
        (_OPEN, _C, (CLOSE,), _St.CLOSED),  # rule 6: before the end, a refusal
        (_OPEN, _S, (CLOSE,), _St.CLOSED),
    ],
    broken=ControlState.ERROR,
    kind=_kind,
)
"""Every legal move of the control channel (rules 1 to 6): ``(state, role, kind) -> state``."""

_TERMINAL: Final[dict[ControlCommand, tuple[type, ...]]] = {
    ControlCommand.STATUS: (StatusResponse, ErrorResponse),
    ControlCommand.HEALTH: (HealthResponse, ErrorResponse),
    ControlCommand.STOP: (StoppedResponse, ErrorResponse),
}
"""The answers that end the conversation, per command (rules 4 and 5)."""


class CredentialRefusedError(RemoteProtocolError):
    """Raised by either end when the peer's MAC is wrong: it does not hold the credential.

    A protocol error of its own so the server can count it apart from garbage and the
    client can tell a forged server from a broken one; it names the field, never a value.
    """

    def __init__(self, reason: Reason = Reason.FRAME_INVALID_VALUE, path: str = "$.mac") -> None:
        super().__init__(reason, path)


class _ControlConversation(Conversation):
    """One end of a control connection, by its role: the table, the transcript, rule 7."""

    __slots__ = ("_command", "_nonce", "_opened", "_transcript")

    def __init__(
        self,
        role: Role,
        credential: str,
        transport: Transport,
        address: str,
        *,
        nonce: str | None = None,
    ) -> None:
        """``credential`` from the locator (or the server's memory), ``transport`` and
        ``address`` the endpoint as the locator names it (:attr:`Locator.address
        <coretsia.worker_protocol.locator.Locator.address>`). ``nonce`` is for tests
        only: by default each conversation draws a fresh one."""
        super().__init__(TABLE, role)
        self._transcript = Transcript(credential, transport, address)
        self._nonce = fresh_nonce() if nonce is None else nonce
        self._command: ControlCommand | None = None
        self._opened: tuple[bytes, str | None] = (b"", None)

    def _encode(self, frame: Any) -> bytes:
        """A frame's line, sealed unless it is the ``hello`` (rule 7)."""

        def seal(body: bytes) -> str | None:
            self._transcript.add(body)
            return None if isinstance(frame, Hello) else self._transcript.mac(Role(self.role))

        if self.role is Role.CLIENT:
            return encode_request(frame, seal)
        return encode_response(frame, seal)

    def _decode(self, data: bytes) -> Any:
        opened = open_response(data) if self.role is Role.CLIENT else open_request(data)
        frame, *self._opened = opened  # type: ignore[assignment]
        return frame

    def _check(self, frame: object, *, ours: bool) -> None:
        """Rules 4 and 5: the terminal answer is the command's."""
        if isinstance(frame, ControlRequest):
            self._command = frame.command
        elif (
            self._command is not None
            and not isinstance(frame, StopProgress)
            and not isinstance(frame, _TERMINAL[self._command])
        ):
            raise (LocalProtocolError if ours else RemoteProtocolError)(Reason.FRAME_UNEXPECTED)

    def _moved(self, frame: object, *, ours: bool) -> None:
        """Rule 7 on a received frame, once it is in its place: proved to be the peer's."""
        if ours:
            return
        body, mac = self._opened
        self._transcript.add(body)
        if isinstance(frame, Hello):
            if mac is not None:
                raise RemoteProtocolError(Reason.FRAME_UNKNOWN_KEY)
        elif mac is None:
            raise RemoteProtocolError(Reason.FRAME_MISSING_KEY, "$.mac")
        elif not self._transcript.verify(Role(self.table.peer(self.role)), mac):
            raise CredentialRefusedError


class ClientConversation(_ControlConversation):
    """The client's end: ``hello``, check the server's proof, one request, its answers."""

    __slots__ = ()

    def __init__(
        self, credential: str, transport: Transport, address: str, *, nonce: str | None = None
    ) -> None:
        super().__init__(Role.CLIENT, credential, transport, address, nonce=nonce)

    def hello(self) -> bytes:
        """The first bytes to send: a fresh nonce, nothing secret."""
        return self.send(Hello(self._nonce))

    def send(self, request: ControlRequest | Hello) -> bytes:
        """The request's bytes, sealed; only once the server has proved itself."""
        return super().send(request)

    def next_event(self) -> Challenge | ControlResponse | Need:
        """The server's challenge (proved), then its answers (each proved), or what is needed.

        A :class:`Challenge` means the server holds the credential: send the request.
        :data:`Need.CLOSED <coretsia.worker_protocol.framing.Need>` before the terminal
        answer (:attr:`state` is not ``DONE``) is a refusal or a crash: no answer came.
        """
        event: Challenge | ControlResponse | Need = super().next_event()
        return event


class ServerConversation(_ControlConversation):
    """The server's end: read ``hello``, prove itself, read one proved request, answer it."""

    __slots__ = ()

    def __init__(
        self, credential: str, transport: Transport, address: str, *, nonce: str | None = None
    ) -> None:
        super().__init__(Role.SERVER, credential, transport, address, nonce=nonce)

    def next_event(self) -> Hello | ControlRequest | Need:
        """The ``hello`` (answer it with :meth:`challenge`), then the request, or what is
        needed; a request whose proof is wrong raises (and gets no answer)."""
        event: Hello | ControlRequest | Need = super().next_event()
        return event

    def challenge(self) -> bytes:
        """The answer to ``hello``: this end's nonce, sealed with its proof."""
        return self.send(Challenge(self._nonce))

    def send(self, response: ControlResponse | Challenge) -> bytes:
        """One answer's bytes, sealed, if the conversation allows it now."""
        return super().send(response)
