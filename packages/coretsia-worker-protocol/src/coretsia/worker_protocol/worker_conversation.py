"""The worker channel's conversation, sans-IO: what each end may say, and when. Internal.

:mod:`~coretsia.worker_protocol.worker_channel` says what one frame may contain; this
module holds the order (:data:`TABLE`, run by the one conversation engine of every
channel, :mod:`~coretsia.worker_protocol.conversation_engine`), for both ends of the
channel between a worker and its supervisor:
:class:`SupervisorConversation` reads a worker's frames and grants its retirement,
:class:`WorkerConversation` sends the worker's frames and reads the grant. Like the control
conversation (:mod:`~coretsia.worker_protocol.control_conversation`), each is fed bytes
with ``receive_data`` and asked for the next frame with ``next_event``.

The rules (all of them live here; the I/O loops hold none). Each end checks them on
what it sends (breaking one is its own bug:
:class:`~coretsia.worker_protocol.exceptions.LocalProtocolError`) and on what it receives
(the peer's: :class:`~coretsia.worker_protocol.exceptions.RemoteProtocolError`):

1. ``ready`` comes at most once and without a token (the inherited descriptor already
   proves who speaks). A second one, or one with a token, breaks readiness.
2. ``failed``, ``task-failed``, ``task-lease-lost`` and ``shutdown-request`` may come at
   any time.
3. ``heartbeat``, ``source-unavailable`` and ``source-available`` may come at any time
   after ``ready``, as often as the worker likes; before ``ready`` they break readiness
   (the start timeout watches a booting worker, and its source's ``assert_ready``).
4. ``retiring`` asks once. The worker sends it once; a repeated one the supervisor
   receives is the same request, not reported again.
5. ``retire`` answers a ``retiring``, once: the supervisor never sends it unasked and a
   worker refuses one it did not ask for.
6. A frame that breaks a rule, or does not decode, ends the reading: every later
   ``next_event`` raises again. For the supervisor, what it means depends on when
   (:meth:`SupervisorConversation.failure`): a readiness failure before ``ready`` or
   about ``ready``, a lifecycle failure after.

A handshake (a token-carrying first frame where no descriptor can be inherited, or a
mutual authentication) fits as one more state before :attr:`WorkerState.BOOTING`.

Imported on the worker boot path: no ``typing`` at run time, nothing beyond the frames.
"""

from __future__ import annotations

import enum

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.conversation_engine import REPEAT, Conversation, Table
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    RemoteProtocolError,
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.worker_channel import (
    Failed,
    Heartbeat,
    Ready,
    Retire,
    Retiring,
    ShutdownRequest,
    SourceAvailable,
    SourceUnavailable,
    TaskFailed,
    TaskLeaseLost,
    decode_supervisor_frame,
    decode_worker_frame,
    encode_retire,
    encode_worker_frame,
)

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import Any, Final

    from coretsia.worker_protocol.exceptions import WorkerError
    from coretsia.worker_protocol.framing import Need
    from coretsia.worker_protocol.worker_channel import WorkerFrame


class Role(enum.Enum):
    """The two ends of a worker's channel."""

    WORKER = "worker"
    SUPERVISOR = "supervisor"


class Readiness(enum.Enum):
    """Where a worker stands with its ``ready`` frame (rule 1)."""

    BOOTING = "booting"
    """Not ready yet."""
    READY = "ready"
    """``ready`` came."""
    BROKEN = "broken"
    """A frame broke a rule (rule 6): nothing more is read."""


class Retirement(enum.Enum):
    """Where a worker stands with its retirement (rules 4 and 5)."""

    NOT_ASKED = "not-asked"
    ASKED = "asked"
    """``retiring`` went; ``retire`` may answer it."""
    GRANTED = "granted"
    """``retire`` went: the worker exits after its current task."""


class WorkerState(enum.Enum):
    """Where a worker's channel stands: its readiness and its retirement, together."""

    BOOTING = (Readiness.BOOTING, Retirement.NOT_ASKED)
    READY = (Readiness.READY, Retirement.NOT_ASKED)
    BOOTING_ASKED = (Readiness.BOOTING, Retirement.ASKED)
    READY_ASKED = (Readiness.READY, Retirement.ASKED)
    BOOTING_GRANTED = (Readiness.BOOTING, Retirement.GRANTED)
    READY_GRANTED = (Readiness.READY, Retirement.GRANTED)


