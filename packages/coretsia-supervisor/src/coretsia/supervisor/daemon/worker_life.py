"""One worker's life as its slot hears it: one ordered story, and the rules over it.

A worker's life reaches the supervisor from two processes: its own frames on its channel,
and its exit from the guardian, which reaped it. Their order is causal, not a race. The
worker writes each frame into a Unix stream socket, whose ``send`` puts the bytes in our
end's receive queue before it returns; the worker exits after its last write; the guardian
reports ``exited`` after it reaped the worker. So when ``exited`` arrives, every byte the
worker wrote is already in our end of its channel: the slot reads what is left there
without waiting (:class:`coretsia.supervisor.daemon.slots.Life`), then appends the exit. The
story of a life is therefore ``ready``, ``task-failed``, ``retiring``... and the exit,
always last; no timer puts it in order (``docs/architecture.md``, "One story per worker
life").

This module holds the rules over that story, with no I/O and no trio: :func:`hear` takes
the slot (its state) and the next event of the story and says what to do; :func:`judge`
says what the exit means. The driver is :mod:`coretsia.supervisor.daemon.slots`.
"""

from __future__ import annotations

import enum
from typing import TypeAlias

import attrs

from coretsia.supervisor.daemon.pool import Slot, SlotState
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    RuntimeEntrypointError,
    WorkerError,
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
    error_for,
)
from coretsia.worker_protocol.internal.runtime.exit_kind import ExitKind
from coretsia.worker_protocol.worker_channel import (
    Failed,
    Heartbeat,
    Ready,
    Retiring,
    ShutdownRequest,
    SourceAvailable,
    SourceUnavailable,
    WorkerFrame,
)


class Granted(enum.Enum):
    """The supervisor's side of the story: the worker's turn to retire came."""

    TURN = "turn"


@attrs.frozen
class Broken:
    """The worker's channel broke a rule: what that means for the pool."""

    error: WorkerError


@attrs.frozen
class Exit:
    """The guardian's word, last: how the worker ended."""

    kind: ExitKind
    mid_frame: bool = False
    """Its channel ended in the middle of a frame (it died while writing one)."""


Happening: TypeAlias = "WorkerFrame | Granted | Broken | Exit"
"""One event of a life's story."""


class Act(enum.Enum):
    """What the driver does after an event (most events need nothing)."""

    READY = "ready"
    """The worker became ready: count it, watch its heartbeat."""
    ASK_TURN = "ask-turn"
    """It asked to retire: queue it for a turn."""
    RETIRE = "retire"
    """Its turn came: send it ``retire``."""
    STOP = "stop"
    """The application asked the pool to stop (``shutdown-request``)."""
    FAIL = "fail"
    """The channel broke a rule: the pool fails with :attr:`Broken.error`."""
    LOG = "log"
    """A frame that is only logged (``task-failed``, a source's state, a lost lease)."""
    END = "end"
    """The worker exited, after everything it said: :func:`judge` it."""


class Verdict(enum.Enum):
    """What an exit means for the slot, when it is not the pool's failure."""

    RECYCLE = "recycle"
    """A clean retirement: spawn its replacement."""
    REPLACE = "replace"
    """A process entry's worker ended: replace it at the respawn pace."""


def hear(slot: Slot, happening: Happening) -> Act | None:
    """Apply the next event of ``slot``'s current life to it; what to do about it.

    Nothing follows the exit: an event after it changes nothing (the driver reads no
    further, and the rules say so too).
    """
    if slot.state is SlotState.EXITED:
        return None
    if isinstance(happening, Exit):
        slot.state = SlotState.EXITED
        slot.exit_kind = happening.kind
        slot.pid = None
        return Act.END
    if happening is Granted.TURN:
        if not slot.retiring or slot.granted:
            return None
        slot.granted = True
        return Act.RETIRE
    if isinstance(happening, Broken):
        return Act.FAIL
    return _hear_frame(slot, happening)


def _hear_frame(slot: Slot, frame: WorkerFrame) -> Act | None:
    if isinstance(frame, Ready):  # once per worker: the conversation sees to it
        slot.state = SlotState.READY
        slot.started = True
        return Act.READY
    if isinstance(frame, Failed):
        slot.failed_reason = frame.reason
        slot.failed_fault = frame.fault
        return None
    if isinstance(frame, Retiring):  # once per worker: the conversation sees to it
        slot.retiring = True
        slot.retire_cause = frame.cause
        return Act.ASK_TURN
    if isinstance(frame, ShutdownRequest):
        return Act.STOP
    if isinstance(frame, SourceUnavailable):
        slot.source_fault = frame.fault
    elif isinstance(frame, SourceAvailable):
        slot.source_fault = None
    return None if isinstance(frame, Heartbeat) else Act.LOG


def judge(slot: Slot, *, starting: bool, entrypoint: str) -> Verdict | WorkerError:
    """What the exit of ``slot``'s worker means: a recycle, a replacement, or the error
    the pool fails with. ``starting``: the pool has not been running yet."""
    if slot.retiring and slot.exit_kind is ExitKind.EXIT_0:
        return Verdict.RECYCLE  # a clean retirement, even before every slot is ready
    if slot.entry and (slot.started or not starting):
        # Seed 003: a returning or failing entry is replaced; only a first boot that
        # never became ready fails the start, as a task worker's would.
        return Verdict.REPLACE
    if slot.failed_reason is Reason.RUNTIME_ENTRYPOINT_UNAVAILABLE:
        # The boot's guard: the Kernel's failure, named for this pool's entrypoint.
        return RuntimeEntrypointError(entrypoint)
    if slot.failed_reason is not None:
        return error_for(slot.failed_reason, slot.failed_fault)
    if starting:
        return WorkerStartFailedError(Reason.CHILD_START_FAILED)
    return WorkerLifecycleFailedError(Reason.CHILD_EXITED)
