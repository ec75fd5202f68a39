"""The supervisor's in-memory picture of the pool: slots, readiness, status, health.

Pure state, no I/O: the supervisor's tasks feed it events and read projections from it,
and every change wakes whoever waits in :meth:`Pool.wait_until`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable

import attrs
import trio

from coretsia.worker_protocol.catalogue import HealthReason, Reason
from coretsia.worker_protocol.control import HealthResponse, PoolSummary
from coretsia.worker_protocol.vocabulary import Driver, PoolStatus, Transport


class SlotState(enum.Enum):
    """Where one slot's current worker is in its life."""

    SPAWNING = "spawning"
    READY = "ready"
    EXITED = "exited"


@attrs.define
class Slot:
    """One worker slot; its worker may be replaced (recycled) over the pool's life."""

    index: int
    state: SlotState = SlotState.SPAWNING
    failed_reason: Reason | None = None
    retiring: bool = False
    channel_closed: trio.Event = attrs.field(factory=trio.Event)
    """Set when the current worker's channel reached its end: every frame was read."""
    channel: trio.socket.SocketType | None = None
    """The supervisor's end of the current worker's channel (for the ``retire`` grant)."""
    entry: bool = False
    """A process entry's slot (seed 003): replaced when its worker exits, not fatal."""
    started: bool = False
    """Some worker of this slot has been ready: for an entry, what ``start`` waits for."""
    spawned_at: float = -math.inf
    """When the current worker was spawned (``trio.current_time``), for the respawn pace."""
    ready_at: float | None = None
    """When the current worker became ready, for an entry's back-off reset."""
    rapid_exits: int = 0
    """Consecutive short-lived workers of an entry: the back-off exponent."""


@attrs.define
class Pool:
    """Slots plus the pool-wide facts that ``status`` and ``health`` project."""

    pid: int
    driver: Driver
    transport: Transport
    endpoint_hash: str
    slots: list[Slot]
    status: PoolStatus = PoolStatus.STARTING
    _changed: trio.Event = attrs.field(factory=trio.Event)

    @property
    def ready_count(self) -> int:
        """Slots whose current worker sent its readiness frame and is alive."""
        return sum(1 for slot in self.slots if slot.state is SlotState.READY)

    @property
    def all_ready(self) -> bool:
        """Every slot ready."""
        return self.ready_count == len(self.slots)

    @property
    def all_started(self) -> bool:
        """What ``start`` waits for: every task slot ready, every entry ready once.

        An entry that returns at once is replaced over and over (seed 003), so it may
        never be ready at the same instant as the others; its first readiness counts.
        """
        return all(
            slot.state is SlotState.READY or (slot.entry and slot.started) for slot in self.slots
        )

    def changed(self) -> None:
        """Wake every waiter: something they may be waiting for has changed."""
        self._changed.set()
        self._changed = trio.Event()

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        """Sleep until ``condition()`` holds, re-checking after every change."""
        while not condition():
            await self._changed.wait()

    def summary(self) -> PoolSummary:
        """The safe live summary (``status``)."""
        return PoolSummary(
            pool_status=self.status,
            pid=self.pid,
            worker_count=len(self.slots),
            ready_worker_count=self.ready_count,
            driver=self.driver,
            control_transport=self.transport,
            endpoint_hash=self.endpoint_hash,
        )

    def health(self, failure_pending: bool) -> HealthResponse:
        """Healthy only when running, every slot ready and no failure pending."""
        if failure_pending:
            reason = HealthReason.CHILD_FAILURE_PENDING
        elif self.status is PoolStatus.STARTING:
            reason = HealthReason.STARTING
        elif self.status is PoolStatus.STOPPING:
            reason = HealthReason.STOPPING
        elif not self.all_ready:
            reason = HealthReason.SLOTS_NOT_READY
        else:
            reason = HealthReason.HEALTHY
        return HealthResponse(self.summary(), healthy=reason is HealthReason.HEALTHY, reason=reason)
