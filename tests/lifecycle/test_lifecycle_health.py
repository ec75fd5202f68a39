"""``health``'s reasons besides ``starting``, and the stop flag, asked of a real pool.

operations.md lists when each reason is given: ``worker-pool-stopping`` while a stop is
under way, ``worker-child-failure-pending`` once a failure was recorded (the pool is then
shutting down), ``worker-slots-not-ready`` while a slot's worker is being replaced. The
stop windows are held open by workers that ignore the stop and SIGTERM
(``claims_app:busy``) under a long ``stop_timeout_ms``: the test asks while the pool is
in them, then kills the workers itself so the stop ends at once.
"""

from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path

import psutil
from pools import Supervisor, Supervisors, cli, install_app, wait_for, write_root

STATE = "var/tmp/worker.state.json"


def _busy_pool(
    root: Path, supervisors: Supervisors, stop_flag_path: str | None = None
) -> Supervisor:
    """A running pool of two workers, each inside a task that ignores the stop."""
    install_app(root, "claims_app.py")
    write_root(
        root, task_source="claims_app:busy", stop_timeout_ms=60000, stop_flag_path=stop_flag_path
    )
    supervisor = supervisors.running(root)
    wait_for(lambda: (root / "busy-0").exists() and (root / "busy-1").exists())
    return supervisor


def _state(root: Path) -> str | None:
    try:
        status: str = json.loads((root / STATE).read_text())["status"]
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return status


def _in_stop(root: Path) -> None:
    """Wait for the state file to say ``stopping`` (published once the stop began)."""
    wait_for(lambda: _state(root) == "stopping")


def _health(root: Path) -> tuple[int, dict[str, object]]:
    result = cli(root, "health", "--json")
    answer: dict[str, object] = json.loads(result.stdout)
    return result.returncode, answer


def _kill(workers: list[psutil.Process]) -> None:
    for worker in workers:
        worker.send_signal(signal.SIGKILL)
    psutil.wait_procs(workers, timeout=10)


def test_health_while_stopping(root: Path, supervisors: Supervisors) -> None:
    """During a requested stop, ``health`` is unhealthy with ``worker-pool-stopping``."""
    supervisor = _busy_pool(root, supervisors)
    workers = supervisor.workers()
    supervisor.signal(signal.SIGTERM)
    _in_stop(root)
    code, answer = _health(root)
    assert (code, answer["healthy"], answer["reason"]) == (1, False, "worker-pool-stopping")
    assert answer["pool_status"] == "stopping"
    _kill(workers)
    assert supervisor.finish() == 0, supervisor.stderr


def test_health_with_a_failure_pending(root: Path, supervisors: Supervisors) -> None:
    """A worker killed while running fails the pool: until the shutdown ends, ``health``
    says ``worker-child-failure-pending``, not merely that the pool is stopping."""
    supervisor = _busy_pool(root, supervisors)
    first, second = supervisor.workers()
    _kill([first])
    _in_stop(root)
    code, answer = _health(root)
    assert (code, answer["healthy"], answer["reason"]) == (
        1,
        False,
        "worker-child-failure-pending",
    )
    _kill([second])
    assert supervisor.finish() == 1
    assert supervisor.error == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-child-exited"


def test_health_while_a_slot_is_replaced(root: Path, supervisors: Supervisors) -> None:
    """While a recycled worker's replacement boots, ``health`` says
    ``worker-slots-not-ready``, and is healthy again once it is ready."""
    install_app(root, "claims_app.py")
    write_root(root, task_source="claims_app:gated_replacement", workers=1, max_requests=1)
    supervisor = supervisors.running(root)
    wait_for(lambda: (root / "gated-0").exists())
    code, answer = _health(root)
    assert (code, answer["healthy"], answer["reason"]) == (1, False, "worker-slots-not-ready")
    assert (answer["pool_status"], answer["ready_worker_count"]) == ("running", 0)
    (root / "gate").touch()
    wait_for(lambda: _health(root)[0] == 0)
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0


class TestStopFlag:
    """The stop flag is a diagnostic written when the shutdown begins (operations.md)."""

    def test_written_during_the_stop_and_removed_after(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """``stop\\n``, mode 0600, at its configured path while stopping; gone afterwards."""
        supervisor = _busy_pool(root, supervisors, stop_flag_path="var/run/halt")
        flag = root / "var/run/halt"
        assert not flag.exists()  # nothing before the stop
        workers = supervisor.workers()
        supervisor.signal(signal.SIGTERM)
        wait_for(flag.exists)  # written (atomically) right after the state says stopping
        assert _state(root) == "stopping"
        assert flag.read_bytes() == b"stop\n"
        assert stat.S_IMODE(os.lstat(flag).st_mode) == 0o600
        assert not (root / "var/tmp/worker.stop").exists()  # the default path is not used
        _kill(workers)
        assert supervisor.finish() == 0
        assert not flag.exists()
