"""Each remaining error token of a running pool, reached with a real pool."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import psutil
import pytest
from faults import fault_env
from pools import (
    Supervisor,
    Supervisors,
    assert_failed,
    cli,
    lock_held,
    processes_in,
    wait_for,
    wait_gone,
    write_root,
)

from coretsia.supervisor.daemon import containment as levels
from coretsia.worker_protocol.vocabulary import Containment


def _fails_with(
    supervisors: Supervisors, root: Path, expected: str, fault: str | None = None
) -> Supervisor:
    supervisor = supervisors(root, env=None if fault is None else fault_env(fault))
    assert_failed(supervisor, root, expected)
    return supervisor


def _outcome(supervisor: Supervisor) -> list[tuple[object, object]]:
    """How the run's log says it ended: its pool.stopped and pool.failed events."""
    return [
        (line["event"], line.get("reason", line.get("outcome")))
        for line in supervisor.logs
        if line["event"] in ("pool.stopped", "pool.failed")
    ]


class TestWorkerTokens:
    def test_receive_failure_after_readiness(self, root: Path, supervisors: Supervisors) -> None:
        """A source whose receive raises fails the running pool with its token."""
        write_root(root, task_source="lifecycle_app:broken_receive")
        _fails_with(
            supervisors,
            root,
            "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-task-source-receive-failed",
        )

    def test_forged_readiness_frame(self, root: Path, supervisors: Supervisors) -> None:
        """A malformed readiness frame fails the start as readiness-invalid."""
        write_root(root, task_source="lifecycle_app:forged_readiness", stop_timeout_ms=300)
        _fails_with(supervisors, root, "CORETSIA_WORKER_START_FAILED: worker-readiness-invalid")

    def test_worker_dying_without_a_word(self, root: Path, supervisors: Supervisors) -> None:
        """A worker that exits during boot without a reason fails the start generically."""
        write_root(root, task_source="lifecycle_app:vanishing")
        _fails_with(supervisors, root, "CORETSIA_WORKER_START_FAILED: worker-child-start-failed")


class TestSpawnAndLocatorFailures:
    def test_os_refusing_a_worker_process(self, root: Path, supervisors: Supervisors) -> None:
        """A spawn the OS refuses (EAGAIN: a process limit) fails the start as fork-failed."""
        _fails_with(
            supervisors, root, "CORETSIA_WORKER_FORK_FAILED: worker-fork-failed", "fork-refused"
        )

    def test_locator_that_cannot_be_written(self, root: Path, supervisors: Supervisors) -> None:
        """A failed locator write (a full disk) is its own token, and leaves no locator."""
        _fails_with(
            supervisors,
            root,
            "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-lifecycle-locator-failed",
            "locator-unwritable",
        )
        assert not (root / "var/tmp/worker.lifecycle.json").exists()
        assert not (root / "var/tmp/worker.lifecycle.json.tmp").exists()


