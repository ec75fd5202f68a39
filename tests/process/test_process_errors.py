"""ProcessError messages follow the redaction rules; the registration path stays light."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pools import install_app

from coretsia.supervisor.process import (
    AsyncMismatchError,
    DuplicateProcessNameError,
    InvalidProcessNameError,
    ProcessArgumentError,
    ProcessError,
    ProcessLimitExceededError,
    ProcessManager,
    ProcessNotFoundError,
    ProcessSnapshotError,
    ProcessTargetError,
    RegistrationClosedError,
)
from coretsia.supervisor.process_entries.errors import safe_name

SECRET = "postgres://admin:hunter2@10.0.0.5/prod"


def work(pool: Any, worker_id: int) -> None:
    """A module-level entry."""


class AsyncJob:
    enabled = True
    enable_async = True

    async def execute(self, pool: Any, worker_id: int) -> None:
        """Async."""


@pytest.mark.parametrize(
    ("cls", "bases"),
    [
        (InvalidProcessNameError, (ValueError,)),
        (DuplicateProcessNameError, (ValueError,)),
        (ProcessLimitExceededError, (ValueError,)),
        (RegistrationClosedError, (RuntimeError,)),
        (ProcessTargetError, (TypeError,)),
        (AsyncMismatchError, (TypeError,)),
        (ProcessArgumentError, (ValueError,)),
        (ProcessSnapshotError, (ValueError,)),
        (ProcessNotFoundError, (LookupError,)),
    ],
)
def test_every_error_is_a_process_error_and_a_stdlib_error(
    cls: type[ProcessError], bases: tuple[type, ...]
) -> None:
    """One base to catch them all, plus the closest stdlib type."""
    error = cls()
    assert isinstance(error, ProcessError)
    assert isinstance(error, bases)
    assert str(error) == cls.default_reason


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("maintenance", True),
        ("app.jobs.Mailer:3", True),
        ("0", True),
        ("with-dash_and.dot", True),
        ("", False),
        ("has space", False),
        ("/etc/passwd", False),
        ("../up", False),
        (SECRET, False),
        ("line\nbreak", False),
        ("ünïcode", False),
        ("x" * 129, False),
        (":leading-colon", False),
        (42, False),
    ],
)
def test_names_appear_only_when_identifier_like(name: object, shown: bool) -> None:
    """A name is appended only if it is a short identifier-like string."""
    error = ProcessNotFoundError(name=name)
    assert (safe_name(name) is not None) is shown
    if shown:
        assert str(error) == f"no process is registered under this name: {name}"
        assert error.name == name
    else:
        assert str(error) == "no process is registered under this name"
        assert error.name is None


def test_errors_pickle_with_their_safe_fields() -> None:
    """Errors survive pickling (they may cross a process boundary) unchanged."""
    error = DuplicateProcessNameError(name="job:1")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is DuplicateProcessNameError
    assert str(copy) == str(error)
    assert copy.args == error.args


def _raises(call: Any) -> ProcessError:
    with pytest.raises(ProcessError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize(
    "call",
    [
        lambda: ProcessManager().add(work, name=SECRET).add(work, name=SECRET),
        lambda: ProcessManager().get(SECRET),
        lambda: ProcessManager().add(AsyncJob(), enable_async=False, name=SECRET),
        lambda: ProcessManager().set_ipc_type(SECRET),
        lambda: ProcessManager().add_batch(SECRET, work),  # type: ignore[arg-type]
        lambda: ProcessManager().add(work, enable_async=SECRET),  # type: ignore[arg-type]
        lambda: ProcessManager().add(SECRET),  # type: ignore[arg-type]
        lambda: ProcessManager().add(lambda p, w: SECRET, name=SECRET),
        lambda: ProcessManager(msg_queue_key=SECRET),  # type: ignore[arg-type]
        lambda: ProcessManager().add_batch(1024, work, name=SECRET).add(work, name=SECRET),
    ],
    ids=[
        "duplicate",
        "not-found",
        "async-mismatch",
        "ipc-type",
        "worker-count",
        "flag",
        "not-callable",
        "lambda",
        "queue-key",
        "limit",
    ],
)
def test_messages_carry_no_user_values(call: Any) -> None:
    """Neither str(), repr() nor args show a value the caller passed."""
    error = _raises(call)
    for text in (str(error), repr(error), repr(error.args)):
        assert "hunter2" not in text
        assert "postgres" not in text
        assert "10.0.0.5" not in text
    assert error.name is None


def test_safe_name_is_shown_for_a_duplicate() -> None:
    """A plain name helps find the faulty registration."""
    error = _raises(lambda: ProcessManager().add(work, name="job").add(work, name="job"))
    assert str(error) == "a process with this name is already registered: job"


def test_worker_side_imports_stay_light(tmp_path: Path) -> None:
    """``@process`` and load_snapshot pull in neither typing nor inspect (worker boot)."""
    script = install_app(tmp_path, "light_registration.py")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.strip() == ""


def test_every_error_class_has_its_own_stable_code() -> None:
    """``code`` is a token per class (``process-...``), none shared, none inherited."""
    from coretsia.supervisor.process_entries import errors

    classes = [
        obj
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, ProcessError)
    ]
    assert len(classes) == 17
    codes = [cls.code for cls in classes]
    assert len(set(codes)) == len(codes)
    for cls in classes:
        assert "code" in vars(cls), cls
        assert cls.code.startswith("process-")
        assert cls.code.replace("-", "").isalpha()
        assert cls.code.islower()
    assert errors.PoolAlreadyRunningError.code == "process-pool-already-running"
    assert errors.HostLoopUnsupportedError.code == "process-host-loop-unsupported"
    assert errors.NestedPoolError.code == "process-pool-nested"
