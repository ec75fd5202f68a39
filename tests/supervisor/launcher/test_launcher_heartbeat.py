"""The worker's heartbeat: off by default (no thread, no import), and when on, beats from ready
on in a thread that blocks every signal, even through a task ten times the timeout.
"""

from __future__ import annotations

import itertools
import select
import signal
import time
from pathlib import Path

import psutil
import pytest
from launcher_harness import Launcher, assert_quiet, launch_spec, recorded_calls
from pools import wait_for

from coretsia.supervisor.generation.published import publish
from coretsia.worker_protocol.worker_channel import Heartbeat, Ready

# --- the heartbeat ---------------------------------------------------------------------

HEARTBEAT_MS = 300
GAPS_ALONE = (
    "every gap between beats must stay under the 300 ms timeout: a worker process that "
    "other tests' processes keep off the CPU can miss it"
)


def _thread_ids(pid: int) -> list[int]:
    return sorted(thread.id for thread in psutil.Process(pid).threads())


def _blocked_signals(pid: int, tid: int) -> int:
    """The signal mask of one thread of ``pid`` (Linux's ``SigBlk``)."""
    for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines():
        if line.startswith("SigBlk:"):
            return int(line.split()[1], 16)
    raise AssertionError("no SigBlk line")


def _silent_for(launcher: Launcher, seconds: float) -> bool:
    """Whether nothing arrives on the channel for ``seconds`` (a negative observation)."""
    return not select.select([launcher.channel], [], [], seconds)[0]


def test_off_no_heartbeat_no_thread_no_import(root: Path) -> None:
    """heartbeat_timeout_ms = 0 (the default): ready alone, one thread, and the heartbeat
    code is never imported."""
    publish(root, launch_spec(heartbeat_timeout_ms=0))
    with Launcher(root, python_flags=("-X", "importtime")) as launcher:
        assert launcher.next_frame() == Ready()
        assert len(_thread_ids(launcher.proc.pid)) == 1
        assert _silent_for(launcher, HEARTBEAT_MS * 2 / 1000)
        launcher.stop()
        outcome = launcher.finish()
    assert (outcome.code, outcome.frames) == (0, [Ready()])
    lines = outcome.stderr.decode().splitlines()
    modules = {ln.rsplit("|", 1)[1].strip() for ln in lines if ln.startswith("import time:")}
    assert "coretsia.supervisor.worker_side.channel" in modules
    assert {"coretsia.supervisor.worker_side.heartbeat", "threading"} & modules == set()


@pytest.mark.serial(reason=GAPS_ALONE)
def test_beats_from_ready_on_in_a_thread_that_blocks_every_signal(root: Path) -> None:
    """On: a heartbeat right after ready, then every third of the timeout, from one more
    thread, which leaves the process's signals to the main thread."""
    publish(root, launch_spec(heartbeat_timeout_ms=HEARTBEAT_MS))
    with Launcher(root) as launcher:
        assert launcher.next_frame() == Ready()
        assert launcher.next_frame() == Heartbeat()
        beats = [time.monotonic()]
        while len(beats) < 4:
            assert launcher.next_frame() == Heartbeat()
            beats.append(time.monotonic())
        gaps = [b - a for a, b in itertools.pairwise(beats)]
        assert all(0.05 < gap < HEARTBEAT_MS / 1000 for gap in gaps), gaps
        pid = launcher.proc.pid
        main, beating = _thread_ids(pid)
        assert main == pid
        term = 1 << (signal.SIGTERM - 1)
        assert _blocked_signals(pid, beating) & term
        assert not _blocked_signals(pid, main) & term
        launcher.stop()
        outcome = launcher.finish()
    assert outcome.code == 0
    assert outcome.frames[0] == Ready()
    assert set(outcome.frames[1:]) == {Heartbeat()}
    assert_quiet(outcome)


@pytest.mark.serial(reason=GAPS_ALONE)
@pytest.mark.parametrize("busy", [True, False], ids=["python", "sleep"])
def test_a_task_ten_times_the_timeout_keeps_beating(root: Path, busy: bool) -> None:
    """A task busy in Python bytecode, or asleep in C, for ten timeouts: the beats go on,
    never further apart than the timeout."""
    options = {"task_ms": HEARTBEAT_MS * 10, "busy": busy}
    publish(
        root,
        launch_spec(
            task_source="sources:long_task",
            source_options=options,
            heartbeat_timeout_ms=HEARTBEAT_MS,
        ),
    )
    with Launcher(root) as launcher:
        assert launcher.next_frame() == Ready()
        wait_for(lambda: "run" in recorded_calls(root))
        beats = [time.monotonic()]
        while "complete" not in recorded_calls(root):
            assert launcher.next_frame() == Heartbeat()
            beats.append(time.monotonic())
        launcher.stop()
        outcome = launcher.finish()
    gaps = [b - a for a, b in itertools.pairwise(beats)]
    assert len(gaps) >= 15, gaps  # about 30 in three seconds
    assert max(gaps) < HEARTBEAT_MS / 1000, gaps
    assert outcome.code == 0
    assert_quiet(outcome)
