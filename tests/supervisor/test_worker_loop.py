"""The unit of work's precedence table (coretsia.supervisor.worker_side.task_loop), row by row."""

from __future__ import annotations

import pytest
from unit_recorder import Recorder, run_recorded

from coretsia.supervisor.worker_side.exits import WorkerExit
from coretsia.supervisor.worker_side.task_loop import Hooks, run_unit
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.task_source import TaskSourceStorageError


@pytest.mark.parametrize(
    ("fail_at", "calls", "reason"),
    [
        ("", ["before", "run", "after", "reset", "complete 42"], None),
        ("before", ["before", "after", "reset", "fail before"], None),
        ("run", ["before", "run", "after", "reset", "fail run"], None),
        ("after", ["before", "run", "after"], Reason.TASK_HOOK_FAILED),
        ("reset", ["before", "run", "after", "reset"], Reason.TASK_RESET_FAILED),
        (
            "complete 42",
            ["before", "run", "after", "reset", "complete 42"],
            Reason.TASK_SETTLEMENT_FAILED,
        ),
    ],
    ids=["success", "before-hook", "task", "after-hook", "reset-hook", "complete"],
)
def test_precedence_table(fail_at: str, calls: list[str], reason: Reason | None) -> None:
    """Each failure point leads to exactly the table's settlement and outcome."""
    assert run_recorded(fail_at) == (calls, reason)


def test_failing_fail_is_a_settlement_failure() -> None:
    """A fail() that raises is a settlement failure too."""
    task = Recorder("fail run")
    task.fail_at = "run"

    def failing_fail(error: BaseException) -> None:
        raise RuntimeError("broker gone")

    task.fail = failing_fail  # type: ignore[method-assign]
    with pytest.raises(WorkerExit) as leaving:
        run_unit(task, Hooks())
    assert leaving.value.reason is Reason.TASK_SETTLEMENT_FAILED


def test_failing_complete_never_calls_fail() -> None:
    """complete() raising is terminal and fail() is not called after it."""
    calls, reason = run_recorded("complete 42")
    assert reason is Reason.TASK_SETTLEMENT_FAILED
    assert not any(call.startswith("fail") for call in calls)


def test_a_source_that_names_its_storage_fault_is_reported_so() -> None:
    """A settlement raising TaskSourceStorageError ends the worker with its reason."""
    task = Recorder("complete 42")

    def full(result: object) -> None:
        raise TaskSourceStorageError(Reason.TASK_SOURCE_FULL)

    task.complete = full  # type: ignore[method-assign]
    with pytest.raises(WorkerExit) as leaving:
        run_unit(task, Hooks())
    assert leaving.value.reason is Reason.TASK_SOURCE_FULL
