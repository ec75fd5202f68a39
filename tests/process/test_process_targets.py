"""Re-creatability: every entry must be importable again by ``module:qualname`` in a worker."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pools import install_app

from coretsia.supervisor.process import (
    ProcessDefinition,
    ProcessManager,
    ProcessTargetError,
    target_of,
)

HERE = __name__


def work(pool: Any, worker_id: int) -> None:
    """A module-level function."""


async def async_work(pool: Any, worker_id: int) -> None:
    """A module-level coroutine function."""


def _logged(function: Any) -> Any:
    @functools.wraps(function)
    def wrapper(pool: Any, worker_id: int) -> object:
        return function(pool, worker_id)

    return wrapper


@_logged
def decorated(pool: Any, worker_id: int) -> None:
    """A module-level function behind a functools.wraps decorator."""


def replaced(pool: Any, worker_id: int) -> None:
    """The module attribute of this name is reassigned below."""


ORIGINAL_REPLACED = replaced
replaced = work

module_level_lambda = lambda pool, worker_id: None  # noqa: E731


class Job:
    """A Process with a no-argument constructor."""

    enabled = True
    enable_async = False

    def __init__(self, label: str = "default") -> None:
        self.label = label

    def execute(self, pool: Any, worker_id: int) -> None:
        """Do nothing."""

    def method(self, pool: Any, worker_id: int) -> None:
        """A method, to be registered bound (refused)."""

    @classmethod
    def from_class(cls, pool: Any, worker_id: int) -> None:
        """A classmethod: re-created through its class."""

    @staticmethod
    def static(pool: Any, worker_id: int) -> None:
        """A staticmethod: a plain function reached through its class."""


class NeedsArguments(Job):
    """A Process whose constructor needs an argument a worker cannot supply."""

    def __init__(self, dsn: str) -> None:
        super().__init__()
        self.dsn = dsn


class Callable_:
    """A callable class with a no-argument constructor."""

    def __call__(self, pool: Any, worker_id: int) -> None:
        """Do nothing."""


def generator(pool: Any, worker_id: int) -> Any:
    """A generator function: calling it runs nothing."""
    yield


async def async_generator(pool: Any, worker_id: int) -> Any:
    """An async generator function."""
    yield


def main_job(pool: Any, worker_id: int) -> None:
    """Moved into ``__main__`` by a test."""


class TestAccepted:
    @pytest.mark.parametrize(
        ("entry", "target"),
        [
            (work, f"{HERE}:work"),
            (async_work, f"{HERE}:async_work"),
            (decorated, f"{HERE}:decorated"),
            (Job(), f"{HERE}:Job"),
            (Job("parent-only state"), f"{HERE}:Job"),
            (Callable_(), f"{HERE}:Callable_"),
            (Job.from_class, f"{HERE}:Job.from_class"),
            (Job.static, f"{HERE}:Job.static"),
            (ProcessDefinition(work), f"{HERE}:work"),
            (len, "builtins:len"),
        ],
        ids=[
            "function",
            "async-function",
            "wrapped-function",
            "process",
            "process-default-args",
            "callable-instance",
            "classmethod",
            "staticmethod",
            "definition",
            "builtin",
        ],
    )
    def test_module_level_entries_are_accepted(self, entry: Any, target: str) -> None:
        """Module-level functions and instances of module-level classes have an address."""
        assert target_of(entry) == target
        manager = ProcessManager().add(entry, name="e")
        assert manager.entries()[0].target == target
        assert target_of(manager.get("e")) == target

    def test_kinds_tell_the_worker_what_to_build(self) -> None:
        """function: call it; process: build and execute; callable: build and call."""
        manager = ProcessManager().add(work).add(Job()).add(Callable_())
        assert [e.kind for e in manager.entries()] == ["function", "process", "callable"]

    def test_target_of_looks_through_the_override_wrapper(self) -> None:
        """An overridden task still points at the original class."""
        manager = ProcessManager().add(Job(), enable_async=False, name="job")
        assert target_of(manager.get("job")) == f"{HERE}:Job"

    def test_main_script_entries_are_recorded_as_main(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An entry of the main script is recorded as ``__main__:qualname``."""
        main = sys.modules["__main__"]
        monkeypatch.setattr(main_job, "__module__", "__main__")
        monkeypatch.setattr(main, "main_job", main_job, raising=False)
        monkeypatch.setattr(main, "__file__", __file__, raising=False)
        assert target_of(main_job) == "__main__:main_job"
        manager = ProcessManager().add(main_job)
        assert manager.entries()[0].target == "__main__:main_job"


