"""The one conversation engine of every channel, sans-IO: who may say what, and when.

Every channel Coretsia speaks is a conversation between two roles: control (client and
server), worker (worker and supervisor), guardian (supervisor and guardian), proc host
(guardian and proc host) and fork server (guardian and fork server). Each family
declares, beside its frames, one :class:`Table` (data: ``(state, role, kind) -> next
state``, h11's ``_state.py`` in miniature) and one subclass of :class:`Conversation`
for its codec and the rules a table cannot say (a version to check, a MAC to verify, an
answer owed); an end is that class with its role, as h11's ``Connection(our_role)``.
This module knows no frame family.

The I/O drives every end the same way: ``send(frame)`` checks our role's move and
returns the frame's bytes; ``receive_data(data)`` buffers the peer's bytes (``b""``: it
closed) and ``next_event()`` checks its moves, returning a frame, :data:`Need.DATA
<coretsia.worker_protocol.framing.Need>` (read more) or :data:`Need.CLOSED
<coretsia.worker_protocol.framing.Need>`. The trio ends read with
:meth:`FramedChannel.receive
<coretsia.worker_protocol.internal.runtime.channel.FramedChannel.receive>`, the blocking
ends (the probe's client, a worker, the proc host, the fork server, none of which loads
trio), and the ends that only take what has arrived, with :func:`receive_sync`: the
two framed read loops.

The rules every table follows:

1. A frame that is not a move of its role in the current state is
   ``worker-frame-unexpected``: a
   :class:`~coretsia.worker_protocol.exceptions.LocalProtocolError` when we are asked to
   send it (the conversation is then broken: any later use raises again; unless the
   table keeps refused sends harmless, as the worker's channel does so that a worker whose
   own bug was refused can still report its failure), a
   :class:`~coretsia.worker_protocol.exceptions.RemoteProtocolError` when the peer sent it
   (as for anything that does not decode, or that the family's rules refuse).
2. A move to :data:`REPEAT` is a repeat the receiver tolerates: the peer's is read and
   dropped, not reported again; our own is refused like any other frame out of place.
3. The peer's close is a move of its role too, keyed :data:`CLOSE`: a table may say what
   it stands for (the guardian contains the generation of a supervisor gone); without a
   row it changes nothing. A frame of the peer's that breaks a rule counts as its close.
   Once the peer is gone, every later move of ours takes its close's row again.
4. Reading ends at the peer's close or at the first error it raised: later
   ``next_event`` calls return ``Need.CLOSED`` again, or raise ``LocalProtocolError``.
   Sending goes on by the table (the guardian reports the containment of a generation
   whose supervisor is gone, to nobody), unless the table names a ``broken`` state:
   then every error ends the conversation there (the control channel's ``ERROR``).

Imported on the worker boot path and the probe path: no ``typing`` at run time.
"""

from __future__ import annotations

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    WorkerError,
)
from coretsia.worker_protocol.framing import LineFramer, Need

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    import enum
    from collections.abc import Callable, Iterable
    from typing import Any, Final, Protocol

    class Framer(Protocol):
        """Cuts what the peer sent into frames: :class:`LineFramer` for streams."""

        def receive_data(self, data: bytes) -> None: ...
        def next_frame(self) -> bytes | Need: ...

    Row = tuple[
        "enum.Enum | Iterable[enum.Enum]", "object", "Iterable[object]", "enum.Enum | object"
    ]


class _Marker:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


CLOSE: Final = _Marker("CLOSE")
"""The kind of the peer's close (rule 3)."""

REPEAT: Final = _Marker("REPEAT")
"""The next state of a repeat the receiver drops (rule 2)."""


def kind_of(frame: object) -> object:
    """A frame's key in a table: its class, unless the family says otherwise."""
    return type(frame)


class Table:
    """One channel's moves, as data: ``(state, role, kind) -> next state``."""

    __slots__ = ("broken", "kind", "moves", "refusal_breaks", "roles", "start")

    def __init__(
        self,
        start: enum.Enum,
        roles: tuple[object, object],
        rows: Iterable[Row],
        *,
        broken: enum.Enum | None = None,
        kind: Callable[[Any], object] = kind_of,
        refusal_breaks: bool = True,
    ) -> None:
        """Rows are ``(state or states, role, kinds, next state)``; ``kind`` keys a frame
        (its class by default); ``broken``: where every error ends (rule 4);
        ``refusal_breaks``: whether a refused send breaks our end (rule 1)."""
        self.start = start
        self.roles = roles
        self.broken = broken
        self.kind = kind
        self.refusal_breaks = refusal_breaks
        self.moves: dict[tuple[object, object, object], object] = {}
        for states, role, kinds, end in rows:
            for state in _each(states):
                for key in kinds:
                    self.moves[state, role, key] = end

    def peer(self, role: object) -> object:
        """The other end's role."""
        first, second = self.roles
        return second if role == first else first

    def next_state(self, state: object, role: object, key: object) -> object | None:
        """Where ``role`` saying ``key`` in ``state`` leads; None: not a move."""
        return self.moves.get((state, role, key))


