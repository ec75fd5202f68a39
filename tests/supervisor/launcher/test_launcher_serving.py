"""A launcher that boots and serves: ready, clean exit on a stop, retirement after
``max_requests`` and the wait for the supervisor's grant, and failed tasks settled and
reported with only well-typed fields.
"""

from __future__ import annotations

import select
from pathlib import Path

import psutil
import pytest
from launcher_harness import WAIT, Launcher, assert_quiet, launch, launch_spec, recorded_calls
from pools import wait_for

from coretsia.supervisor.generation.published import publish
from coretsia.worker_protocol.worker_channel import (
    Ready,
    RecycleCause,
    Retiring,
    TaskFailed,
    decode_worker_frame,
    encode_retire,
)

# --- clean endings ---------------------------------------------------------------------


def test_ready_then_clean_exit_on_stop(root: Path) -> None:
    publish(root, launch_spec())
    with Launcher(root) as launcher:
        assert launcher.next_frame() == Ready()
        launcher.stop()  # receive() is blocked in wait_for_stop(None): it must wake
        outcome = launcher.finish()
    assert outcome.code == 0
    assert outcome.frames == [Ready()]
    assert_quiet(outcome)
    assert recorded_calls(root) == [
        "context True queue 1 False False",
        "env False",  # the parent pid variable is the launcher's, never the application's
        "path apps",  # app_path comes first; python -m's working-directory entry is gone
        "assert_ready",
    ]


def test_stop_requested_before_boot_exits_cleanly_after_ready(root: Path) -> None:
    publish(root, launch_spec(task_source="sources:immediate"))
    with Launcher(root) as launcher:
        launcher.stop()
        outcome = launcher.finish()
    assert (outcome.code, outcome.frames) == (0, [Ready()])
    assert "run" not in recorded_calls(root)


def test_retires_after_max_requests(root: Path) -> None:
    publish(root, launch_spec(task_source="sources:immediate", max_requests=3))
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (0, [Ready(), Retiring()])
    assert_quiet(outcome)
    calls = recorded_calls(root)
    # It asks after 3 attempts, may take a 4th while the grant travels, never a 5th.
    assert calls in (
        ["assert_ready"] + ["run", "complete 42"] * 3,
        ["assert_ready"] + ["run", "complete 42"] * 4,
    )


def test_retirement_takes_one_more_task_then_waits_for_the_grant(root: Path) -> None:
    publish(root, launch_spec(task_source="sources:immediate", max_requests=2))
    with Launcher(root) as launcher:
        _read_ready_and_retiring(launcher)
        # Without the grant it serves one more (max_requests + 1), then waits alive. The
        # source hands out tasks in microseconds: a worker that served on would be far
        # past 3 attempts by the time the grant below arrives.
        wait_for(lambda: recorded_calls(root).count("complete 42") == 3)
        _assert_waiting(launcher)
        launcher.channel.sendall(encode_retire())
        outcome = launcher.finish()
        assert outcome.code == 0
    assert recorded_calls(root) == ["assert_ready"] + ["run", "complete 42"] * 3


def test_past_max_memory_it_retires_after_that_task_and_takes_no_other(root: Path) -> None:
    """Any interpreter is past 1 MiB: the first task is the last, cause max-memory."""
    spec = launch_spec(task_source="sources:immediate", max_requests=1000, max_memory_mb=1)
    publish(root, spec)
    with Launcher(root) as launcher:
        _read_ready_and_retiring(launcher, Retiring(RecycleCause.MAX_MEMORY))
        _assert_waiting(launcher)  # not a second task while the grant travels
        assert recorded_calls(root) == ["assert_ready", "run", "complete 42"]
        launcher.channel.sendall(encode_retire())
        outcome = launcher.finish()
        assert outcome.code == 0
    assert recorded_calls(root) == ["assert_ready", "run", "complete 42"]


def test_below_max_memory_it_serves_on_to_max_requests(root: Path) -> None:
    """A limit far above the worker's memory changes nothing: it retires at max_requests."""
    publish(root, launch_spec(task_source="sources:immediate", max_requests=3, max_memory_mb=4096))
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (0, [Ready(), Retiring(RecycleCause.MAX_REQUESTS)])
    assert recorded_calls(root).count("complete 42") in (3, 4)


def _read_ready_and_retiring(launcher: Launcher, retiring: Retiring | None = None) -> None:
    """Read ``ready``, then ``retiring`` by hand: ``next_frame`` would grant it."""
    launcher.channel.settimeout(WAIT)
    assert launcher.next_frame() == Ready()
    data = launcher.buffer  # retiring may already sit here, read with ready
    while b"\n" not in data:
        data += launcher.channel.recv(4096)
    line, launcher.buffer = data.split(b"\n", 1)
    assert decode_worker_frame(line + b"\n") == (retiring or Retiring())


def _assert_waiting(launcher: Launcher) -> None:
    """The worker is alive, blocked (asleep in the kernel), and has sent nothing more."""
    process = psutil.Process(launcher.proc.pid)
    wait_for(lambda: process.status() == psutil.STATUS_SLEEPING, timeout=WAIT)
    assert launcher.proc.poll() is None, "it left without the grant"
    assert select.select([launcher.channel], [], [], 0)[0] == [], "it sent another frame"


def test_a_stop_ends_the_wait_for_the_grant(root: Path) -> None:
    publish(root, launch_spec(task_source="sources:immediate", max_requests=1))
    with Launcher(root) as launcher:
        _read_ready_and_retiring(launcher)
        wait_for(lambda: recorded_calls(root).count("complete 42") == 2)
        _assert_waiting(launcher)
        launcher.stop()  # no grant: the stop alone must end the wait
        _, stderr = launcher.proc.communicate(timeout=WAIT)
        launcher.reaped = True
    assert launcher.proc.returncode == 0, stderr
    assert recorded_calls(root) == ["assert_ready"] + ["run", "complete 42"] * 2


def test_failed_task_is_settled_with_fail_and_counts_as_an_attempt(root: Path) -> None:
    publish(root, launch_spec(task_source="sources:run_fails", max_requests=2))
    outcome = launch(root)
    failed = TaskFailed("ValueError")  # this test source's task has no attempt/retried
    assert outcome.code == 0
    assert outcome.frames in (
        [Ready(), failed, failed, Retiring()],
        [Ready(), failed, failed, Retiring(), failed],
    )
    assert_quiet(outcome)
    assert recorded_calls(root) in (
        ["assert_ready"] + ["run", "fail ValueError"] * 2,
        ["assert_ready"] + ["run", "fail ValueError"] * 3,
    )


@pytest.mark.parametrize(
    ("factory", "frame"),
    [
        ("says_attempt", TaskFailed("ValueError", 2, retried=False)),
        ("says_nonsense", TaskFailed("ValueError")),  # True is no attempt, "yes" no bool
    ],
)
def test_task_failed_carries_only_well_typed_attempt_and_retried(
    root: Path, factory: str, frame: TaskFailed
) -> None:
    publish(root, launch_spec(task_source=f"sources:{factory}", max_requests=1))
    outcome = launch(root)
    assert outcome.code == 0
    assert outcome.frames[:2] == [Ready(), frame]


def test_dotted_factory_path_resolves(root: Path) -> None:
    publish(root, launch_spec(task_source="sources:Nested.factory", max_requests=1))
    outcome = launch(root)
    assert (outcome.code, outcome.frames) == (0, [Ready(), Retiring()])
