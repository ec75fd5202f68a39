"""A launcher that cannot boot or serve: one ``failed`` frame with its reason, then status 1,
and nothing on stdout or stderr unless debug asks for the traceback.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from launcher_harness import (
    NO_PIN,
    QUEUE_RUNTIME,
    WAIT,
    Launcher,
    assert_quiet,
    contract_argv,
    forge_current,
    launch,
    launch_spec,
    recorded_calls,
)

from coretsia.supervisor.generation.published import publish
from coretsia.supervisor.generation.spec import RuntimeEntrypoint
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.worker_channel import Failed, Ready

# --- failures: a reason frame, then status 1 -------------------------------------------


@pytest.mark.parametrize(
    "task_source",
    [
        "sources",
        ":blocking",
        "sources:",
        "no_such_module:make",
        "sources:no_such_attr",
        "sources:raising",
        "sources:not_callable",
    ],
)
def test_unresolvable_task_source(root: Path, task_source: str | None) -> None:
    publish(root, launch_spec(task_source=task_source))
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.TASK_SOURCE_UNRESOLVABLE)])
    assert_quiet(outcome)


def test_source_outside_app_path_is_unresolvable(root: Path) -> None:
    """Only app_path is searched: not the working directory ``python -m`` would add."""
    shutil.copy(root / "apps" / "sources.py", root / "rootsources.py")
    publish(root, launch_spec(task_source="rootsources:blocking"))
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.TASK_SOURCE_UNRESOLVABLE)])


@pytest.mark.parametrize(
    ("task_source", "reason", "calls"),
    [
        ("sources:invalid", Reason.TASK_SOURCE_INVALID, []),
        ("sources:other_type", Reason.TASK_SOURCE_INVALID, []),
        ("sources:not_ready", Reason.TASK_SOURCE_NOT_READY, ["assert_ready"]),
    ],
)
def test_boot_failures_before_ready(
    root: Path, task_source: str, reason: Reason, calls: list[str]
) -> None:
    publish(root, launch_spec(task_source=task_source))
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(reason)])
    assert_quiet(outcome)
    assert recorded_calls(root) == calls


@pytest.mark.parametrize(
    ("task_source", "reason", "calls"),
    [
        ("sources:receive_fails", Reason.TASK_SOURCE_RECEIVE_FAILED, []),
        ("sources:terminates", Reason.TASK_SOURCE_TERMINATED, []),
        # complete() failing is a settlement failure and never falls through to fail().
        ("sources:complete_fails", Reason.TASK_SETTLEMENT_FAILED, ["run", "complete 42"]),
        ("sources:fail_fails", Reason.TASK_SETTLEMENT_FAILED, ["run", "fail ValueError"]),
    ],
)
def test_failures_after_ready(
    root: Path, task_source: str, reason: Reason, calls: list[str]
) -> None:
    publish(root, launch_spec(task_source=task_source))
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (1, [Ready(), Failed(reason)])
    assert_quiet(outcome)
    assert recorded_calls(root) == ["assert_ready", *calls]


def test_system_exit_from_application_code_is_a_boot_failure(root: Path) -> None:
    publish(root, launch_spec(task_source="sources:exits"))
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.CHILD_START_FAILED)])
    assert_quiet(outcome)


def test_missing_generation_is_an_untrusted_generation(root: Path) -> None:
    """The supervisor published the generation it pins: gone, someone else removed it."""
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.GENERATION_UNTRUSTED)])
    assert_quiet(outcome)


def test_a_generation_its_pin_does_not_name_is_untrusted(root: Path) -> None:
    """A valid generation, but not the one the spawner pinned: refused, booting nothing."""
    publish(root, launch_spec())
    outcome = launch(root, argv=contract_argv({"generation": NO_PIN}))
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.GENERATION_UNTRUSTED)])
    assert_quiet(outcome)
    assert recorded_calls(root) == []


def test_tampered_generation_is_an_untrusted_generation(root: Path) -> None:
    publish(root, launch_spec())
    base = root / "var" / "generations"
    path = base / (base / "current").read_text().strip() / "generation.json"
    path.chmod(0o600)
    path.write_bytes(path.read_bytes().replace(b'"workers":2', b'"workers":3'))
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.GENERATION_UNTRUSTED)])
    assert_quiet(outcome)


@pytest.mark.parametrize(
    "override",
    [
        {"workers": "2"},
        {"max_requests": 0},
        {"max_memory_mb": -1},
        {"max_memory_mb": "300"},
        {"task_type": "cron"},
        {"app_path": "apps"},
        {"app_path": ["../elsewhere"]},
        {"task_source": None},
        {"hooks": {"before": ["a:b"]}},
        {"unknown": 1},
    ],
)
def test_a_spec_the_decode_refuses_is_an_untrusted_generation(
    root: Path, override: dict[str, object]
) -> None:
    """A generation the supervisor cannot have written (its encode checks by the same
    rules): refused by the worker's one decode, even pinned and fingerprinted."""
    publish(root, launch_spec())
    forge_current(root, override)
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.GENERATION_UNTRUSTED)])
    assert_quiet(outcome)
    assert recorded_calls(root) == []


@pytest.mark.parametrize(
    "record",
    [
        None,
        RuntimeEntrypoint(name="http.worker", provider=QUEUE_RUNTIME.provider),
        RuntimeEntrypoint(name="bg.worker_queue", provider="no_such_runtime:runtime"),
        RuntimeEntrypoint(name="bg.worker_queue", provider="no_such_runtime"),
    ],
    ids=["none", "another-entrypoint", "provider-gone", "provider-not-a-target"],
)
def test_runtime_entrypoint_guard_before_the_task_source(
    root: Path, record: RuntimeEntrypoint | None
) -> None:
    """The boot's guard fails with the Kernel's own token, before the source is built.

    ``sources:not_ready`` logs its ``assert_ready``: nothing logged means the task source
    was never resolved (seed 000: the guard comes before the source and before ready).
    """
    publish(root, launch_spec(task_source="sources:not_ready", runtime_entrypoint=record))
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.RUNTIME_ENTRYPOINT_UNAVAILABLE)])
    assert_quiet(outcome)
    assert recorded_calls(root) == []


def test_debug_writes_the_traceback_to_stderr(root: Path) -> None:
    publish(root, launch_spec(task_source="sources:raising", debug=True))
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.TASK_SOURCE_UNRESOLVABLE)])
    assert b"Traceback" in outcome.stderr
    assert b"factory failed" in outcome.stderr
    assert outcome.stdout == b""


def test_closed_channel_does_not_crash_the_launcher(root: Path) -> None:
    publish(root, launch_spec(task_source="sources:not_ready"))
    with Launcher(root) as launcher:
        launcher.channel.close()
        stdout, stderr = launcher.proc.communicate(timeout=WAIT)
        launcher.reaped = True
    assert launcher.proc.returncode == 1
    assert (stdout, stderr) == (b"", b"")