class TestContainmentFailure:
    def test_a_namespace_init_that_cannot_mount_its_proc(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """The guardian waits for the namespace's ``/proc`` before any worker starts (the
        fork server may boot meanwhile, never fork), and an init that exits first fails
        the start with the containment token, in every mode."""
        if not levels.available(Containment.NAMESPACE):
            pytest.skip("containment namespace is not available here (it needs root, Linux)")
        write_root(root, containment="namespace")
        _fails_with(
            supervisors,
            root,
            "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-containment-failed",
            "proc-unmountable",
        )
        assert not (root / "var/tmp/worker.lifecycle.json").exists()


class TestHooks:
    @pytest.mark.parametrize(
        ("kind", "token"),
        [("after", "worker-task-hook-failed"), ("reset", "worker-task-reset-failed")],
    )
    def test_failing_hook_is_terminal(
        self, root: Path, supervisors: Supervisors, kind: str, token: str
    ) -> None:
        """An after or reset hook that raises ends the worker, and the pool, with its token."""
        write_root(root, task_source="lifecycle_app:quick")
        with (root / "coretsia.toml").open("a") as config:
            config.write(
                f'\n[worker.hooks]\nbefore = ["lifecycle_app:good_hook"]\n'
                f'{kind} = ["lifecycle_app:bad_hook"]\n'
            )
        _fails_with(supervisors, root, f"CORETSIA_WORKER_LIFECYCLE_FAILED: {token}")


class TestRuntimeFiles:
    def test_lock_that_cannot_be_taken(self, root: Path, supervisors: Supervisors) -> None:
        """A lock path the guardian cannot open is a lock failure, not "already running"."""
        (root / "var/tmp/worker.lock").mkdir(parents=True)
        supervisor = supervisors(root)
        assert supervisor.finish() == 1
        assert supervisor.error == (
            "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-lifecycle-lock-failed"
        )
        assert wait_gone(root) == []

    def test_control_port_in_use(self, root: Path, supervisors: Supervisors) -> None:
        """A TCP control port another process listens on fails the start as lifecycle-failed."""
        import socket

        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            port = taken.getsockname()[1]
            with (root / "coretsia.toml").open("a") as config:
                config.write(
                    f'\n[worker.control]\ntransport = "tcp"\n\n[worker.tcp]\nport = {port}\n'
                )
            supervisor = _fails_with(
                supervisors, root, "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-lifecycle-failed"
            )
        assert str(port) not in supervisor.stderr
        assert not (root / "var/tmp/worker.lifecycle.json").exists()

    def test_directory_at_the_socket_path(self, root: Path, supervisors: Supervisors) -> None:
        """A directory where the control socket goes cannot be replaced: lifecycle-failed."""
        (root / "var/tmp/worker.sock").mkdir(parents=True)
        _fails_with(supervisors, root, "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-lifecycle-failed")

    def test_generations_that_cannot_be_written(self, root: Path, supervisors: Supervisors) -> None:
        """A file at var/generations fails the start as lifecycle-failed, and the log
        says the pool failed with that token: never a clean stop."""
        (root / "var").mkdir()
        (root / "var/generations").write_text("")
        supervisor = _fails_with(
            supervisors, root, "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-lifecycle-failed"
        )
        assert _outcome(supervisor) == [("pool.failed", "worker-lifecycle-failed")]

    def test_endpoint_key_that_cannot_be_written(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A directory at the endpoint key's path fails the start as lifecycle-failed."""
        (root / "var/tmp/worker.endpoint-key/inside").mkdir(parents=True)
        supervisor = _fails_with(
            supervisors, root, "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-lifecycle-failed"
        )
        assert _outcome(supervisor) == [("pool.failed", "worker-lifecycle-failed")]

    def test_unexpected_exception_in_the_supervisor(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """Anything unexpected ends in start's catch-all, printed and logged alike."""
        supervisor = _fails_with(
            supervisors,
            root,
            "CORETSIA_WORKER_START_FAILED: worker-start-failed",
            "supervisor-raises",
        )
        assert _outcome(supervisor) == [("pool.failed", "worker-start-failed")]

    def test_debug_switch_shows_what_the_catch_all_stands_for(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """With the (unsafe) debug switch the unexpected exception's traceback is printed
        before the token, for the operator who asked; the token stays the last line."""
        env = {**fault_env("supervisor-raises"), "CORETSIA_DEBUG": "1"}
        supervisor = supervisors(root, env=env)
        assert supervisor.finish(60) == 1
        assert "RuntimeError: unexpected at /secret/path" in supervisor.stderr
        error = supervisor.error.splitlines()
        assert error[0] == "Traceback (most recent call last):"
        assert error[-1] == "CORETSIA_WORKER_START_FAILED: worker-start-failed"
        assert not lock_held(root)
        assert wait_gone(root) == []

    @pytest.mark.parametrize("link", ["var", "var/tmp", "var/generations"])
    def test_runtime_directory_outside_the_root(
        self, root: Path, supervisors: Supervisors, tmp_path: Path, link: str
    ) -> None:
        """A runtime directory that is a symlink out of the root is refused before anything
        is written there: no lock, no generation, no locator outside."""
        outside = tmp_path / "outside"
        outside.mkdir()
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        (root / link).symlink_to(outside)
        _fails_with(supervisors, root, "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-invalid-state")
        assert list(outside.iterdir()) == []

    def test_stale_artifact_that_cannot_be_removed(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A stale stop flag that cannot be deleted fails the start as a cleanup failure."""
        (root / "var/tmp/worker.stop/inside").mkdir(parents=True)
        supervisor = supervisors(root)
        assert supervisor.finish() == 1
        assert supervisor.error == (
            "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-runtime-cleanup-failed"
        )
        assert not lock_held(root)
        assert wait_gone(root) == []


class TestRecycle:
    def test_an_idle_worker_leaves_when_its_turn_comes(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A worker blocked in receive, with no task coming, still recycles at once when
        the supervisor grants its turn (the grant wakes the stop descriptor the source
        waits on), instead of holding the one recycling turn until a next task."""
        write_root(root, task_source="lifecycle_app:one_task", workers=1, max_requests=1)
        supervisor = supervisors(root)
        supervisor.wait_running()

        def served_by() -> set[str]:
            log = root / "recycle.log"
            lines = log.read_text().splitlines() if log.exists() else []
            return {line.split()[1] for line in lines if line.startswith("served ")}

        # Each worker serves its one task, then idles: only a grant that wakes it makes
        # room for the next worker (and its one task).
        wait_for(lambda: len(served_by()) >= 3, timeout=20)
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0

    def test_a_running_task_never_sees_a_recycle_as_a_stop(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """The go-ahead to retire wakes only a worker waiting for a task: one that runs a
        task when it arrives, and watches the stop meanwhile, sees none (the window is
        the task's own 0.5 s wait; the grant comes within milliseconds of the request)."""
        write_root(root, task_source="lifecycle_app:watchful", workers=1, max_requests=1)
        supervisor = supervisors(root)
        supervisor.wait_running()
        log = root / "recycle.log"

        def watched() -> list[str]:
            lines = log.read_text().splitlines() if log.exists() else []
            return [line.split()[0] for line in lines if line.startswith("saw-stop-")]

        wait_for(lambda: len(watched()) >= 2, timeout=20)  # two workers, one after the other
        before_the_stop = watched()  # a task running when the pool stops does see a stop
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0
        assert set(before_the_stop) == {"saw-stop-False"}

    def test_retiring_workers_are_replaced_and_the_pool_stays_running(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """After max_requests a worker exits cleanly and a fresh one takes its slot."""
        write_root(root, task_source="lifecycle_app:quick", max_requests=1000)
        supervisor = supervisors(root)
        supervisor.wait_running()
        first = {w.pid for w in supervisor.workers()}
        # Every worker completes 1000 tasks in well under a second, then retires; wait
        # until none of the first workers is left and the pool still answers running.
        for worker in supervisor.workers():
            worker.wait(timeout=30)
        status = json.loads(cli(root, "status", "--json").stdout)
        assert status["pool_status"] == "running"
        assert supervisor.proc.poll() is None
        assert {w.pid for w in supervisor.workers()}.isdisjoint(first)
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0
        assert processes_in(root) == []


@pytest.mark.parametrize("transport", ["tcp"])
def test_tcp_control_transport(root: Path, supervisors: Supervisors, transport: str) -> None:
    """With transport tcp the pool is controlled over 127.0.0.1 exactly."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = (root / "coretsia.toml").read_text()
    (root / "coretsia.toml").write_text(
        config + f'\n[worker.control]\ntransport = "{transport}"\n\n[worker.tcp]\nport = {port}\n'
    )
    supervisor = supervisors(root)
    supervisor.wait_running()
    listening = [
        conn.laddr
        for conn in psutil.Process(supervisor.proc.pid).net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN
    ]
    assert listening == [("127.0.0.1", port)]  # exactly loopback, and nothing else
    assert "control tcp" in supervisor.summary
    assert str(port) not in supervisor.summary
    status = json.loads(cli(root, "status", "--json").stdout)
    assert status["control_transport"] == "tcp"
    locator = json.loads((root / "var/tmp/worker.lifecycle.json").read_text())
    assert locator["host"] == "127.0.0.1"
    assert not (root / "var/tmp/worker.sock").exists()
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0


class TestSerializedRecycle:
    def test_never_two_slots_out_at_once(self, root: Path, supervisors: Supervisors) -> None:
        """With even load, recycles never overlap: at most one slot is ever not ready."""
        write_root(root, task_source="lifecycle_app:logged", workers=4, max_requests=20)
        supervisor = supervisors(root)
        supervisor.wait_running()
        log = root / "recycle.log"

        def exits() -> int:
            return log.read_text().count("exit") if log.exists() else 0

        wait_for(lambda: exits() >= 12, timeout=60)
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0
        events = [line.split() for line in log.read_text().splitlines()]
        out: dict[str, float] = {}
        gaps: list[tuple[float, float]] = []
        for event, slot, stamp in sorted(events, key=lambda e: float(e[2])):
            if event == "exit":
                out[slot] = float(stamp)
            elif slot in out:
                gaps.append((out.pop(slot), float(stamp)))
        assert len(gaps) >= 8
        gaps.sort()
        for (_, end), (start, _) in itertools.pairwise(gaps):
            assert start >= end, "two slots were out of service at the same time"
