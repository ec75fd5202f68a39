"""How a run ends: the pool's first stop or failure cancels every scope it handed out,
and retire turns go one slot at a time. No processes: the model alone, under trio."""

from __future__ import annotations

import trio

from coretsia.supervisor.daemon.pool import Pool, Slot, SlotState, StopCause
from coretsia.supervisor.daemon.slots import RetireTurns
from coretsia.supervisor.generation.spec import GenerationSpec, TaskType
from coretsia.supervisor.process_entries.record import ProcessSnapshot, SnapshotEntry
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.vocabulary import Containment, Driver, PoolStatus, Transport


def make_pool(slots: int = 2, entries: int = 0) -> Pool:
    processes = ProcessSnapshot(
        "none",
        0,
        tuple(
            SnapshotEntry(i, f"e{i}", "jobs:run", "function", enable_async=False)
            for i in range(entries)
        ),
        (),
    )
    spec = GenerationSpec(
        workers=slots,
        max_requests=1,
        task_type=TaskType.QUEUE,
        task_source="jobs:source",
        app_path=(".",),
        processes=processes,
    )
    return Pool.of_generation(spec, 1, Driver.FORK, Transport.UNIX, Containment.PROCESS)


async def test_a_stop_cancels_every_scope_the_pool_handed_out() -> None:
    pool = make_pool()
    reached: list[str] = []

    async def waits(name: str) -> None:
        with pool.until_ending():
            await trio.sleep_forever()
        reached.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waits, "a")
        nursery.start_soon(waits, "b")
        await trio.testing.wait_all_tasks_blocked()
        pool.request_stop(StopCause.OPERATOR)
    assert sorted(reached) == ["a", "b"]
    assert pool.ending
    assert pool.failure is None


async def test_a_scope_opened_after_the_end_is_cancelled_at_once() -> None:
    pool = make_pool()
    pool.fail(WorkerLifecycleFailedError(Reason.CHILD_EXITED))
    with pool.until_ending() as scope:
        await trio.sleep_forever()
    assert scope.cancelled_caught


async def test_a_scope_left_normally_is_forgotten() -> None:
    """Every worker life opens a scope: a long-running pool must not keep them all.

    (Cancelling a scope already left is harmless, so only the pool's own record can
    show a leak.)
    """
    pool = make_pool()
    for _ in range(1000):
        with pool.until_ending():
            await trio.lowlevel.checkpoint()
    with pool.until_ending():
        assert len(pool._scopes) == 1
    assert pool._scopes == set()


def test_the_first_failure_and_the_first_stop_cause_are_kept() -> None:
    pool = make_pool()
    first = WorkerStartFailedError(Reason.READINESS_TIMEOUT)
    pool.request_stop(StopCause.APPLICATION)
    pool.request_stop(StopCause.OPERATOR)
    pool.fail(first)
    pool.fail(WorkerLifecycleFailedError(Reason.SHUTDOWN_FAILED))
    assert pool.stop_cause is StopCause.APPLICATION
    assert pool.failure is first


def test_started_is_set_once_every_slot_started_and_entries_count_once() -> None:
    pool = make_pool(slots=1, entries=1)
    task, entry = pool.slots
    assert entry.entry
    assert not task.entry
    task.state = SlotState.READY
    pool.note_ready()
    assert not pool.started.is_set()
    entry.started = True  # an entry that was ready once and has exited since
    entry.state = SlotState.EXITED
    pool.note_ready()
    assert pool.started.is_set()


def test_health_names_the_pending_failure_first() -> None:
    pool = make_pool(slots=1)
    pool.slots[0].state = SlotState.READY
    pool.status = PoolStatus.RUNNING
    assert pool.health().healthy
    pool.fail(WorkerLifecycleFailedError(Reason.CHILD_EXITED))
    assert not pool.health().healthy
    assert pool.health().reason.value == "worker-child-failure-pending"


def asking(index: int) -> Slot:
    slot = Slot(index, state=SlotState.READY)
    slot.retiring = True
    return slot


def test_retire_turns_go_one_at_a_time_in_the_order_asked() -> None:
    granted: list[int] = []
    turns = RetireTurns(lambda slot: granted.append(slot.index))
    first, second, third = asking(0), asking(1), asking(2)
    for slot in (first, second, third):
        turns.ask(slot)
    assert granted == [0]
    turns.release(second)  # not the holder: changes nothing
    assert granted == [0]
    turns.release(first)
    assert granted == [0, 1]
    turns.release(second)
    assert granted == [0, 1, 2]


def test_a_slot_that_exited_or_never_asked_is_passed_over() -> None:
    granted: list[int] = []
    turns = RetireTurns(lambda slot: granted.append(slot.index))
    holder, gone, renewed, waiting = asking(0), asking(1), asking(2), asking(3)
    turns.ask(holder)
    turns.ask(gone)
    turns.ask(renewed)
    turns.ask(waiting)
    gone.state = SlotState.EXITED
    renewed.renew(0.0)  # its worker was replaced before its turn: the new one never asked
    renewed.state = SlotState.READY
    turns.release(holder)
    assert granted == [0, 3]
