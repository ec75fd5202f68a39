"""The guardian channel's conversation, sans-IO: supervisor and guardian. Internal.

:mod:`.guardian` says what one frame may contain; this module says in what order frames
travel, for both ends: :class:`SupervisorEnd` (the opener) and :class:`GuardianEnd` (the
answerer), run by :mod:`.conversation`'s engine (whose rules 1 to 5 apply here too).

The moves (supervisor ``->``, guardian ``<-``), all of them in :data:`MOVES`:

1. Handshake: ``-> hello``, then ``<- welcome`` or ``<- refused`` (any reason, raised by
   the supervisor's end as its error); then the lock claim: ``<- locked`` or
   ``<- refused``.
2. Running: ``-> spawn`` any number of times, each answered by ``<- spawned`` or
   ``<- spawn-failed``; ``<- exited``, ``<- host-started`` and ``<- generation-failed``
   at any time.
3. ``-> shutdown`` once; ``<- phase`` only after it, with the late answers and reports,
   then ``<- drained``. A ``spawn`` sent after ``shutdown`` crossed it: the guardian reads
   it (it may be buffered behind ``release``) but never answers it.
4. ``-> release`` only after ``drained``; ``<- released`` only after it, and last.
   ``<- exited`` may still come until then: a process that survived every phase is
   reported when it is finally reaped.
5. The supervisor's loss (the end of its stream, or a frame that breaks a rule) counts
   at the guardian's end as ``shutdown``, and once ``drained`` went, as ``release``:
   the guardian contains the generation on its own, by the same moves.

What an early end means at the supervisor's end depends on when
(:meth:`SupervisorEnd.failure`): a lock that was never claimed, or a guardian lost.
"""

from __future__ import annotations

import enum
from typing import Final

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import WorkerError, WorkerLifecycleFailedError
from coretsia.worker_protocol.internal import guardian as g
from coretsia.worker_protocol.internal.conversation import Conversation, Side, moves


class GuardianState(enum.Enum):
    """Where a guardian channel stands; each end keeps its own view."""

    HELLO = "hello"
    """The supervisor's ``hello`` is next."""
    WELCOME = "welcome"
    """``hello`` went: the guardian's ``welcome`` (or ``refused``) is next."""
    LOCK = "lock"
    """``welcome`` went: ``locked`` (or ``refused``) is next."""
    RUNNING = "running"
    """The lock is held: spawns and their reports."""
    SHUTTING_DOWN = "shutting-down"
    """``shutdown`` went (or the supervisor is gone): phases, then ``drained``."""
    DRAINED = "drained"
    """``drained`` went: ``release`` is next."""
    RELEASING = "releasing"
    """``release`` went (or the supervisor is gone): ``released`` is next."""
    RELEASED = "released"
    """``released`` went: the guardian exits."""
    REFUSED = "refused"
    """``refused`` went: the guardian exits."""


_S, _G = Side.OPENER, Side.ANSWERER
_REPORTS: Final = (g.Spawned, g.SpawnFailed, g.Exited, g.HostStarted, g.GenerationFailed)
_St = GuardianState

MOVES: Final = moves(
    (_St.HELLO, _S, (g.Hello,), _St.WELCOME),
    (_St.WELCOME, _G, (g.Welcome,), _St.LOCK),
    (_St.WELCOME, _G, (g.Refused,), _St.REFUSED),
    (_St.LOCK, _G, (g.Locked,), _St.RUNNING),
    (_St.LOCK, _G, (g.Refused,), _St.REFUSED),
    (_St.RUNNING, _S, (g.Spawn,), _St.RUNNING),
    (_St.RUNNING, _S, (g.Shutdown,), _St.SHUTTING_DOWN),
    (_St.RUNNING, _G, _REPORTS, _St.RUNNING),
    (_St.SHUTTING_DOWN, _S, (g.Spawn,), _St.SHUTTING_DOWN),
    (_St.SHUTTING_DOWN, _G, (*_REPORTS, g.Phase), _St.SHUTTING_DOWN),
    (_St.SHUTTING_DOWN, _G, (g.Drained,), _St.DRAINED),
    (_St.DRAINED, _S, (g.Spawn,), _St.DRAINED),
    (_St.DRAINED, _S, (g.Release,), _St.RELEASING),
    (_St.DRAINED, _G, (g.Exited,), _St.DRAINED),
    (_St.RELEASING, _S, (g.Spawn,), _St.RELEASING),
    (_St.RELEASING, _G, (g.Exited,), _St.RELEASING),
    (_St.RELEASING, _G, (g.Released,), _St.RELEASED),
)
"""Every legal move of the guardian channel: ``(state, side, frame class) -> state``."""

_WHEN_GONE: Final = {_St.RUNNING: _St.SHUTTING_DOWN, _St.DRAINED: _St.RELEASING}
"""Rule 5: the move the supervisor's loss stands for, at the guardian's end."""


class _GuardianChannel(Conversation[GuardianState, g.GuardianFrame]):
    __slots__ = ()

    def _encode(self, frame: g.GuardianFrame) -> bytes:
        return g.encode_guardian_frame(frame)

    def _decode(self, line: bytes) -> g.GuardianFrame:
        return g.decode_guardian_frame(line)

    def _hello_version(self, frame: g.GuardianFrame) -> str | None:
        return frame.peer_version if isinstance(frame, g.Hello) else None


class SupervisorEnd(_GuardianChannel):
    """The supervisor's end: say ``hello`` and ask; read the guardian's reports."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_S, MOVES, GuardianState.HELLO)

    def failure(self) -> WorkerError:
        """What the channel's end (or a broken rule) means, by when it came."""
        if self.state is GuardianState.LOCK:
            return WorkerLifecycleFailedError(Reason.LIFECYCLE_LOCK_FAILED)
        return WorkerLifecycleFailedError(Reason.PROCESS_HOST_FAILED)


class GuardianEnd(_GuardianChannel):
    """The guardian's end: check ``hello``, claim the lock, serve, contain, release."""

    __slots__ = ("supervisor_gone",)

    def __init__(self, version: str) -> None:
        super().__init__(_G, MOVES, GuardianState.HELLO, version)
        self.supervisor_gone = False
        """The supervisor's stream ended, or broke a rule (rule 5)."""

    def _peer_left(self) -> None:
        self.supervisor_gone = True
        self.state = _WHEN_GONE.get(self.state, self.state)

    def _moved(self, frame: g.GuardianFrame, *, ours: bool) -> None:
        if self.supervisor_gone:
            self.state = _WHEN_GONE.get(self.state, self.state)  # drained: release implied
