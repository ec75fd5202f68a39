"""A task and its hooks that log every call and fail where told: the precedence table's
test double, shared by the worker-loop tests with and without telemetry."""

from __future__ import annotations

from collections.abc import Callable

from coretsia.supervisor.shared.telemetry import NO_TELEMETRY, Telemetry
from coretsia.supervisor.worker_side.exits import WorkerExit
from coretsia.supervisor.worker_side.task_loop import Hooks, run_unit
from coretsia.worker_protocol.catalogue import Reason


class StepFailed(ValueError):
    """What a step told to fail raises; its message carries a path no output may show."""

    def __init__(self, step: str) -> None:
        super().__init__(f"{step} failed at /srv/secret")
        self.step = step


class Recorder:
    """Logs ``before``, ``run``, ``after``, ``reset``, ``complete <result>``, ``fail <step>``."""

    def __init__(self, fail_at: str = "") -> None:
        self.calls: list[str] = []
        self.fail_at = fail_at

    def _step(self, name: str) -> None:
        self.calls.append(name)
        if name == self.fail_at:
            raise StepFailed(name)

    def hook(self, name: str) -> Callable[[], None]:
        return lambda: self._step(name)

    def hooks(self) -> Hooks:
        return Hooks([self.hook("before")], [self.hook("after")], [self.hook("reset")])

    def run(self) -> object:
        self._step("run")
        return 42

    def complete(self, result: object) -> None:
        self._step(f"complete {result}")

    def fail(self, error: BaseException) -> None:
        self._step(f"fail {error.step if isinstance(error, StepFailed) else error}")


def run_recorded(
    fail_at: str, telemetry: Telemetry = NO_TELEMETRY
) -> tuple[list[str], Reason | None]:
    """One unit of a fresh :class:`Recorder`: its calls and the terminal reason, if any."""
    task = Recorder(fail_at)
    try:
        run_unit(task, task.hooks(), telemetry, "queue")
    except WorkerExit as leaving:
        return task.calls, leaving.reason
    return task.calls, None
