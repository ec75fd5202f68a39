"""The engine of both internal conversations, sans-IO: who may say what, and when. Internal.

The guardian channel (:mod:`.guardian_conversation`: supervisor and guardian) and the
proc-host channel (:mod:`.proc_host_conversation`: guardian and proc host) are the same
kind of exchange: the process above opens with ``hello``, the one below answers
``welcome`` or ``refused``, then requests go down and reports come up. Each channel is a
table of moves, ``(state, side, frame class) -> next state`` (h11's ``_state.py`` in
miniature), run by one :class:`Conversation` per end: ``send`` checks our side's move and
returns the frame's bytes; ``receive_data`` buffers the peer's bytes and ``next_event``
checks its moves, returning a frame, :data:`Need.DATA
<coretsia.worker_protocol.framing.Need>` or :data:`Need.CLOSED
<coretsia.worker_protocol.framing.Need>`.

The rules both channels share (each channel's module adds its own):

1. A frame that is not a move of its side in the current state is
   ``worker-frame-unexpected``: a
   :class:`~coretsia.worker_protocol.exceptions.LocalProtocolError` when we are asked to
   send it (the conversation is then broken: any later use raises again), a
   :class:`~coretsia.worker_protocol.exceptions.RemoteProtocolError` when the peer sent it
   (as for anything that does not decode).
2. The handshake checks versions with :mod:`.handshake`'s rule: ``hello`` carries the
   opener's version and the answerer checks it on receipt; ``welcome`` carries the
   answerer's and the opener checks it. A mismatch raises
   ``worker-peer-version-mismatch``; the answerer may then only say ``refused``.
3. ``refused`` carries one of the channel's refusal reasons; the opener's end raises it
   as its own error (:func:`~coretsia.worker_protocol.exceptions.error_for`).
4. ``spawned`` and ``spawn-failed`` answer a ``spawn`` of their slot, once each: no
   answer without a spawn owed one.
5. Reading ends at the peer's close or at the first error it raised: later
   ``next_event`` calls return ``Need.CLOSED`` again, or raise
   :class:`~coretsia.worker_protocol.exceptions.LocalProtocolError`. Sending goes on by
   the table: the guardian reports the containment of a generation whose supervisor is
   gone, to nobody.

Mutual authentication (issue 14) fits as more rows of the handshake, between ``hello``
and ``welcome``: a proof frame each way, checked where rule 2 checks the version.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import ClassVar, Generic, TypeVar

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    WorkerError,
    error_for,
)
from coretsia.worker_protocol.framing import LineFramer, Need
from coretsia.worker_protocol.internal import handshake
from coretsia.worker_protocol.internal.guardian import Refused, Spawn, Spawned, SpawnFailed, Welcome

S = TypeVar("S", bound=enum.Enum)
F = TypeVar("F")


class Side(enum.Enum):
    """Who says a frame: each channel has an opener and an answerer."""

    OPENER = "opener"
    """Says ``hello``, then asks: the supervisor to its guardian, the guardian to its proc host."""
    ANSWERER = "answerer"
    """Answers the handshake, then reports: the guardian, the proc host."""


Moves = Mapping[tuple[S, Side, type], S]
"""A channel's table: which frame class moves which side from which state to which."""


def moves(*rows: tuple[S, Side, tuple[type, ...], S]) -> dict[tuple[S, Side, type], S]:
    """A table from rows ``(state, side, frame classes, next state)``."""
    return {(start, side, kind): end for start, side, kinds, end in rows for kind in kinds}


def _error(ours: bool) -> type[ProtocolError]:
    return LocalProtocolError if ours else RemoteProtocolError


