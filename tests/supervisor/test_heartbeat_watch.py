"""A slot's heartbeat deadline, and what ``health`` makes of a silent worker. No processes:
the watch alone under trio's autojump clock, and the pool model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

from coretsia.supervisor.daemon.heartbeat_watch import HeartbeatWatch
from coretsia.supervisor.daemon.pool import Pool, Slot, SlotState
from coretsia.supervisor.generation.spec import GenerationSpec, TaskType
from coretsia.worker_protocol.catalogue import HealthReason
from coretsia.worker_protocol.vocabulary import Containment, Driver, PoolStatus, Transport

TIMEOUT_S = 1.0


def _events(lines: list[dict[str, object]]) -> list[tuple[object, object, object]]:
    return [(line["event"], line["level"], line.get("slot")) for line in lines]


def flagged(slot: Slot) -> bool:
    """``slot.unresponsive``, read afresh (type checkers would keep a narrowed value)."""
    return slot.unresponsive


@pytest.fixture
def slot() -> Slot:
    return Slot(3, state=SlotState.READY)


@asynccontextmanager
async def watching(watch: HeartbeatWatch, slot: Slot) -> AsyncIterator[None]:
    """``watch`` runs over ``slot`` for the block (then its worker "exits")."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch.watch, slot)
        yield
        nursery.cancel_scope.cancel()


class TestWatch:
    async def test_a_silent_worker_is_unresponsive_once_the_deadline_passes(
        self, autojump_clock: trio.testing.MockClock, slot: Slot, lines: list[dict[str, object]]
    ) -> None:
        """Nothing heard for the timeout: the slot is unresponsive, and the log says which."""
        watch = HeartbeatWatch(TIMEOUT_S)
        async with watching(watch, slot):
            await trio.sleep(TIMEOUT_S * 0.99)
            assert not flagged(slot)
            await trio.sleep(TIMEOUT_S * 0.02)
            assert flagged(slot)
        assert _events(lines) == [("worker.unresponsive", "warning", 3)]

    async def test_each_frame_pushes_the_deadline_back(
        self, autojump_clock: trio.testing.MockClock, slot: Slot, lines: list[dict[str, object]]
    ) -> None:
        """A worker heard just within the timeout, for ten timeouts, is never flagged."""
        watch = HeartbeatWatch(TIMEOUT_S)
        async with watching(watch, slot):
            for _ in range(20):
                await trio.sleep(TIMEOUT_S * 0.5)
                watch.heard()
                assert not flagged(slot)
        assert lines == []

    async def test_a_frame_after_the_silence_ends_it(
        self, autojump_clock: trio.testing.MockClock, slot: Slot, lines: list[dict[str, object]]
    ) -> None:
        """The worker speaks again (SIGCONT): responsive, logged; and watched again."""
        watch = HeartbeatWatch(TIMEOUT_S)
        async with watching(watch, slot):
            await trio.sleep(TIMEOUT_S * 5)
            assert flagged(slot)
            watch.heard()
            await trio.testing.wait_all_tasks_blocked()
            assert not flagged(slot)
            await trio.sleep(TIMEOUT_S * 1.5)
            assert flagged(slot)
        assert _events(lines) == [
            ("worker.unresponsive", "warning", 3),
            ("worker.responsive", "info", 3),
            ("worker.unresponsive", "warning", 3),
        ]

    async def test_the_end_of_the_watch_clears_the_flag(
        self, autojump_clock: trio.testing.MockClock, slot: Slot
    ) -> None:
        """The worker's exit cancels the watch: an exited worker is not a hung one."""
        watch = HeartbeatWatch(TIMEOUT_S)
        with trio.move_on_after(TIMEOUT_S * 2):
            await watch.watch(slot)
        assert not flagged(slot)

    async def test_a_frame_due_in_the_same_turn_as_the_deadline_wins(
        self, autojump_clock: trio.testing.MockClock, slot: Slot, lines: list[dict[str, object]]
    ) -> None:
        """A frame read in the very turn the deadline passes (the supervisor was the one
        stalled) counts: no flag, nothing logged. Trio runs the tasks woken in one turn
        in either order, at random: ten rounds leave a wrong order one chance in 1024."""
        for _ in range(10):
            watch = HeartbeatWatch(TIMEOUT_S)

            async def reader(watch: HeartbeatWatch = watch) -> None:
                await trio.sleep_until(trio.current_time() + TIMEOUT_S)
                watch.heard()

            async with watching(watch, slot), trio.open_nursery() as nursery:
                nursery.start_soon(reader)
                await trio.sleep(TIMEOUT_S * 1.5)
                assert not flagged(slot)
        assert lines == []


def _running_pool(*states: SlotState) -> Pool:
    spec = GenerationSpec(
        workers=len(states),
        max_requests=1,
        task_type=TaskType.QUEUE,
        task_source="jobs:source",
        app_path=(".",),
    )
    pool = Pool.of_generation(spec, 1, Driver.FORK, Transport.UNIX, Containment.PROCESS)
    pool.status = PoolStatus.RUNNING
    for slot, state in zip(pool.slots, states, strict=True):
        slot.state = state
    return pool


class TestHealth:
    def test_an_unresponsive_slot_fails_health_and_leaves_status_alone(self) -> None:
        """health: worker-slot-unresponsive; the summary still counts the slot as ready."""
        pool = _running_pool(SlotState.READY, SlotState.READY)
        before = pool.summary()
        pool.slots[1].unresponsive = True
        health = pool.health()
        assert (health.healthy, health.reason) == (False, HealthReason.SLOT_UNRESPONSIVE)
        assert health.summary == before == pool.summary()
        assert pool.status_line() == "running: 2/2 workers ready"

    def test_a_silent_slot_comes_before_one_being_replaced(self) -> None:
        """A recycle ends by itself; a hung worker may need someone to act."""
        pool = _running_pool(SlotState.READY, SlotState.SPAWNING)
        pool.slots[0].unresponsive = True
        assert pool.health().reason is HealthReason.SLOT_UNRESPONSIVE

    def test_a_stop_comes_before_a_silent_slot(self) -> None:
        pool = _running_pool(SlotState.READY)
        pool.slots[0].unresponsive = True
        pool.status = PoolStatus.STOPPING
        assert pool.health().reason is HealthReason.STOPPING

    def test_a_new_worker_of_the_slot_starts_responsive(self) -> None:
        pool = _running_pool(SlotState.READY)
        pool.slots[0].unresponsive = True
        pool.slots[0].renew(0.0)
        assert not pool.slots[0].unresponsive
