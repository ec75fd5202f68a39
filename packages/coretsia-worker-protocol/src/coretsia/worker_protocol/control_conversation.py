"""The control conversation, sans-IO: which frames may follow which, and who proves what.

The codec (:mod:`~coretsia.worker_protocol.control`) says what one frame may contain; this
module says in what order frames may travel and which MAC each must carry, for both ends,
so that no I/O code carries a rule of its own. It is h11's ``Connection`` in miniature:
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
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
)
from coretsia.worker_protocol.framing import LineFramer, Need
from coretsia.worker_protocol.vocabulary import ControlCommand, Transport

# Not ``from typing import ...``: the client imports this module on every probe, where
# importing typing costs milliseconds; type checkers honour a module-level TYPE_CHECKING.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import ClassVar, Final, TypeVar

    from coretsia.worker_protocol.control import ControlResponse, Seal

    F = TypeVar("F", Hello | ControlRequest, Challenge | ControlResponse)


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


_TERMINAL: Final[dict[ControlCommand, tuple[type, ...]]] = {
    ControlCommand.STATUS: (StatusResponse, ErrorResponse),
    ControlCommand.HEALTH: (HealthResponse, ErrorResponse),
    ControlCommand.STOP: (StoppedResponse, ErrorResponse),
}
"""The answers that end the conversation, per command (rules 4 and 5)."""

_HANDSHAKE: Final[dict[type, tuple[ControlState, ControlState]]] = {
    Hello: (ControlState.HELLO, ControlState.CHALLENGE),
    Challenge: (ControlState.CHALLENGE, ControlState.REQUEST),
}
"""The state each handshake frame may come in, and the one it leads to (rules 1, 2)."""


class CredentialRefusedError(RemoteProtocolError):
    """Raised by either end when the peer's MAC is wrong: it does not hold the credential.

    A protocol error of its own so the server can count it apart from garbage and the
    client can tell a forged server from a broken one; it names the field, never a value.
    """

    def __init__(self, reason: Reason = Reason.FRAME_INVALID_VALUE, path: str = "$.mac") -> None:
        super().__init__(reason, path)


class _Conversation:
    """What both ends share: the framer, the state, the transcript, the rules."""

    __slots__ = ("_command", "_framer", "_nonce", "_transcript", "state")
    _ROLE: ClassVar[Role]
    """The end this is: it seals with its role..."""
    _PEER: ClassVar[Role]
    """...and verifies the other end's."""

    def __init__(
        self, credential: str, transport: Transport, address: str, *, nonce: str | None = None
    ) -> None:
        """``credential`` from the locator (or the server's memory), ``transport`` and
        ``address`` the endpoint as the locator names it (:attr:`Locator.address
        <coretsia.worker_protocol.locator.Locator.address>`). ``nonce`` is for tests
        only: by default each conversation draws a fresh one."""
        self._framer = LineFramer()
        self._transcript = Transcript(credential, transport, address)
        self._nonce = fresh_nonce() if nonce is None else nonce
        self._command: ControlCommand | None = None
        self.state = ControlState.HELLO

    def receive_data(self, data: bytes) -> None:
        """Buffer bytes read from the peer; ``b""`` means the peer closed the stream."""
        self._framer.receive_data(data)

    def _read(self, accept: Callable[[bytes], F]) -> F | Need:
        """The next frame as ``accept`` takes it, or what is needed first (rule 8)."""
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

    def _open(self, opened: tuple[F, bytes, str | None]) -> F:
        """A received frame, once it is in its place and proved to be the peer's (rule 7)."""
        frame, body, mac = opened
        self._advance(frame)
        self._transcript.add(body)
        if isinstance(frame, Hello):
            if mac is not None:
                raise RemoteProtocolError(Reason.FRAME_UNKNOWN_KEY)
        elif mac is None:
            raise RemoteProtocolError(Reason.FRAME_MISSING_KEY, "$.mac")
        elif not self._transcript.verify(self._PEER, mac):
            raise CredentialRefusedError
        return frame

    def _encode(self, frame: F, encode: Callable[[F, Seal], bytes]) -> bytes:
        """A frame's line, once it is allowed here, sealed unless it is the ``hello``."""
        self._check_usable()
        self._advance(frame)

        def seal(body: bytes) -> str | None:
            self._transcript.add(body)
            return None if isinstance(frame, Hello) else self._transcript.mac(self._ROLE)

        try:
            return encode(frame, seal)
        except ProtocolError:
            self.state = ControlState.ERROR
            raise

    def _check_usable(self) -> None:
        if self.state is ControlState.ERROR:
            raise LocalProtocolError(Reason.FRAME_UNEXPECTED)

    def _advance(self, frame: object) -> None:
        """Rules 1 to 6: the state ``frame`` may come in, and the one it leads to."""
        state = self.state
        if type(frame) in _HANDSHAKE:
            allowed, after = _HANDSHAKE[type(frame)]
            self._require(state is allowed)
            self.state = after
        elif isinstance(frame, ControlRequest):
            self._require(state is ControlState.REQUEST)
            self._command = frame.command
            stop = frame.command is ControlCommand.STOP
            self.state = ControlState.STOPPING if stop else ControlState.ANSWER
        elif isinstance(frame, StopProgress):
            self._require(state is ControlState.STOPPING)
        else:
            self._require(state in (ControlState.ANSWER, ControlState.STOPPING))
            assert self._command is not None  # set with the state by the request
            self._require(isinstance(frame, _TERMINAL[self._command]))
            self.state = ControlState.DONE

    def _require(self, allowed: bool) -> None:
        if not allowed:
            self.state = ControlState.ERROR
            raise LocalProtocolError(Reason.FRAME_UNEXPECTED)


class ClientConversation(_Conversation):
    """The client's end: ``hello``, check the server's proof, one request, its answers."""

    __slots__ = ()
    _ROLE = Role.CLIENT
    _PEER = Role.SERVER

    def hello(self) -> bytes:
        """The first bytes to send: a fresh nonce, nothing secret."""
        return self._encode(Hello(self._nonce), encode_request)

    def send(self, request: ControlRequest) -> bytes:
        """The request's bytes, sealed; only once the server has proved itself."""
        return self._encode(request, encode_request)

    def next_event(self) -> Challenge | ControlResponse | Need:
        """The server's challenge (proved), then its answers (each proved), or what is needed.

        A :class:`Challenge` means the server holds the credential: send the request.
        :data:`Need.CLOSED <coretsia.worker_protocol.framing.Need>` before the terminal
        answer (:attr:`state` is not ``DONE``) is a refusal or a crash: no answer came.
        """
        return self._read(lambda line: self._open(open_response(line)))


class ServerConversation(_Conversation):
    """The server's end: read ``hello``, prove itself, read one proved request, answer it."""

    __slots__ = ()
    _ROLE = Role.SERVER
    _PEER = Role.CLIENT

    def next_event(self) -> Hello | ControlRequest | Need:
        """The ``hello`` (answer it with :meth:`challenge`), then the request, or what is
        needed; a request whose proof is wrong raises (and gets no answer)."""
        return self._read(lambda line: self._open(open_request(line)))

    def challenge(self) -> bytes:
        """The answer to ``hello``: this end's nonce, sealed with its proof."""
        return self._encode(Challenge(self._nonce), encode_response)

    def send(self, response: ControlResponse) -> bytes:
        """One answer's bytes, sealed, if the conversation allows it now."""
        return self._encode(response, encode_response)
