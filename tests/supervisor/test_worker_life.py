"""The story of one worker's life, without processes: the join and the reducer.

The join (:class:`coretsia.supervisor.daemon.slots.Life`) runs over a real socket pair: the
"worker" end writes its frames in arbitrary pieces, the reader reads some of them as they
come, and the exit is reported at an arbitrary point after the last write (as the guardian
reports it after the reap). Whatever the interleaving, the story is the worker's frames in
order, then the exit. The reducer (:func:`~coretsia.supervisor.daemon.worker_life.hear`,
:func:`~coretsia.supervisor.daemon.worker_life.judge`) is then checked over every interleaving of
a life's events with the supervisor's own (its retirement turn).
"""

from __future__ import annotations

import socket

import trio
from frame_strategies import worker_reasons
from hypothesis import given, settings
from hypothesis import strategies as st

from coretsia.supervisor.daemon.pool import Slot, SlotState
from coretsia.supervisor.daemon.slots import Life
from coretsia.supervisor.daemon.worker_life import (
    Act,
    Broken,
    Exit,
    Granted,
    Happening,
    Verdict,
    hear,
    judge,
)
from coretsia.worker_protocol.catalogue import Reason, SourceFault
from coretsia.worker_protocol.exceptions import (
    WorkerError,
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.internal.runtime.exit_kind import ExitKind
from coretsia.worker_protocol.worker_channel import (
    Failed,
    Heartbeat,
    Ready,
    RecycleCause,
    Retiring,
    ShutdownRequest,
    SourceAvailable,
    SourceUnavailable,
    TaskFailed,
    TaskLeaseLost,
    WorkerFrame,
    encode_worker_frame,
)

ENTRYPOINT = "worker.task"

_ANY_TIME: st.SearchStrategy[WorkerFrame] = st.one_of(
    st.builds(Failed, worker_reasons, st.none() | st.sampled_from(SourceFault)),
    st.builds(TaskFailed, st.just("ValueError"), st.none() | st.integers(1, 9)),
    st.just(TaskLeaseLost()),
)
_AFTER_READY: st.SearchStrategy[WorkerFrame] = st.sampled_from(
    [Heartbeat(), SourceUnavailable(fault=SourceFault.UNREACHABLE), SourceAvailable()]
)


@st.composite
def conversations(draw: st.DrawFn) -> list[WorkerFrame]:
    """What a worker may say in one life, in its order (the conversation's rules)."""
    frames: list[WorkerFrame] = list(draw(st.lists(_ANY_TIME, max_size=3)))
    # (``frame_strategies.worker_frames`` draws any frame; these follow the conversation.)
    if draw(st.booleans()):
        frames.append(Ready())
        frames += draw(st.lists(st.one_of(_ANY_TIME, _AFTER_READY), max_size=4))
    if draw(st.booleans()):
        frames.append(Retiring(cause=draw(st.sampled_from(RecycleCause))))
        frames += draw(st.lists(_ANY_TIME, max_size=2))
    if draw(st.booleans()):
        frames.append(ShutdownRequest())
    return frames


EXIT_KINDS = st.sampled_from(list(ExitKind))


# -- the join: frames on the channel, the exit from elsewhere, one story -----------------


def _story(life: Life) -> list[Happening]:
    told: list[Happening] = []
    while True:
        try:
            told.append(life.story.receive_nowait())
        except trio.WouldBlock:
            return told


@settings(max_examples=150, deadline=None)
@given(
    frames=conversations(),
    cuts=st.lists(st.integers(min_value=1, max_value=40), max_size=12),
    read_first=st.integers(min_value=0, max_value=12),
    partial=st.booleans(),
    held=st.booleans(),
    kind=EXIT_KINDS,
)
def test_the_exit_comes_after_everything_the_worker_wrote(
    frames: list[WorkerFrame],
    cuts: list[int],
    read_first: int,
    partial: bool,
    held: bool,
    kind: ExitKind,
) -> None:
    """However the bytes are cut and however far the reader got, the story is the worker's
    frames in order, then its exit; a trailing piece of a frame is a death mid-frame.

    ``held``: a grandchild keeps the worker's end open, so no end of stream comes first.
    """
    data = b"".join(encode_worker_frame(frame) for frame in frames)
    if partial:
        data += encode_worker_frame(TaskLeaseLost())[:-3]
    pieces = []
    for cut in cuts:
        if data:
            pieces.append(data[:cut])
            data = data[cut:]
    if data:
        pieces.append(data)

    async def main() -> list[Happening]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        life = Life(ours, None)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(life.read)
            for index, piece in enumerate(pieces):
                theirs.sendall(piece)
                if index < read_first:
                    await trio.testing.wait_all_tasks_blocked()  # the reader takes it
            if not held:
                theirs.close()
                if read_first > len(pieces):
                    await trio.testing.wait_all_tasks_blocked()  # the reader sees the end
            life.end(kind)  # reaped, after the last write
        theirs.close()
        return _story(life)

    story = trio.run(main)
    assert story == [*frames, Exit(kind, mid_frame=partial)]


def test_a_broken_rule_is_told_once_and_nothing_after_it() -> None:
    """A frame that breaks the conversation's rules ends the reading: ``Broken``, with
    what it means for the pool, then only the exit."""

    async def main() -> list[Happening]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        life = Life(ours, None)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(life.read)
            theirs.sendall(encode_worker_frame(Heartbeat()))  # before ready: rule 3
            theirs.sendall(encode_worker_frame(Ready()))
            await trio.testing.wait_all_tasks_blocked()
            life.end(ExitKind.EXIT_NONZERO)
        theirs.close()
        return _story(life)

    story = trio.run(main)
    assert len(story) == 2
    assert isinstance(story[0], Broken)
    assert story[0].error.reason is Reason.READINESS_INVALID  # before ready: its start failed
    assert story[1] == Exit(ExitKind.EXIT_NONZERO)


# -- the reducer, over every interleaving with the supervisor's events --------------------


@st.composite
def lives(draw: st.DrawFn) -> tuple[list[WorkerFrame], list[Happening]]:
    """A worker's frames, and the story with its retirement turn (if it asked) at any
    place after its ``retiring``: before its exit, or after it (then never applied)."""
    frames = draw(conversations())
    story: list[Happening] = [*frames, Exit(draw(EXIT_KINDS))]
    asked = next((i for i, frame in enumerate(story) if isinstance(frame, Retiring)), None)
    if asked is not None and draw(st.booleans()):
        at = draw(st.integers(min_value=asked + 1, max_value=len(story)))
        story.insert(at, Granted.TURN)
    return frames, story


def _replay(slot: Slot, story: list[Happening]) -> list[Act]:
    acts = []
    for happening in story:
        act = hear(slot, happening)
        if act is not None:
            acts.append(act)
    return acts


@settings(max_examples=500, deadline=None)
@given(life=lives(), entry=st.booleans(), started=st.booleans(), starting=st.booleans())
def test_the_reducer_over_every_interleaving(
    life: tuple[list[WorkerFrame], list[Happening]],
    entry: bool,
    started: bool,
    starting: bool,
) -> None:
    frames, story = life
    slot = Slot(0, entry=entry, started=started)
    slot.renew(0.0)
    acts = _replay(slot, story)
    exit_event = next(h for h in story if isinstance(h, Exit))
    granted_at = story.index(Granted.TURN) if Granted.TURN in story else None

    # The exit is the end: one END, last; nothing after it acts.
    assert acts.count(Act.END) == 1
    assert acts[-1] is Act.END
    assert slot.state is SlotState.EXITED
    assert slot.exit_kind is exit_event.kind
    assert slot.pid is None
    # Each frame that needs an act gets exactly one, in the worker's order.
    ready = any(isinstance(frame, Ready) for frame in frames)
    retiring = any(isinstance(frame, Retiring) for frame in frames)
    assert acts.count(Act.READY) == int(ready)
    assert acts.count(Act.ASK_TURN) == int(retiring)
    assert acts.count(Act.STOP) == sum(isinstance(f, ShutdownRequest) for f in frames)
    # ``retire`` goes once, only if the turn came before the exit.
    turn_in_time = granted_at is not None and granted_at < story.index(exit_event)
    assert acts.count(Act.RETIRE) == int(turn_in_time)
    assert slot.granted is turn_in_time
    assert slot.started is (started or ready)
    assert slot.retiring is retiring
    causes = [frame.cause for frame in frames if isinstance(frame, Retiring)]
    assert slot.retire_cause is (causes[0] if causes else RecycleCause.MAX_REQUESTS)

    verdict = judge(slot, starting=starting, entrypoint=ENTRYPOINT)
    assert _expected(
        frames, exit_event.kind, entry=entry, started=started or ready, starting=starting
    ) == _name(verdict)


def _name(verdict: Verdict | WorkerError) -> str:
    if isinstance(verdict, Verdict):
        return verdict.value
    return verdict.reason.value


def _expected(
    frames: list[WorkerFrame], kind: ExitKind, *, entry: bool, started: bool, starting: bool
) -> str:
    """The judgement, written out from the rules (docs/architecture.md)."""
    if any(isinstance(f, Retiring) for f in frames) and kind is ExitKind.EXIT_0:
        return "recycle"
    if entry and (started or not starting):
        return "replace"
    failed = [f for f in frames if isinstance(f, Failed)]
    if failed:
        return failed[-1].reason.value
    if starting:
        return WorkerStartFailedError(Reason.CHILD_START_FAILED).reason.value
    return WorkerLifecycleFailedError(Reason.CHILD_EXITED).reason.value


def test_a_broken_channel_fails_the_pool_and_the_exit_still_ends_the_life() -> None:
    slot = Slot(0)
    error = WorkerLifecycleFailedError(Reason.CHILD_EXITED)
    assert _replay(slot, [Ready(), Broken(error), Exit(ExitKind.EXIT_0)]) == [
        Act.READY,
        Act.FAIL,
        Act.END,
    ]


def test_nothing_after_the_exit_changes_the_slot() -> None:
    slot = Slot(0)
    assert _replay(slot, [Exit(ExitKind.SIGNAL_KILL), Ready(), Retiring(), Granted.TURN]) == [
        Act.END
    ]
    assert (slot.state, slot.started, slot.retiring) == (SlotState.EXITED, False, False)
