"""The fork-server channel's conversation, sans-IO: guardian and fork server. Internal.

:mod:`.fork_server` says what one datagram carries; this module says in what order they
travel, for both ends (:class:`ForkServerConversation` with its :class:`Role`), run by
:mod:`..conversation_engine` (its rules 1 to 4 apply here too). The channel is a
``SOCK_SEQPACKET`` pair, so a datagram is a frame: :class:`DatagramFramer` cuts nothing.

Requests are pipelined, so each has a life of its own, by its tag: the channel's table
(:data:`TABLE`) says who may say what at all, the request's (:data:`REQUEST_TABLE`) in
what order one request goes (guardian ``->``, fork server or its new worker ``<-``):

1. ``-> request`` with a tag not in flight;
2. ``<- started`` at most once, from the request's worker (its pid rides in the
   datagram's credentials), then ``<- done``, from the server: the request is answered
   and its tag free again. ``done`` without ``started``: no worker was started.

Anything else (a datagram that does not decode, an answer to no request in flight) is
``worker-frame-unexpected``: at the guardian's end the server is gone; at the server's,
the guardian broke the contract. The server's end is copied into each worker it forks,
which says ``started`` through its copy. Standard library only, like :mod:`.fork_server`.
"""

from __future__ import annotations

import collections
import enum
from typing import TYPE_CHECKING

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.conversation_engine import Conversation, Table
from coretsia.worker_protocol.exceptions import LocalProtocolError, RemoteProtocolError
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.internal.fork_server import (
    DONE,
    decode_request,
    done,
    encode_request,
    parse_answer,
    started,
)

if TYPE_CHECKING:
    from typing import Any, Final


class Request:
    """Guardian to fork server: fork a worker that runs ``argv`` (its descriptors ride
    along as ``SCM_RIGHTS``)."""

    __slots__ = ("argv", "tag")

    def __init__(self, tag: bytes, argv: tuple[str, ...]) -> None:
        self.tag = tag
        self.argv = argv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Request) and (self.tag, self.argv) == (other.tag, other.argv)

    __hash__ = None  # type: ignore[assignment]


class Started:
    """The new worker to the guardian: it runs (its pid in the datagram's credentials)."""

    __slots__ = ("tag",)

    def __init__(self, tag: bytes) -> None:
        self.tag = tag

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.tag == other.tag

    __hash__ = None  # type: ignore[assignment]


class Done(Started):
    """The fork server to the guardian: the request is answered."""

    __slots__ = ()


class Role(enum.Enum):
    """The two ends of the fork-server channel."""

    GUARDIAN = "guardian"
    FORK_SERVER = "fork-server"
    """The server, and each new worker through its copy of the server's end."""


class ChannelState(enum.Enum):
    """The channel's own state: requests and answers flow until it ends."""

    OPEN = "open"


class RequestState(enum.Enum):
    """Where one request stands, by its tag."""

    FREE = "free"
    """No request of this tag in flight."""
    ASKED = "asked"
    """Sent: its worker's ``started`` or the server's ``done`` is next."""
    STARTED = "started"
    """Its worker told: the server's ``done`` is next."""


_G, _F = Role.GUARDIAN, Role.FORK_SERVER

TABLE: Final = Table(
    ChannelState.OPEN,
    (_G, _F),
    [
        (ChannelState.OPEN, _G, (Request,), ChannelState.OPEN),
        (ChannelState.OPEN, _F, (Started, Done), ChannelState.OPEN),
    ],
)
"""Who may say what on the channel: ``(state, role, frame class) -> state``."""

REQUEST_TABLE: Final = Table(
    RequestState.FREE,
    (_G, _F),
    [
        (RequestState.FREE, _G, (Request,), RequestState.ASKED),  # rule 1
        (RequestState.ASKED, _F, (Started,), RequestState.STARTED),  # rule 2
        ((RequestState.ASKED, RequestState.STARTED), _F, (Done,), RequestState.FREE),
    ],
)
"""One request's life, by its tag: ``(state, role, frame class) -> state``."""


class DatagramFramer:
    """A ``SOCK_SEQPACKET`` channel's framer: each datagram is one frame; ``b""``, its end."""

    __slots__ = ("_closed", "_frames")

    def __init__(self) -> None:
        self._frames: collections.deque[bytes] = collections.deque()
        self._closed = False

    def receive_data(self, data: bytes) -> None:
        """One datagram, or ``b""`` at the channel's end."""
        if data:
            self._frames.append(data)
        else:
            self._closed = True

    def next_frame(self) -> bytes | Need:
        """The oldest datagram not yet taken, or what is needed first."""
        if self._frames:
            return self._frames.popleft()
        return Need.CLOSED if self._closed else Need.DATA


class ForkServerConversation(Conversation):
    """One end of the fork-server channel, by its role; each request by its own table."""

    __slots__ = ("_requests",)

    def __init__(self, role: Role) -> None:
        super().__init__(TABLE, role, DatagramFramer())
        self._requests: dict[bytes, RequestState] = {}

    def in_flight(self, tag: bytes) -> bool:
        """Whether the request ``tag`` is sent and not yet answered."""
        return tag in self._requests

    def _encode(self, frame: Any) -> bytes:
        if isinstance(frame, Request):
            return encode_request(int(frame.tag), frame.argv)
        return (done if isinstance(frame, Done) else started)(frame.tag)

    def _decode(self, data: bytes) -> Any:
        if self.role is _F:
            request = decode_request(data)
            if request is None:
                raise RemoteProtocolError(Reason.FRAME_INVALID_VALUE)
            return Request(*request)
        answer = parse_answer(data)
        if answer is None:
            raise RemoteProtocolError(Reason.FRAME_INVALID_VALUE)
        kind, tag = answer
        return Done(tag) if kind == DONE else Started(tag)

    def _check(self, frame: Any, *, ours: bool) -> None:
        """Rules 1 and 2, by the request's own table."""
        role = self.role if ours else self.table.peer(self.role)
        before = self._requests.get(frame.tag, RequestState.FREE)
        after = REQUEST_TABLE.next_state(before, role, type(frame))
        if after is None:
            raise (LocalProtocolError if ours else RemoteProtocolError)(Reason.FRAME_UNEXPECTED)
        if after is RequestState.FREE:
            del self._requests[frame.tag]
        else:
            self._requests[frame.tag] = after  # type: ignore[assignment]
