"""Seed 003's async inheritance table, cell by cell, plus the Python shape rule.

The table gives the effective flag from the registration override (rows) and the task's
own ``enable_async`` (columns). In Python the effective flag must also match the entry's
shape (``async def execute`` or not), so each cell is tested twice: with the shape the
cell produces (accepted, the flag recorded) and with the other shape (refused).
"""

from __future__ import annotations

from typing import Any

import pytest

from coretsia.supervisor.process import (
    AsyncMismatchError,
    ProcessDefinition,
    ProcessManager,
    effective_async,
    snapshot,
)

# (override, task flag) -> effective flag, exactly seed 003's table.
TABLE = [
    (None, False, False),
    (None, True, True),
    (False, False, False),
    (False, True, False),
    (True, False, True),
    (True, True, True),
]
IDS = [f"override={o}-task={t}" for o, t, _ in TABLE]


class SyncFalse:
    enabled = True
    enable_async = False

    def execute(self, pool: Any, worker_id: int) -> None:
        """Plain execute, flag false."""


class SyncTrue:
    enabled = True
    enable_async = True

    def execute(self, pool: Any, worker_id: int) -> None:
        """Plain execute, flag true (a lie unless overridden to false)."""


class AsyncFalse:
    enabled = True
    enable_async = False

    async def execute(self, pool: Any, worker_id: int) -> None:
        """Async execute, flag false (a lie unless overridden to true)."""


class AsyncTrue:
    enabled = True
    enable_async = True

    async def execute(self, pool: Any, worker_id: int) -> None:
        """Async execute, flag true."""


TASKS: dict[tuple[bool, bool], type[SyncFalse | SyncTrue | AsyncFalse | AsyncTrue]] = {
    (False, False): SyncFalse,
    (False, True): SyncTrue,
    (True, False): AsyncFalse,
    (True, True): AsyncTrue,
}  # (async shape, task flag) -> class


def plain(pool: Any, worker_id: int) -> None:
    """A plain function entry."""


async def coroutine(pool: Any, worker_id: int) -> None:
    """An async function entry."""


@pytest.mark.parametrize(("override", "own", "effective"), TABLE, ids=IDS)
def test_effective_flag_follows_the_table(
    override: bool | None, own: bool, effective: bool
) -> None:
    """effective_async computes seed 003's cell."""
    assert effective_async(override, own) is effective


@pytest.mark.parametrize(("override", "own", "effective"), TABLE, ids=IDS)
def test_cell_accepted_when_the_shape_matches(
    override: bool | None, own: bool, effective: bool
) -> None:
    """A task whose shape is the cell's effective flag registers with that flag."""
    task = TASKS[(effective, own)]()
    manager = ProcessManager().add(task, enable_async=override, name="job")
    registered = manager.get("job")
    assert registered.enable_async is effective
    assert task.enable_async is own  # never mutated
    assert (registered is task) is (override is None)
    assert snapshot(manager)["entries"] == [
        {
            "worker_id": 0,
            "name": "job",
            "target": f"{__name__}:{type(task).__qualname__}",
            "kind": "process",
            "enable_async": effective,
        }
    ]


@pytest.mark.parametrize(("override", "own", "effective"), TABLE, ids=IDS)
def test_cell_refused_when_the_shape_contradicts(
    override: bool | None, own: bool, effective: bool
) -> None:
    """A task whose shape is the other one is refused at registration; nothing added."""
    task = TASKS[(not effective, own)]()
    manager = ProcessManager()
    with pytest.raises(AsyncMismatchError):
        manager.add(task, enable_async=override, name="job")
    assert manager.all() == {}


@pytest.mark.parametrize(
    ("function", "override", "accepted"),
    [
        (plain, None, True),
        (plain, False, True),
        (plain, True, False),
        (coroutine, None, True),
        (coroutine, True, True),
        (coroutine, False, False),
    ],
)
def test_callables_take_their_shape_as_their_own_flag(
    function: Any, override: bool | None, accepted: bool
) -> None:
    """A callable's own flag is its shape; an override must agree with it."""
    manager = ProcessManager()
    if not accepted:
        with pytest.raises(AsyncMismatchError):
            manager.add(function, enable_async=override)
        return
    task = manager.add(function, enable_async=override).get("0")
    assert isinstance(task, ProcessDefinition)
    assert task.function is function
    assert task.enable_async is (function is coroutine)


def test_definition_defaults_follow_the_shape() -> None:
    """ProcessDefinition defaults to false for a plain function, true for async def."""
    assert ProcessDefinition(plain).enable_async is False
    assert ProcessDefinition(coroutine).enable_async is True
    assert ProcessDefinition(plain).enabled is True


def test_definition_with_a_contradicting_flag_is_refused_at_registration() -> None:
    """An explicit ProcessDefinition flag is checked against the shape when registered."""
    with pytest.raises(AsyncMismatchError):
        ProcessManager().add(ProcessDefinition(plain, enable_async=True))
    with pytest.raises(AsyncMismatchError):
        ProcessManager().add(ProcessDefinition(coroutine, enable_async=False))


def test_disabled_entry_is_still_checked() -> None:
    """A contradiction is refused even when the entry is disabled (it would fail later)."""
    with pytest.raises(AsyncMismatchError):
        ProcessManager().add(ProcessDefinition(plain, enable_async=True, enabled=False))
