"""Containment under every kill, for both drivers: no orphan, no overlap, a free lock.

Budgets here are stop 1000 ms and force-kill 500 ms, so every death must be cleaned up
within 2 s plus a small slack.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import psutil
import pytest
from pools import (
    SUPERVISOR,
    Supervisor,
    cli,
    lock_held,
    processes_in,
    wait_for,
    wait_gone,
    write_root,
)

STOP_MS = 1000
FORCE_KILL_MS = 500
BUDGET_S = (STOP_MS + 2 * FORCE_KILL_MS) / 1000
SLACK_S = 3.0


def _configure(root: Path, **worker: object) -> None:
    write_root(root, stop_timeout_ms=STOP_MS, force_kill_timeout_ms=FORCE_KILL_MS, **worker)


def _state(root: Path) -> str:
    try:
        status: str = json.loads((root / "var/tmp/worker.state.json").read_text())["status"]
    except (FileNotFoundError, json.JSONDecodeError):
        return ""
    return status


def _assert_contained(root: Path) -> None:
    """Within the budgets every process of the root is gone and the lock is free."""
    assert wait_gone(root, BUDGET_S + SLACK_S) == []
    wait_for(lambda: not lock_held(root), SLACK_S)


class TestSupervisorDeath:
    def test_while_spawning(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """SIGKILL of the supervisor while workers boot leaves nothing behind."""
        _configure(root, task_source="lifecycle_app:slow_ready")
        supervisor: Supervisor = supervisors(root)
        wait_for(lambda: len(supervisor.workers()) == 2)
        supervisor.kill()
        _assert_contained(root)

    def test_while_running(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """SIGKILL of a running supervisor: the guardian stops and reaps everything."""
        _configure(root)
        supervisor = supervisors(root)
        supervisor.wait_running()
        supervisor.kill()
        _assert_contained(root)

    def test_while_stopping(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """SIGKILL mid-stop changes nothing: the guardian finishes every phase itself."""
        _configure(root, task_source="lifecycle_app:stubborn")
        supervisor = supervisors(root)
        supervisor.wait_running()
        stop = subprocess.Popen(
            [*SUPERVISOR, "stop", "--root", str(root)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(lambda: _state(root) == "stopping")
            supervisor.kill()
            _assert_contained(root)
        finally:
            stop.wait(timeout=30)

    def test_start_during_cleanup_fails_fast_then_succeeds(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """A start while the guardian cleans up is refused; once the lock is free it works."""
        _configure(root, task_source="lifecycle_app:stubborn")
        supervisor = supervisors(root)
        supervisor.wait_running()
        supervisor.kill()
        early = supervisors(root)
        assert early.finish() == 1
        assert early.error == "CORETSIA_WORKER_ALREADY_RUNNING: worker-already-running"
        _assert_contained(root)
        again = supervisors(root)
        again.wait_running()
        assert cli(root, "stop").returncode == 0
        assert again.finish() == 0


class TestHelperDeath:
    def test_guardian_sigkill(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """SIGKILL of the guardian: workers die too, the supervisor fails and cleans up."""
        _configure(root)
        supervisor = supervisors(root)
        supervisor.wait_running()
        supervisor.guardian().kill()
        assert supervisor.finish() == 1
        assert supervisor.error == ("CORETSIA_WORKER_LIFECYCLE_FAILED: worker-process-host-failed")
        _assert_contained(root)

    def test_proc_host_sigkill(self, root: Path, supervisors, driver: str) -> None:  # type: ignore[no-untyped-def]
        """SIGKILL of the proc host: its workers die, the pool fails with its token."""
        if driver != "proc":
            pytest.skip("the fork driver has no proc host")
        _configure(root)
        supervisor = supervisors(root)
        supervisor.wait_running()
        supervisor.proc_host().kill()
        assert supervisor.finish() == 1
        assert supervisor.error == ("CORETSIA_WORKER_LIFECYCLE_FAILED: worker-process-host-failed")
        _assert_contained(root)


class TestDescendants:
    @pytest.mark.parametrize("ending", ["stop", "supervisor-kill", "guardian-kill"])
    def test_children_and_setsid_escapees_do_not_survive(
        self, root: Path, supervisors, ending: str
    ) -> None:  # type: ignore[no-untyped-def]
        """A worker's child and a double-forked setsid grandchild end with the generation."""
        _configure(root, task_source="lifecycle_app:spawning")
        supervisor = supervisors(root)
        supervisor.wait_running()
        # The guardian, and per worker: itself, a plain child and one escapee (the middle
        # fork exited). The supervisor runs elsewhere: its working directory is ours.
        wait_for(lambda: len(processes_in(root)) >= 1 + 2 * 3)
        if ending == "stop":
            assert cli(root, "stop").returncode == 0
            assert supervisor.finish() == 0
        elif ending == "supervisor-kill":
            supervisor.kill()
        else:
            supervisor.guardian().kill()
            assert supervisor.finish() == 1
        _assert_contained(root)


class TestGenerationFence:
    def test_no_overlap_while_old_processes_live(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """With supervisor and guardian both killed, a survivor holding the fence blocks start."""
        _configure(root, task_source="lifecycle_app:forked_holder", workers=1)
        supervisor = supervisors(root)
        supervisor.wait_running()
        wait_for(lambda: len(processes_in(root)) >= 3)  # guardian, worker, its child
        guardian = supervisor.guardian()
        helpers = {guardian.pid, *(p.pid for p in supervisor._named("coretsia.proc_host"))}
        (worker,) = [w for w in supervisor.workers() if w.ppid() in helpers]
        for proc in (psutil.Process(supervisor.proc.pid), guardian):
            proc.send_signal(signal.SIGKILL)
        supervisor.proc.wait(timeout=30)
        psutil.wait_procs([guardian, worker], timeout=10)  # the worker dies with its parent
        wait_for(lambda: not lock_held(root))
        survivors = processes_in(root)
        assert len(survivors) == 1  # the forked child: nobody is left to kill it
        blocked = supervisors(root)
        assert blocked.finish() == 1
        assert blocked.error == ("CORETSIA_WORKER_ALREADY_RUNNING: worker-generation-draining")
        status = cli(root, "status", "--json")
        assert status.returncode == 1
        assert json.loads(status.stdout) == {
            "reason": "worker-generation-draining",
            "status": "draining",
        }
        survivors[0].kill()
        psutil.wait_procs(survivors, timeout=10)
        again = supervisors(root)
        again.wait_running()
        assert cli(root, "stop").returncode == 0
        assert again.finish() == 0