class Conversation(Generic[S, F]):
    """One end of an internal channel: the channel's table for both sides, rules 1 to 5.

    A channel's module subclasses it once for its codec (``_encode``, ``_decode``,
    ``_hello_version``), then once per end.
    """

    __slots__ = (
        "_broken",
        "_framer",
        "_mismatch",
        "_moves",
        "_owed",
        "_reading",
        "_version",
        "side",
        "state",
    )

    REFUSALS: ClassVar[frozenset[Reason] | None] = None
    """The reasons ``refused`` may carry on this channel; None: any."""

    def __init__(self, side: Side, table: Moves[S], start: S, version: str = "") -> None:
        self._framer = LineFramer()
        self._moves = table
        self.side = side
        self.state = start
        self._version = version
        """Ours: given to the answerer's end, taken from ``hello`` at the opener's."""
        self._mismatch = False
        self._owed: dict[int, int] = {}
        self._broken = False
        self._reading = True

    # -- the channel's part -------------------------------------------------------------

    def _encode(self, frame: F) -> bytes:
        raise NotImplementedError

    def _decode(self, line: bytes) -> F:
        raise NotImplementedError

    def _hello_version(self, frame: F) -> str | None:
        """The version ``frame`` carries if it is this channel's ``hello``."""
        raise NotImplementedError

    def _moved(self, frame: F, *, ours: bool) -> None:
        """Called after each legal move (the guardian's end adds its own)."""

    def _peer_left(self) -> None:
        """Called when reading ends (the guardian's end treats it as the supervisor's loss)."""

    # -- the I/O's part -----------------------------------------------------------------

    def send(self, frame: F) -> bytes:
        """``frame``'s bytes, if our side may say it now."""
        if self._broken:
            raise LocalProtocolError(Reason.FRAME_UNEXPECTED)
        try:
            self._move(frame, ours=True)
        except LocalProtocolError:
            self._broken = True
            raise
        return self._encode(frame)

    def receive_data(self, data: bytes) -> None:
        """Buffer bytes read from the peer; ``b""`` means it closed the channel."""
        self._framer.receive_data(data)

    def next_event(self) -> F | Need:
        """The peer's next frame, or what is needed first (rule 5 once reading ended)."""
        if self._broken or not self._reading:
            raise LocalProtocolError(Reason.FRAME_UNEXPECTED)
        try:
            line = self._framer.next_frame()
            if isinstance(line, Need):
                if line is Need.CLOSED:
                    self._peer_left()
                return line
            frame = self._decode(line)
            self._move(frame, ours=False)
        except WorkerError:
            self._reading = False
            self._peer_left()
            raise
        return frame

    # -- the rules ----------------------------------------------------------------------

    def _move(self, frame: F, *, ours: bool) -> None:
        """Check ``frame`` against the table and rules 2 to 4, then take the move."""
        side = self.side if ours else _other(self.side)
        end = self._moves.get((self.state, side, type(frame)))
        if end is None:
            raise _error(ours)(Reason.FRAME_UNEXPECTED)
        if isinstance(frame, Welcome):
            if ours and self._mismatch:
                raise LocalProtocolError(Reason.FRAME_UNEXPECTED)  # rule 2: refused only
            if not ours:
                handshake.check_peer_version(self._version, frame.peer_version)
        elif isinstance(frame, Refused):
            if self.REFUSALS is not None and frame.reason not in self.REFUSALS:
                raise _error(ours)(Reason.FRAME_INVALID_VALUE, "$.reason")
        elif isinstance(frame, Spawn):
            self._owed[frame.slot] = self._owed.get(frame.slot, 0) + 1
        elif isinstance(frame, (Spawned, SpawnFailed)):
            self._settle(frame.slot, ours=ours)
        self.state = end
        self._moved(frame, ours=ours)
        # What the move itself raises: the answerer's version check (``refused`` is then
        # its one legal answer) and the opener's refusal.
        version = self._hello_version(frame)
        if version is not None and ours:
            self._version = version
        elif version is not None:
            try:
                handshake.check_peer_version(self._version, version)
            except WorkerError:
                self._mismatch = True
                raise
        elif isinstance(frame, Refused) and not ours:
            raise error_for(frame.reason)

    def _settle(self, slot: int, *, ours: bool) -> None:
        """Rule 4: an answer pays one spawn owed for its slot."""
        owed = self._owed.get(slot, 0)
        if not owed:
            raise _error(ours)(Reason.FRAME_UNEXPECTED)
        if owed == 1:
            del self._owed[slot]
        else:
            self._owed[slot] = owed - 1


def _other(side: Side) -> Side:
    return Side.ANSWERER if side is Side.OPENER else Side.OPENER
