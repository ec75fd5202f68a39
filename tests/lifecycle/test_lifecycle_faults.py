"""Failures while running and deaths in the tree: bounded, contained, cleaned up."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psutil
from faults import fault_env
from pools import cli, lock_held, processes_in, wait_for, wait_gone, write_root

STOP_MS = 1000
FORCE_KILL_MS = 500
SLACK_S = 3.0


class TestBoundedShutdown:
    def test_worker_ignoring_sigterm_is_killed_within_budget(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """A never-ending task that ignores SIGTERM ends by SIGKILL within the budgets."""
        write_root(
            root,
            task_source="lifecycle_app:stubborn",
            stop_timeout_ms=STOP_MS,
            force_kill_timeout_ms=FORCE_KILL_MS,
        )
        supervisor = supervisors(root)
        supervisor.wait_running()
        workers = supervisor.workers()
        assert len(workers) == 2
        started = time.monotonic()
        stop = cli(root, "stop")
        elapsed = time.monotonic() - started
        assert stop.returncode == 0, stop.stderr
        assert elapsed < (STOP_MS + 2 * FORCE_KILL_MS) / 1000 + SLACK_S
        assert elapsed >= (STOP_MS + FORCE_KILL_MS) / 1000  # it really needed the kill phase
        assert supervisor.finish() == 0
        assert not any(w.is_running() for w in workers)
        assert processes_in(root) == []


class TestSurvivor:
    def test_process_surviving_sigkill(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """A process even SIGKILL cannot end: stop and start say worker-shutdown-failed at
        once, and the guardian keeps the lock until the process is gone, then frees it."""
        write_root(root, stop_timeout_ms=STOP_MS, force_kill_timeout_ms=FORCE_KILL_MS)
        survivor = root / "survivor"  # the guardian sees a live process while this exists
        survivor.touch()
        supervisor = supervisors(root, env=fault_env("survivor", str(survivor)))
        supervisor.wait_running()
        guardian = supervisor.guardian()
        budget = (STOP_MS + 2 * FORCE_KILL_MS) / 1000
        started = time.monotonic()
        stop = cli(root, "stop")
        elapsed = time.monotonic() - started
        assert (stop.returncode, stop.stdout) == (1, ""), stop.stderr
        assert stop.stderr == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-shutdown-failed\n"
        assert budget <= elapsed < budget + SLACK_S  # every phase ran, then the answer came
        assert lock_held(root)
        # Not finish(): the guardian, still alive, holds the supervisor's output pipes.
        assert supervisor.proc.wait(timeout=30) == 1
        assert lock_held(root)
        assert guardian.is_running()
        assert not (root / "var/tmp/worker.lifecycle.json").exists()
        assert not (root / "var/tmp/worker.sock").exists()
        survivor.unlink()
        wait_for(lambda: not lock_held(root), timeout=10)
        assert supervisor.finish() == 1
        assert supervisor.error == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-shutdown-failed"
        assert wait_gone(root) == []


class TestChildExit:
    def test_killed_worker_fails_the_pool(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """A worker that dies while the pool runs fails the whole pool, which cleans up."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        supervisor.workers()[0].kill()
        assert supervisor.finish() == 1
        assert supervisor.error == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-child-exited"
        assert not lock_held(root)
        assert wait_gone(root) == []
        assert not (root / "var/tmp/worker.state.json").exists()


class TestContainment:
    def test_supervisor_sigkill_leaves_no_worker(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """SIGKILL of the supervisor: the guardian stops every worker and frees the lock."""
        write_root(root, stop_timeout_ms=STOP_MS, force_kill_timeout_ms=FORCE_KILL_MS)
        supervisor = supervisors(root)
        supervisor.wait_running()
        tree = supervisor.tree()
        supervisor.proc.kill()
        supervisor.finish()
        _gone, alive = psutil.wait_procs(
            tree, timeout=(STOP_MS + 2 * FORCE_KILL_MS) / 1000 + SLACK_S
        )
        assert alive == []
        assert not lock_held(root)
        assert processes_in(root) == []

    def test_guardian_sigkill_kills_workers_and_fails_the_pool(
        self, root: Path, supervisors
    ) -> None:  # type: ignore[no-untyped-def]
        """SIGKILL of the guardian: workers die with it; the supervisor fails and cleans up."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        workers = supervisor.workers()
        supervisor.guardian().kill()
        assert supervisor.finish() == 1
        assert supervisor.error == ("CORETSIA_WORKER_LIFECYCLE_FAILED: worker-process-host-failed")
        _, alive = psutil.wait_procs(workers, timeout=SLACK_S)
        assert alive == []
        assert not lock_held(root)
        assert not (root / "var/tmp/worker.lifecycle.json").exists()
        assert not (root / "var/tmp/worker.sock").exists()
        assert wait_gone(root) == []

    def test_next_start_after_containment(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """Once the guardian freed the lock, a new start succeeds."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        tree = supervisor.tree()
        supervisor.proc.send_signal(signal.SIGKILL)
        supervisor.finish()
        psutil.wait_procs(tree, timeout=10)
        again = supervisors(root)
        again.wait_running()
        assert cli(root, "stop").returncode == 0
        assert again.finish() == 0
