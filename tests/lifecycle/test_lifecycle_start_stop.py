"""A real pool end to end: start, readiness, status, health, stop, and what is left."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
from pathlib import Path
from typing import Any

import psutil
import pytest
from pools import (
    SUPERVISOR,
    Supervisor,
    Supervisors,
    cli,
    lock_held,
    processes_in,
    wait_for,
    wait_gone,
    write_root,
)

RUNTIME_FILES = (
    "var/tmp/worker.state.json",
    "var/tmp/worker.lifecycle.json",
    "var/tmp/worker.sock",
    "var/tmp/worker.stop",
)


class TestCleanExit:
    def test_joins_threads_then_runs_atexit_then_flushes(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A worker's clean exit (``worker.leave``) keeps what a program relies on at exit,
        in the interpreter's order, though it skips the teardown: exec'd and forked alike."""
        write_root(root, task_source="lifecycle_app:leaving", workers=1)
        supervisor = supervisors(root)
        supervisor.wait_running()
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0
        assert (root / "leaving-0.log").read_text() == "thread\natexit\n"
        assert (root / "stdout-0.txt").read_text() == "buffered\n"


class TestStartStatusStop:
    def test_full_lifecycle(self, root: Path, supervisors: Supervisors) -> None:
        """start, status, health and stop behave as the seed says, and nothing is left."""
        supervisor: Supervisor = supervisors(root)
        supervisor.wait_running()
        status = cli(root, "status", "--json")
        assert status.returncode == 0, status.stderr
        fields = json.loads(status.stdout)
        assert fields["pool_status"] == "running"
        assert fields["ready_worker_count"] == fields["worker_count"] == 2
        assert fields["pid"] == supervisor.proc.pid
        health = cli(root, "health", "--json")
        assert health.returncode == 0
        assert json.loads(health.stdout)["healthy"] is True
        stop = cli(root, "stop")
        assert stop.returncode == 0, stop.stderr
        assert stop.stdout.strip() == "stopped"
        assert supervisor.finish() == 0
        # stop returned only after everything was gone: no wait needed here.
        assert not lock_held(root)
        for name in RUNTIME_FILES:
            assert not (root / name).exists(), name
        assert processes_in(root) == []

    def test_state_file_while_running(
        self, root: Path, supervisors: Supervisors, driver: str
    ) -> None:
        """The state file carries exactly the seed's ten fields and says running."""
        supervisors(root).wait_running()
        state = json.loads((root / "var/tmp/worker.state.json").read_text())
        assert sorted(state) == sorted(
            [
                "version",
                "pid",
                "status",
                "worker_count",
                "ready_worker_count",
                "driver_requested",
                "driver",
                "control_transport_requested",
                "control_transport",
                "endpoint_hash",
            ]
        )
        assert state["status"] == "running"
        assert state["driver"] == state["driver_requested"] == driver
        assert (root / "var/tmp/worker.lifecycle.json").stat().st_mode & 0o777 == 0o600
        assert (root / "var/tmp/worker.sock").stat().st_mode & 0o777 == 0o600

    def test_sigterm_is_a_graceful_stop(self, root: Path, supervisors: Supervisors) -> None:
        """SIGTERM to the supervisor stops the pool cleanly with exit 0."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        supervisor.signal(signal.SIGTERM)
        assert supervisor.finish() == 0
        assert not lock_held(root)
        assert wait_gone(root) == []

    def test_sigint_is_a_graceful_stop(self, root: Path, supervisors: Supervisors) -> None:
        """Ctrl-C (SIGINT) stops the pool cleanly too."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        supervisor.signal(signal.SIGINT)
        assert supervisor.finish() == 0
        assert wait_gone(root) == []

    def test_sigterm_to_the_whole_tree_at_once(self, root: Path, supervisors: Supervisors) -> None:
        """A service manager signalling every process at once still gets a graceful stop."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        for proc in [*supervisor.workers(), psutil.Process(supervisor.proc.pid)]:
            proc.send_signal(signal.SIGTERM)
        assert supervisor.finish() == 0, supervisor.stderr
        assert wait_gone(root) == []

    def test_guardian_ignores_terminal_signals(self, root: Path, supervisors: Supervisors) -> None:
        """The guardian leads a session of its own (a terminal's signals never reach it),
        and SIGTERM, SIGINT and SIGHUP sent to it change nothing: it obeys its channel."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        guardian = supervisor.guardian()
        assert os.getsid(guardian.pid) == guardian.pid
        assert os.getsid(supervisor.proc.pid) != guardian.pid
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            guardian.send_signal(sig)
        assert cli(root, "health").returncode == 0
        assert guardian.is_running()
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0

    def test_sighup_is_ignored(self, root: Path, supervisors: Supervisors) -> None:
        """SIGHUP to the supervisor does not stop the pool (there is nothing to reload)."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        supervisor.signal(signal.SIGHUP)
        assert cli(root, "health").returncode == 0
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0

    def test_health_of_a_pool_still_starting(self, root: Path, supervisors: Supervisors) -> None:
        """A live pool that is not ready yet answers health unhealthy, exit 1, and says why."""
        write_root(root, task_source="lifecycle_app:slow_ready", stop_timeout_ms=300)
        supervisor = supervisors(root)
        wait_for((root / "var/tmp/worker.lifecycle.json").exists)
        health = cli(root, "health", "--json")
        assert health.returncode == 1, health.stderr
        fields = json.loads(health.stdout)
        assert fields["pool_status"] == "starting"
        assert (fields["status"], fields["healthy"], fields["reason"]) == (
            "unhealthy",
            False,
            "worker-pool-starting",
        )
        assert cli(root, "status").returncode == 0  # status answers whatever the state
        supervisor.signal(signal.SIGTERM)
        assert supervisor.finish() == 1
        assert wait_gone(root) == []


class TestRuntimePaths:
    def test_runtime_paths_in_directories_that_do_not_exist_yet(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """start creates the directories of the runtime paths (0700), through a symlink
        that stays inside the root too, and the pool runs and stops as usual."""
        (root / "data").mkdir()
        (root / "link").symlink_to("data")
        write_root(
            root,
            socket_path="run/worker.sock",
            state_path="link/state/worker.state.json",
            stop_flag_path="run/flags/stop",
        )
        supervisor = supervisors(root)
        supervisor.wait_running()
        for directory in ("run", "run/flags", "data/state"):
            assert stat.S_IMODE((root / directory).stat().st_mode) == 0o700, directory
        assert json.loads((root / "data/state/worker.state.json").read_text())["status"] == (
            "running"
        )
        assert cli(root, "status").returncode == 0
        stop = cli(root, "stop")
        assert stop.returncode == 0, stop.stderr
        assert supervisor.finish() == 0
        assert not (root / "run/worker.sock").exists()
        assert not (root / "data/state/worker.state.json").exists()

    def test_runtime_path_through_a_symlink_out_of_the_root(
        self, root: Path, supervisors: Supervisors, tmp_path: Path
    ) -> None:
        """A runtime path whose directory leads out of the root is a configuration error,
        refused before anything is written, there or in the root."""
        outside = tmp_path / "outside"
        outside.mkdir()
        (root / "run").symlink_to(outside)
        write_root(root, socket_path="run/worker.sock")
        supervisor = supervisors(root)
        assert supervisor.finish() == 6
        assert supervisor.error == (
            "CORETSIA_WORKER_CONFIG_INVALID: worker-config-invalid "
            "(key worker.socket_path, rule unsafe-path)"
        )
        assert list(outside.iterdir()) == []
        assert not (root / "var").exists()
        assert wait_gone(root) == []

    @pytest.mark.parametrize(
        ("key", "path", "rule"),
        [
            ("state_path", "alias/worker.generation.lock", "reserved-path"),
            ("socket_path", "alias/worker.lifecycle.json", "reserved-path"),
            ("stop_flag_path", "alias/worker.state.json", "overlapping-path"),
        ],
    )
    def test_runtime_path_naming_another_file_through_a_symlink(
        self, root: Path, supervisors: Supervisors, key: str, path: str, rule: str
    ) -> None:
        """A symlink inside the root can make another text name a canonical file (the
        generation fence, the locator) or another runtime path: refused as if written
        plainly, before anything is written."""
        (root / "var/tmp").mkdir(parents=True)
        (root / "alias").symlink_to("var/tmp")
        setting: dict[str, Any] = {key: path}
        write_root(root, **setting)
        supervisor = supervisors(root)
        assert supervisor.finish() == 6
        assert supervisor.error == (
            f"CORETSIA_WORKER_CONFIG_INVALID: worker-config-invalid (key worker.{key}, rule {rule})"
        )
        assert list((root / "var/tmp").iterdir()) == []
        assert wait_gone(root) == []


class TestNotRunning:
    def test_status_of_a_root_that_never_ran(self, root: Path) -> None:
        """Without a lock holder every client command says not running, exit 3."""
        for command in ("status", "health"):
            result = cli(root, command)
            assert result.returncode == 3
            assert "worker-not-running" in result.stdout
        stop = cli(root, "stop")
        assert stop.returncode == 3
        assert stop.stderr.strip() == "CORETSIA_WORKER_NOT_RUNNING: worker-not-running"

    def test_stale_files_do_not_mean_running(self, root: Path, supervisors: Supervisors) -> None:
        """After a SIGKILLed supervisor a free lock is authoritative; start replaces stale files."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        supervisor.proc.kill()
        supervisor.finish()
        assert wait_gone(root) == []
        assert (root / "var/tmp/worker.lifecycle.json").exists()  # stale, left behind
        assert cli(root, "status").returncode == 3
        again = supervisors(root)
        again.wait_running()
        assert cli(root, "status").returncode == 0
        assert cli(root, "stop").returncode == 0
        assert again.finish() == 0


class TestSecondStart:
    def test_second_start_fails_fast_and_changes_nothing(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A second start exits non-zero with ALREADY_RUNNING and leaves the pool untouched."""
        first = supervisors(root)
        first.wait_running()
        before = {
            name: (root / name).read_bytes()
            for name in (
                "var/tmp/worker.state.json",
                "var/tmp/worker.lifecycle.json",
                "var/generations/current",
            )
        }
        second = supervisors(root, "--log-format", "json")
        assert second.finish() == 1
        assert second.error == "CORETSIA_WORKER_ALREADY_RUNNING: worker-already-running"
        # Refused before the lock was ours: nothing logged reads like a pool starting.
        assert [log["event"] for log in second.logs] == []
        after = {name: (root / name).read_bytes() for name in before}
        assert after == before
        assert cli(root, "health").returncode == 0
        assert cli(root, "stop").returncode == 0
        assert first.finish() == 0


class TestStartFailures:
    def _fails(
        self, supervisors: Supervisors, root: Path, expected: str, code: int = 1
    ) -> Supervisor:
        supervisor = supervisors(root)
        assert supervisor.finish(60) == code, supervisor.stderr
        assert supervisor.error == expected
        assert not lock_held(root)
        assert wait_gone(root) == []
        for name in RUNTIME_FILES:
            assert not (root / name).exists(), name
        return supervisor

    def test_task_source_not_ready(self, root: Path, supervisors: Supervisors) -> None:
        """A worker whose source fails assert_ready fails the start with its own token."""
        write_root(root, task_source="lifecycle_app:not_ready")
        supervisor = self._fails(
            supervisors, root, "CORETSIA_WORKER_START_FAILED: worker-task-source-not-ready"
        )
        assert "secret" not in supervisor.stderr + supervisor.stdout

    def test_readiness_timeout(self, root: Path, supervisors: Supervisors) -> None:
        """A worker that never becomes ready fails the start after start_timeout_ms."""
        write_root(
            root, task_source="lifecycle_app:slow_ready", start_timeout_ms=1500, stop_timeout_ms=300
        )
        self._fails(supervisors, root, "CORETSIA_WORKER_START_FAILED: worker-readiness-timeout")

    def test_config_error(self, root: Path, supervisors: Supervisors) -> None:
        """An invalid configuration exits 6 naming the key and the rule, not the value."""
        write_root(root, workers=5000)
        supervisor = supervisors(root)
        assert supervisor.finish() == 6
        assert supervisor.error == (
            "CORETSIA_WORKER_CONFIG_INVALID: worker-config-invalid "
            "(key worker.workers, rule out-of-range)"
        )
        assert "5000" not in supervisor.stderr
        assert not (root / "var").exists()

    def test_invalid_task_type(self, root: Path, supervisors: Supervisors) -> None:
        """An invalid task_type is the seed's invalid-state lifecycle failure."""
        write_root(root, task_type="cron")
        supervisor = supervisors(root)
        assert supervisor.finish() == 1
        assert supervisor.error == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-invalid-state"

    def test_stop_during_start(self, root: Path, supervisors: Supervisors) -> None:
        """SIGTERM while starting cancels the start, cleans up, and says it never ran."""
        write_root(root, task_source="lifecycle_app:slow_ready", stop_timeout_ms=300)
        supervisor = supervisors(root)
        # Wait until the start is under way: the state file says starting.
        wait_for((root / "var/tmp/worker.state.json").exists)
        supervisor.signal(signal.SIGTERM)
        assert supervisor.finish() == 1
        assert supervisor.error == "CORETSIA_WORKER_START_FAILED: worker-start-cancelled"
        assert not lock_held(root)
        assert wait_gone(root) == []


class TestStopRequests:
    def test_every_pending_stop_gets_stopped(self, root: Path, supervisors: Supervisors) -> None:
        """Several concurrent stop clients all receive the terminal stopped."""
        write_root(root, task_source="lifecycle_app:stubborn", stop_timeout_ms=500)
        supervisor = supervisors(root)
        supervisor.wait_running()
        command = [*SUPERVISOR, "stop", "--root", str(root)]
        clients = [
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(3)
        ]
        for client in clients:
            out, err = client.communicate(timeout=30)
            assert (client.returncode, out.strip(), err) == (0, b"stopped", b"")
        assert supervisor.finish() == 8  # the stubborn task had to be killed

    @pytest.mark.parametrize("task_source", ["one_task", "slow_task", "stubborn"])
    def test_the_outcome_says_whether_the_stop_was_forced(
        self, root: Path, supervisors: Supervisors, task_source: str
    ) -> None:
        """A cooperative stop is ``clean`` and exit 0; one that had to send SIGTERM (a task
        that outlives stop_timeout_ms) or SIGKILL (one that ignores SIGTERM too) is
        ``forced`` and exit 8, after the phases it took."""
        write_root(
            root,
            task_source=f"lifecycle_app:{task_source}",
            stop_timeout_ms=300,
            force_kill_timeout_ms=500,
        )
        supervisor = supervisors(root, "--log-format", "json")
        supervisor.wait_running()
        supervisor.signal(signal.SIGTERM)
        expected = {"one_task": 0, "slow_task": 8, "stubborn": 8}[task_source]
        assert supervisor.finish() == expected, supervisor.stderr
        phases = [
            line["event"] for line in supervisor.logs if line["event"].startswith("shutdown.")
        ]
        assert (
            phases
            == {
                "one_task": ["shutdown.cooperative"],
                "slow_task": ["shutdown.cooperative", "shutdown.terminate"],
                "stubborn": ["shutdown.cooperative", "shutdown.terminate", "shutdown.kill"],
            }[task_source]
        )
        outcome = [
            line.get("outcome") for line in supervisor.logs if line["event"] == "pool.stopped"
        ]
        assert outcome == ["clean" if expected == 0 else "forced"]
        assert supervisor.error == ""

    def test_stop_command_during_start(self, root: Path, supervisors: Supervisors) -> None:
        """The stop command while starting cancels the start; the client gets stopped."""
        write_root(root, task_source="lifecycle_app:slow_ready", stop_timeout_ms=300)
        supervisor = supervisors(root)
        wait_for((root / "var/tmp/worker.lifecycle.json").exists)
        stop = cli(root, "stop")
        assert stop.returncode == 0, stop.stderr
        assert supervisor.finish() == 1
        assert supervisor.error == "CORETSIA_WORKER_START_FAILED: worker-start-cancelled"
        assert wait_gone(root) == []