_W, _S = Role.WORKER, Role.SUPERVISOR
_ANY_TIME: Final = (Failed, TaskFailed, TaskLeaseLost, ShutdownRequest)
"""Rule 2."""
_AFTER_READY: Final = (Heartbeat, SourceUnavailable, SourceAvailable)
"""The frames only a ready worker sends (rule 3)."""


def _state(readiness: Readiness, retirement: Retirement) -> WorkerState:
    return WorkerState((readiness, retirement))


def _rows(state: WorkerState) -> list[tuple[WorkerState, Role, tuple[type, ...], object]]:
    readiness, retirement = state.value
    booting = readiness is Readiness.BOOTING
    ready = _state(Readiness.READY, retirement)
    asked = _state(readiness, Retirement.ASKED)
    granted = _state(readiness, Retirement.GRANTED)
    return [
        (state, _W, _ANY_TIME, state),
        (state, _W, (Ready,), ready) if booting else (state, _W, _AFTER_READY, state),  # 1, 3
        (state, _W, (Retiring,), asked if retirement is Retirement.NOT_ASKED else REPEAT),  # 4
        *([(state, _S, (Retire,), granted)] if retirement is Retirement.ASKED else []),  # 5
    ]


TABLE: Final = Table(
    WorkerState.BOOTING,
    (_W, _S),
    [row for state in WorkerState for row in _rows(state)],
    refusal_breaks=False,  # a worker whose own bug was refused still reports its failure
)
"""Every legal move of a worker's channel (rules 1 to 5): ``(state, role, frame class) ->
state``."""


class WorkerChannelConversation(Conversation):
    """One end of a worker's channel, by its role."""

    __slots__ = ()

    @property
    def readiness(self) -> Readiness:
        """Where the worker stands with ``ready``; ``BROKEN`` once reading broke (rule 6)."""
        readiness: Readiness = self.state.value[0]
        return Readiness.BROKEN if self.fault is not None else readiness

    @property
    def retirement(self) -> Retirement:
        """Where the worker stands with its retirement."""
        retirement: Retirement = self.state.value[1]
        return retirement

    def _encode(self, frame: Any) -> bytes:
        return encode_worker_frame(frame) if self.role is _W else encode_retire()

    def _decode(self, data: bytes) -> Any:
        return decode_worker_frame(data) if self.role is _S else decode_supervisor_frame(data)

    def _check(self, frame: object, *, ours: bool) -> None:
        """Rule 1: ``ready`` carries no token."""
        if isinstance(frame, Ready) and frame.token is not None:
            raise (LocalProtocolError if ours else RemoteProtocolError)(Reason.FRAME_UNEXPECTED)


class SupervisorConversation(WorkerChannelConversation):
    """The supervisor's end of one worker's channel."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(TABLE, _S)

    def next_event(self) -> WorkerFrame | Need:
        """The next frame the supervisor must act on, or what is needed first."""
        event: WorkerFrame | Need = super().next_event()
        return event

    def send_retire(self) -> bytes:
        """The ``retire`` grant's bytes; only in answer to ``retiring``, once (rule 5)."""
        return self.send(Retire())

    def failure(self) -> WorkerError:
        """What a broken conversation means for the pool (rule 6): a readiness failure if
        it broke before ``ready`` or about ``ready``, a lifecycle failure after."""
        state, kind = self.fault or (self.state, None)
        if kind is Ready or state.value[0] is Readiness.BOOTING:
            return WorkerStartFailedError(Reason.READINESS_INVALID)
        return WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED)


class WorkerConversation(WorkerChannelConversation):
    """The worker's end of its channel: the frames it sends, and the grant it reads."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(TABLE, _W)

    @property
    def ready(self) -> bool:
        """Whether ``ready`` went."""
        return self.state.value[0] is Readiness.READY

    @property
    def asked(self) -> bool:
        """Whether ``retiring`` went (the grant may then come)."""
        return self.state.value[1] is not Retirement.NOT_ASKED

    def send(self, frame: WorkerFrame) -> bytes:
        """The bytes of ``frame``, if the rules let the worker say it now (rules 1 to 4)."""
        return super().send(frame)

    def next_event(self) -> Retire | Need:
        """The ``retire`` grant, or what is needed first; anything else raises (rule 5)."""
        event: Retire | Need = super().next_event()
        return event