def _each(states: object) -> tuple[object, ...]:
    return tuple(states) if isinstance(states, (tuple, list, frozenset, set)) else (states,)


class Conversation:
    """One end of a channel: its table, its role, its state; rules 1 to 4.

    A family subclasses it once for its codec (:meth:`_encode`, :meth:`_decode`) and its
    own rules (:meth:`_check`, :meth:`_moved`).
    """

    __slots__ = ("_broken", "_framer", "_reading", "fault", "peer_gone", "role", "state", "table")

    def __init__(self, table: Table, role: object, framer: Framer | None = None) -> None:
        self.table = table
        self.role = role
        self.state: Any = table.start
        self._framer: Framer = LineFramer() if framer is None else framer
        self._broken = False
        self._reading = True
        self.peer_gone = False
        """The peer closed its end, or broke a rule (rule 3)."""
        self.fault: tuple[Any, object] | None = None
        """Where reading broke: the state, and the kind of the frame (None: undecodable)."""

    # -- the family's part --------------------------------------------------------------

    def _encode(self, frame: Any) -> bytes:
        raise NotImplementedError

    def _decode(self, data: bytes) -> Any:
        raise NotImplementedError

    def _check(self, frame: Any, *, ours: bool) -> None:
        """The family's rules on a legal move, before it is taken; raise to refuse it."""

    def _moved(self, frame: Any, *, ours: bool) -> None:
        """After the move: what the move itself raises (a refusal, a wrong proof)."""

    # -- the I/O's part -----------------------------------------------------------------

    def send(self, frame: Any) -> bytes:
        """``frame``'s bytes, if our role may say it now."""
        self._usable()
        try:
            self._move(frame, ours=True)
            return self._encode(frame)
        except ProtocolError:
            if self.table.refusal_breaks:
                self._break()
            raise

    def receive_data(self, data: bytes) -> None:
        """Buffer bytes read from the peer; ``b""`` means it closed the channel."""
        self._framer.receive_data(data)

    def next_event(self) -> Any:
        """The peer's next frame, or what is needed first (rule 4 once reading ended)."""
        self._usable()
        if not self._reading:
            raise LocalProtocolError(Reason.FRAME_UNEXPECTED)
        key: object = None
        try:
            while True:
                data = self._framer.next_frame()
                if isinstance(data, Need):
                    if data is Need.CLOSED:
                        self._peer_left()
                    return data
                frame = self._decode(data)
                key = self.table.kind(frame)
                if self._move(frame, ours=False):
                    return frame
        except LocalProtocolError as exc:  # the peer made us break a rule: its fault
            self._read_failed(key)
            raise RemoteProtocolError(exc.reason, exc.path) from None
        except WorkerError:
            self._read_failed(key)
            raise

    # -- the rules ----------------------------------------------------------------------

    def _move(self, frame: Any, *, ours: bool) -> bool:
        """Rules 1 to 3 and the family's; False for a repeat dropped."""
        role = self.role if ours else self.table.peer(self.role)
        end = self.table.next_state(self.state, role, self.table.kind(frame))
        if end is None or (end is REPEAT and ours):
            raise (LocalProtocolError if ours else RemoteProtocolError)(Reason.FRAME_UNEXPECTED)
        if end is REPEAT:
            return False
        self._check(frame, ours=ours)
        self.state = end
        if self.peer_gone:
            self._take_close()
        self._moved(frame, ours=ours)
        return True

    def _peer_left(self) -> None:
        self.peer_gone = True
        self._take_close()

    def _take_close(self) -> None:
        end = self.table.next_state(self.state, self.table.peer(self.role), CLOSE)
        if end is not None:
            self.state = end

    def _read_failed(self, key: object) -> None:
        self.fault = (self.state, key)
        self._reading = False
        if self.table.broken is not None:
            self._break()
        else:
            self._peer_left()

    def _break(self) -> None:
        self._broken = True
        if self.table.broken is not None:
            self.state = self.table.broken

    def _usable(self) -> None:
        if self._broken:
            raise LocalProtocolError(Reason.FRAME_UNEXPECTED)


def receive_sync(conversation: Conversation, read: Callable[[], bytes | None]) -> Any:
    """The one synchronous read loop: ``conversation``'s next event, reading with ``read``
    for as long as it needs data.

    ``read`` returns what the peer sent (``b""`` at its end), or None when nothing is
    there and the caller must not wait: the loop then returns ``Need.DATA``. A blocking
    ``read`` serves the ends that load no event loop (the probe's client, the proc host's
    handshake, the fork server); a non-blocking one serves the ends that only take what
    has arrived (the supervisor's last words of a worker, a worker's grant check, the
    proc host between its other wake-ups). The trio ends use :meth:`FramedChannel.receive
    <coretsia.worker_protocol.internal.runtime.channel.FramedChannel.receive>`.
    """
    while (event := conversation.next_event()) is Need.DATA:
        data = read()
        if data is None:
            return Need.DATA
        conversation.receive_data(data)
    return event
