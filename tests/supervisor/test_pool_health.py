"""``health``'s reason chosen by the pool, case by case (operations.md's table).

The real pool's reasons are reached end to end in ``tests/lifecycle/test_lifecycle_health.py``;
here the rule that picks one when several apply is checked on the pool object itself: a
failure first (the pool is about to shut down whatever else is true), then ``starting``,
then ``stopping``, then a silent slot before a slot being replaced (a recycle ends by
itself, a hung worker may wait for someone to act), and healthy only when none applies.
"""

from __future__ import annotations

import pytest
from control_handlers import pool_of

from coretsia.supervisor.daemon.pool import Slot, SlotState
from coretsia.worker_protocol.catalogue import HealthReason, Reason
from coretsia.worker_protocol.exceptions import WorkerLifecycleFailedError
from coretsia.worker_protocol.vocabulary import PoolStatus

READY, SPAWNING = SlotState.READY, SlotState.SPAWNING
STARTING, RUNNING, STOPPING = PoolStatus.STARTING, PoolStatus.RUNNING, PoolStatus.STOPPING

CASES = [
    # (status, failed, slot states, unresponsive slots) -> reason
    (RUNNING, False, (READY, READY), (), HealthReason.HEALTHY),
    (RUNNING, False, (READY, SPAWNING), (), HealthReason.SLOTS_NOT_READY),
    (RUNNING, False, (READY, READY), (0,), HealthReason.SLOT_UNRESPONSIVE),
    (RUNNING, False, (READY, SPAWNING), (0,), HealthReason.SLOT_UNRESPONSIVE),
    (STARTING, False, (READY, READY), (), HealthReason.STARTING),
    (STARTING, False, (READY, SPAWNING), (0,), HealthReason.STARTING),
    (STOPPING, False, (READY, READY), (), HealthReason.STOPPING),
    (STOPPING, False, (READY, SPAWNING), (0,), HealthReason.STOPPING),
    (RUNNING, True, (READY, READY), (), HealthReason.CHILD_FAILURE_PENDING),
    (STARTING, True, (READY, SPAWNING), (), HealthReason.CHILD_FAILURE_PENDING),
    (STOPPING, True, (READY, READY), (0,), HealthReason.CHILD_FAILURE_PENDING),
]


@pytest.mark.parametrize(
    ("status", "failed", "states", "silent", "expected"),
    CASES,
    ids=[case[-1].value + f"-{i}" for i, case in enumerate(CASES)],
)
def test_reason(
    status: PoolStatus,
    failed: bool,
    states: tuple[SlotState, ...],
    silent: tuple[int, ...],
    expected: HealthReason,
) -> None:
    """The first reason that applies, in the documented order; healthy only alone."""
    slots = [
        Slot(index, state=state, unresponsive=index in silent) for index, state in enumerate(states)
    ]
    pool = pool_of(slots)
    pool.status = status
    if failed:
        pool.fail(WorkerLifecycleFailedError(Reason.CHILD_EXITED))
    answer = pool.health()
    assert (answer.reason, answer.healthy) == (expected, expected is HealthReason.HEALTHY)
    assert answer.summary.pool_status is status
