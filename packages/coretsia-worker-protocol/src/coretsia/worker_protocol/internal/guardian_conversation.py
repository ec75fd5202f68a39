"""The guardian channel's conversation, sans-IO: supervisor and guardian. Internal.

:mod:`.guardian` says what one frame may contain; this module says in what order frames
travel, for both ends: :class:`SupervisorEnd` (the opener) and :class:`GuardianEnd` (the
answerer), run by :mod:`..conversation_engine` (its rules 1 to 4 apply here too), with the rules
both internal channels share (:class:`InternalConversation`).

The moves (supervisor ``->``, guardian ``<-``), all of them in :data:`TABLE`:

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
from typing import ClassVar, Final

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.conversation_engine import CLOSE, Conversation, Table
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    RemoteProtocolError,
    WorkerError,
    WorkerLifecycleFailedError,
    error_for,
)
from coretsia.worker_protocol.internal import guardian as g
from coretsia.worker_protocol.internal import handshake


class Role(enum.Enum):
    """The two ends of an internal channel: the one above opens, the one below answers."""

    SUPERVISOR = "supervisor"
    """Opens the guardian channel."""
    GUARDIAN = "guardian"
    """Answers the supervisor; opens the proc-host channel as its ``proc`` driver."""
    PROC_HOST = "proc-host"
    """Answers the guardian's ``proc`` driver."""


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


_S, _G = Role.SUPERVISOR, Role.GUARDIAN
_REPORTS: Final = (g.Spawned, g.SpawnFailed, g.Exited, g.HostStarted, g.GenerationFailed)
_St = GuardianState

TABLE: Final = Table(
    GuardianState.HELLO,
    (_S, _G),
    [
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
        # Rule 5: the supervisor's loss stands for ``shutdown``, or once drained ``release``.
        (_St.RUNNING, _S, (CLOSE,), _St.SHUTTING_DOWN),
        (_St.DRAINED, _S, (CLOSE,), _St.RELEASING),
    ],
)
"""Every legal move of the guardian channel: ``(state, role, frame class) -> state``."""


class InternalConversation(Conversation):
    """The rules both internal channels share (guardian, proc host), over the engine's.

    1. The handshake checks versions with :mod:`.handshake`'s rule: the opener's hello
       carries its version and the answerer checks it on receipt; ``welcome`` carries the
       answerer's and the opener checks it. A mismatch raises
       ``worker-peer-version-mismatch``; the answerer may then only say ``refused``.
    2. ``refused`` carries one of the channel's refusal reasons (:attr:`REFUSALS`); the
       opener's end raises it as its own error
       (:func:`~coretsia.worker_protocol.exceptions.error_for`).
    3. ``spawned`` and ``spawn-failed`` answer a ``spawn`` of their slot, once each: no
       answer without a spawn owed one.
    """

    __slots__ = ("_mismatch", "_owed", "_version")

    REFUSALS: ClassVar[frozenset[Reason] | None] = None
    """The reasons ``refused`` may carry on this channel; None: any."""
    HELLO: ClassVar[type]
    """The channel's hello frame class."""

    def __init__(self, table: Table, role: Role, version: str = "") -> None:
        super().__init__(table, role)
        self._version = version
        """Ours: given to the answerer's end, taken from the hello at the opener's."""
        self._mismatch = False
        self._owed: dict[int, int] = {}

    def _check(self, frame: object, *, ours: bool) -> None:
        error = LocalProtocolError if ours else RemoteProtocolError
        if isinstance(frame, g.Welcome):
            if ours and self._mismatch:
                raise LocalProtocolError(Reason.FRAME_UNEXPECTED)  # rule 1: refused only
            if not ours:
                handshake.check_peer_version(self._version, frame.peer_version)
        elif isinstance(frame, g.Refused):
            if self.REFUSALS is not None and frame.reason not in self.REFUSALS:
                raise error(Reason.FRAME_INVALID_VALUE, "$.reason")
        elif isinstance(frame, g.Spawn):
            self._owed[frame.slot] = self._owed.get(frame.slot, 0) + 1
        elif isinstance(frame, (g.Spawned, g.SpawnFailed)):
            owed = self._owed.get(frame.slot, 0)  # rule 3: an answer pays one spawn owed
            if not owed:
                raise error(Reason.FRAME_UNEXPECTED)
            if owed == 1:
                del self._owed[frame.slot]
            else:
                self._owed[frame.slot] = owed - 1

    def _moved(self, frame: object, *, ours: bool) -> None:
        """What the move itself raises: the answerer's version check (``refused`` is then
        its one legal answer) and the opener's refusal."""
        if isinstance(frame, self.HELLO):
            version: str = frame.peer_version  # type: ignore[attr-defined]
            if ours:
                self._version = version
                return
            try:
                handshake.check_peer_version(self._version, version)
            except WorkerError:
                self._mismatch = True
                raise
        elif isinstance(frame, g.Refused) and not ours:
            raise error_for(frame.reason)


class GuardianConversation(InternalConversation):
    """One end of the guardian channel, by its role."""

    __slots__ = ()
    HELLO = g.Hello

    def _encode(self, frame: g.GuardianFrame) -> bytes:
        return g.encode_guardian_frame(frame)

    def _decode(self, data: bytes) -> g.GuardianFrame:
        return g.decode_guardian_frame(data)


class SupervisorEnd(GuardianConversation):
    """The supervisor's end: say ``hello`` and ask; read the guardian's reports."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(TABLE, Role.SUPERVISOR)

    def failure(self) -> WorkerError:
        """What the channel's end (or a broken rule) means, by when it came."""
        if self.state is GuardianState.LOCK:
            return WorkerLifecycleFailedError(Reason.LIFECYCLE_LOCK_FAILED)
        return WorkerLifecycleFailedError(Reason.PROCESS_HOST_FAILED)


class GuardianEnd(GuardianConversation):
    """The guardian's end: check ``hello``, claim the lock, serve, contain, release."""

    __slots__ = ()

    def __init__(self, version: str) -> None:
        super().__init__(TABLE, Role.GUARDIAN, version)

    @property
    def supervisor_gone(self) -> bool:
        """The supervisor's stream ended, or broke a rule (rule 5)."""
        return self.peer_gone