class TestRefused:
    def test_main_without_a_file_is_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """``python -c`` or an interactive session cannot be re-imported by a worker."""
        main = sys.modules["__main__"]
        monkeypatch.setattr(main_job, "__module__", "__main__")
        monkeypatch.setattr(main, "main_job", main_job, raising=False)
        monkeypatch.setattr(main, "__spec__", None, raising=False)
        monkeypatch.delattr(main, "__file__", raising=False)
        with pytest.raises(ProcessTargetError, match="script without a file"):
            target_of(main_job)
        monkeypatch.setattr(main, "__file__", "<stdin>", raising=False)
        with pytest.raises(ProcessTargetError, match="script without a file"):
            ProcessManager().add(main_job)

    @pytest.mark.parametrize(
        ("make", "sentence"),
        [
            (lambda: lambda pool, worker_id: None, "a lambda cannot be re-created"),
            (lambda: module_level_lambda, "a lambda cannot be re-created"),
            (lambda: _closure(), "a closure cannot be re-created"),
            (lambda: _nested(), "a nested function cannot be re-created"),
            (lambda: _local_class_instance(), "a class defined inside a function"),
            (lambda: Job().method, "a bound method of an instance"),
            (lambda: [].append, "a bound method of an instance"),
            (lambda: NeedsArguments("postgres://user:secret@host/db"), "needs constructor"),
            (lambda: Job, "a class was given"),
            (lambda: ORIGINAL_REPLACED, "lead to another object"),
            (lambda: functools.partial(work), "constructor"),
            (lambda: 42, "neither a Process nor a callable"),
            (lambda: generator, "a generator function"),
            (lambda: async_generator, "a generator function"),
        ],
        ids=[
            "lambda",
            "module-level-lambda",
            "closure",
            "nested-function",
            "local-class",
            "bound-method",
            "builtin-bound-method",
            "constructor-arguments",
            "class-object",
            "reassigned-name",
            "partial",
            "not-callable",
            "generator",
            "async-generator",
        ],
    )
    def test_unrecreatable_entries_are_refused(self, make: Any, sentence: str) -> None:
        """Refused at registration with a sentence naming the rule; nothing added."""
        entry = make()
        manager = ProcessManager()
        with pytest.raises(ProcessTargetError, match=sentence) as caught:
            manager.add(entry, name="entry")
        assert manager.all() == {}
        assert "secret" not in str(caught.value)
        assert "postgres" not in repr(caught.value)

    def test_target_of_refuses_what_add_refuses(self) -> None:
        """target_of raises the same error for an entry with no address."""
        with pytest.raises(ProcessTargetError):
            target_of(_closure())

    def test_definition_of_a_closure_is_refused(self) -> None:
        """Wrapping a closure in ProcessDefinition does not make it re-creatable."""
        with pytest.raises(ProcessTargetError, match="closure"):
            ProcessManager().add(ProcessDefinition(_closure()))

    def test_process_without_flags_is_refused(self) -> None:
        """An object with execute but no enabled / enable_async breaks the protocol."""
        with pytest.raises(ProcessTargetError, match="enabled and enable_async"):
            ProcessManager().add(NoFlags())  # type: ignore[arg-type]

    def test_process_with_non_bool_flags_is_refused(self) -> None:
        """The protocol's flags are bools, not merely truthy values."""
        with pytest.raises(ProcessTargetError, match="must be bools"):
            ProcessManager().add(TruthyFlags())  # type: ignore[arg-type]


class NoFlags:
    def execute(self, pool: Any, worker_id: int) -> None:
        """Has execute, lacks the flags."""


class TruthyFlags:
    enabled = 1
    enable_async = 0

    def execute(self, pool: Any, worker_id: int) -> None:
        """Flags are ints."""


def _closure() -> Any:
    state = {"n": 0}

    def tick(pool: Any, worker_id: int) -> None:
        state["n"] += 1

    return tick


def _nested() -> Any:
    def tick(pool: Any, worker_id: int) -> None:
        """No free variables, still nested."""

    return tick


def _local_class_instance() -> Any:
    class Local(Job):
        pass

    return Local()


def test_a_real_script_records_main_targets(tmp_path: Path) -> None:
    """Run as a script, its entries are ``__main__:qualname``; a lambda is refused."""
    script = install_app(tmp_path, "pool_script.py")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=30, check=True
    )
    entries_line, refusal = done.stdout.splitlines()
    assert json.loads(entries_line) == [
        ["0", "__main__:tick", "function"],
        ["job:0", "__main__:Job", "process"],
        ["job:1", "__main__:Job", "process"],
    ]
    assert refusal == "a lambda cannot be re-created in a worker"


DASH_C = """
from coretsia.supervisor.process import ProcessError, ProcessManager


def tick(pool, worker_id):
    pass


try:
    ProcessManager().add(tick)
except ProcessError as exc:
    print(exc)
"""


def test_python_dash_c_cannot_host_entries() -> None:
    """Code given with ``-c`` has no file to re-import: its entries are refused."""
    done = subprocess.run(
        [sys.executable, "-c", DASH_C], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.strip() == (
        "an entry of a script without a file (python -c, an interactive session) "
        "cannot be re-imported by a worker"
    )
