"""Containment under every kill, for both drivers: no orphan, no overlap, a free lock.

Budgets here are stop 1000 ms and force-kill 500 ms, so every death must be cleaned up
within 2 s of the kill plus a small slack: no process of the generation left, the lock
and the generation fence both free.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
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

from coretsia.guardian.containers import INIT_MODULE
from coretsia.worker_protocol import lock
from coretsia.worker_protocol.lifecycle import FENCE_PATH, LOCATOR_PATH

STOP_MS = 1000
FORCE_KILL_MS = 500
BUDGET_S = (STOP_MS + 2 * FORCE_KILL_MS) / 1000
CLEANUP_STOP_MS = 4000
"""A killed generation's cleanup long enough for another start to surely meet it."""
EVERY_CONTAINMENT = True
"""Each test runs at every containment level the machine offers (see the conftest)."""

SLACK_S = 1.0
"""For a loaded 2-core machine: process exits, the supervisor's sweep, the polling here."""

STATE_PATH = "var/tmp/worker.state.json"
RUNTIME_FILES = (LOCATOR_PATH, "var/tmp/worker.sock", STATE_PATH)
"""What the supervisor itself must remove, whatever killed its generation."""


def _configure(root: Path, **worker: Any) -> None:
    budgets = {"stop_timeout_ms": STOP_MS, "force_kill_timeout_ms": FORCE_KILL_MS}
    write_root(root, **{**budgets, **worker})


def _state(root: Path) -> dict[str, object]:
    try:
        state: dict[str, object] = json.loads((root / STATE_PATH).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return state


def _free(root: Path) -> bool:
    return not lock_held(root) and not lock.probe(str(root / FENCE_PATH))


def _kill(proc: psutil.Process | Supervisor) -> float:
    """SIGKILL one process of the tree; the instant of the kill, for :func:`_assert_contained`."""
    killed_at = time.monotonic()
    proc.kill()
    return killed_at


def _assert_contained(root: Path, killed_at: float, budget_s: float = BUDGET_S) -> None:
    """By the budgets plus the slack after the kill: no process of the root, lock and fence free."""
    deadline = killed_at + budget_s + SLACK_S
    assert wait_gone(root, deadline - time.monotonic()) == []
    wait_for(lambda: _free(root), max(0.0, deadline - time.monotonic()))


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children()
    except psutil.NoSuchProcess:
        return []


@contextmanager
def _stopping(root: Path) -> Iterator[None]:
    """A ``stop`` client in flight, until the state file says ``stopping``."""
    stop = subprocess.Popen(
        [*SUPERVISOR, "stop", "--root", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: _state(root).get("status") == "stopping")
        yield
    finally:
        stop.wait(timeout=30)


class TestSupervisorDeath:
    def test_while_spawning(self, root: Path, supervisors: Supervisors) -> None:
        """SIGKILL of the supervisor while workers boot leaves nothing behind."""
        _configure(root, task_source="lifecycle_app:slow_ready")
        supervisor: Supervisor = supervisors(root)
        wait_for(lambda: len(supervisor.workers()) == 2)
        _assert_contained(root, _kill(supervisor))

    def test_while_running(self, root: Path, supervisors: Supervisors) -> None:
        """SIGKILL of a running supervisor: the guardian stops and reaps everything."""
        _configure(root)
        supervisor = supervisors(root)
        supervisor.wait_running()
        _assert_contained(root, _kill(supervisor))

    def test_while_stopping(self, root: Path, supervisors: Supervisors) -> None:
        """SIGKILL mid-stop changes nothing: the guardian finishes every phase itself."""
        _configure(root, task_source="lifecycle_app:stubborn")
        supervisor = supervisors(root)
        supervisor.wait_running()
        with _stopping(root):
            _assert_contained(root, _kill(supervisor))

    def test_start_during_cleanup_fails_fast_then_succeeds(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A start while the guardian cleans up is refused; once the lock is free it works.

        The cleanup is made long (a stop budget of 4 s the stubborn tasks use up) so that
        the second start surely comes during it, even on a loaded machine, where starting
        an interpreter can take longer than the usual 1.5 s drain."""
        _configure(root, task_source="lifecycle_app:stubborn", stop_timeout_ms=CLEANUP_STOP_MS)
        supervisor = supervisors(root)
        supervisor.wait_running()
        killed_at = _kill(supervisor)
        early = supervisors(root)
        assert early.finish() == 1
        assert early.error == "CORETSIA_WORKER_ALREADY_RUNNING: worker-already-running"
        _assert_contained(root, killed_at, (CLEANUP_STOP_MS + 2 * FORCE_KILL_MS) / 1000)
        _configure(root, task_source="lifecycle_app:stubborn")  # the usual budgets again
        again = supervisors(root)
        again.wait_running()
        # The stale state file of the killed pool was replaced, not merely left alone.
        assert _state(root)["pid"] == again.proc.pid
        assert cli(root, "stop").returncode == 0
        assert again.finish() == 8  # its stubborn tasks had to be killed: a forced stop


class TestHelperDeath:
    """SIGKILL of the guardian (every mode) or of the workers' host (the proc host, the
    fork server), in every phase."""

    @pytest.mark.parametrize("phase", ["spawning", "running", "stopping"])
    @pytest.mark.parametrize("victim", ["guardian", "host"])
    def test_helper_sigkill(
        self,
        root: Path,
        supervisors: Supervisors,
        driver: str,
        spawn: str,
        phase: str,
        victim: str,
    ) -> None:
        """The workers die too; the supervisor fails with its token, removes its files, exits 1."""
        if victim == "host" and driver == "fork" and spawn == "exec":
            pytest.skip("the fork driver's exec mode has no host")
        task_source = {"spawning": "slow_ready", "running": "idle", "stopping": "stubborn"}[phase]
        _configure(root, task_source=f"lifecycle_app:{task_source}")
        supervisor: Supervisor = supervisors(root)
        if phase == "spawning":
            wait_for(lambda: len(supervisor.workers()) == 2)
        else:
            supervisor.wait_running()
        if victim == "guardian":
            helper = supervisor.guardian()
        else:
            helper = supervisor.proc_host() if driver == "proc" else supervisor.fork_server()
        if phase == "stopping":
            with _stopping(root):
                killed_at = _kill(helper)
                assert supervisor.finish() == 1
        else:
            killed_at = _kill(helper)
            assert supervisor.finish() == 1
        assert supervisor.error == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-process-host-failed"
        assert [path for path in RUNTIME_FILES if (root / path).exists()] == []
        _assert_contained(root, killed_at)


class TestDescendants:
    @pytest.mark.parametrize("ending", ["stop", "supervisor-kill", "guardian-kill"])
    def test_children_and_setsid_escapees_do_not_survive(
        self, root: Path, supervisors: Supervisors, ending: str
    ) -> None:
        """A worker's child and a double-forked setsid grandchild end with the generation."""
        _configure(root, task_source="lifecycle_app:spawning")
        supervisor = supervisors(root)
        supervisor.wait_running()
        # The guardian, and per worker: itself, a plain child and one escapee (the middle
        # fork exited). The supervisor runs elsewhere: its working directory is ours.
        wait_for(lambda: len(processes_in(root)) >= 1 + 2 * 3)
        if ending == "stop":
            ended_at = time.monotonic()
            assert cli(root, "stop").returncode == 0
            assert supervisor.finish() == 0
        elif ending == "supervisor-kill":
            ended_at = _kill(supervisor)
        else:
            ended_at = _kill(supervisor.guardian())
            assert supervisor.finish() == 1
        _assert_contained(root, ended_at)

    def test_adopted_orphans_are_reaped_at_once(
        self, root: Path, supervisors: Supervisors, containment: str, spawn: str
    ) -> None:
        """An escapee that lost its parent is reaped as soon as it dies: no zombie lingers.

        The cleanup waits skip zombies, so this is the one check that its adopter really
        reaps what it never spawned: the guardian (a subreaper), or inside a PID
        namespace the namespace's init (orphans never leave their namespace).
        """
        _configure(root, task_source="lifecycle_app:spawning")
        supervisor = supervisors(root)
        supervisor.wait_running()
        adopter = supervisor.guardian()
        if containment == "namespace":
            (adopter,) = supervisor._named(INIT_MODULE)
        server = supervisor.fork_server().pid if spawn == "forkserver" else None

        def adopted() -> set[int]:
            """The adopter's childless children: workers and the proc host have children,
            the fork server (between two forks) none."""
            return {p.pid for p in adopter.children() if not _children(p) and p.pid != server}

        wait_for(lambda: len(adopted()) == 2)  # each worker's double-forked escapee
        escapees = adopted()
        for pid in escapees:
            psutil.Process(pid).kill()
        wait_for(lambda: not adopted() & escapees, SLACK_S)
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0


class TestGenerationFence:
    def test_no_overlap_while_old_processes_live(
        self, root: Path, supervisors: Supervisors, containment: str
    ) -> None:
        """With supervisor and guardian both killed, a survivor holding the fence never runs
        beside a new generation.

        In a PID namespace it dies with the namespace. Otherwise it lives on, and the
        root says ``draining``, until the next ``start`` kills it (its cgroup, or its
        environment mark) before it claims the fence.
        """
        _configure(root, task_source="lifecycle_app:forked_holder", workers=1)
        supervisor = supervisors(root)
        supervisor.wait_running()
        wait_for(lambda: len(processes_in(root)) >= 3)  # guardian, worker, its child
        guardian = supervisor.guardian()
        helpers = {guardian.pid, *(p.pid for p in supervisor._named("coretsia.proc_host"))}
        (worker,) = [w for w in supervisor.workers() if w.ppid() in helpers]
        holder = [p for p in _children(worker) if p.pid not in helpers]
        for proc in (psutil.Process(supervisor.proc.pid), guardian):
            proc.send_signal(signal.SIGKILL)
        supervisor.proc.wait(timeout=30)
        psutil.wait_procs([guardian, worker], timeout=10)  # the worker dies with its parent
        wait_for(lambda: not lock_held(root))
        if containment == "namespace":
            assert wait_gone(root, SLACK_S) == []  # the forked child died with its namespace
        else:
            survivors = processes_in(root)
            assert [p.pid for p in survivors] == [p.pid for p in holder]  # nobody killed it
            status = cli(root, "status", "--json")
            assert status.returncode == 1
            assert json.loads(status.stdout) == {
                "reason": "worker-generation-draining",
                "status": "draining",
            }
        again = supervisors(root)
        again.wait_running()
        assert all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for p in holder)
        assert cli(root, "stop").returncode == 0
        assert again.finish() == 0


class TestEscapees:
    def test_a_setsid_escapee_never_runs_beside_a_new_generation(
        self, root: Path, supervisors: Supervisors, containment: str
    ) -> None:
        """A task's ``setsid sleep 1000`` (``subprocess``, ``close_fds``: no descriptor of
        ours, so no fence) survives nothing the kernel or the next ``start`` can see.

        Supervisor and guardian are SIGKILLed together. In a PID namespace the escapee is
        gone within a second. Otherwise it lives until the next ``start``, which kills it
        before any worker of the new generation boots (each one checks, while booting).
        """
        _configure(root, task_source="lifecycle_app:escaping", workers=1)
        supervisor = supervisors(root)
        supervisor.wait_running()
        wait_for(lambda: (root / "escapee.pid").exists())
        (escapee,) = [
            psutil.Process(int(pid)) for pid in (root / "escapee.pid").read_text().split()
        ]
        guardian = supervisor.guardian()
        killed_at = time.monotonic()
        for proc in (psutil.Process(supervisor.proc.pid), guardian):
            proc.send_signal(signal.SIGKILL)
        supervisor.proc.wait(timeout=30)
        if containment == "namespace":
            assert wait_gone(root, killed_at + 1.0 - time.monotonic()) == []
            # The lock goes with the guardian's last thread: its leader shows as a zombie
            # (out of wait_gone's sight) while its spawner thread may still be exiting.
            wait_for(lambda: not lock_held(root), 5)
            return
        wait_for(lambda: not lock_held(root))
        assert escapee.is_running()  # nobody is left to kill it
        assert escapee.status() != psutil.STATUS_ZOMBIE
        _configure(root, task_source="lifecycle_app:escapee_watch", workers=2)
        again = supervisors(root)
        again.wait_running()
        assert (root / "escapee-seen.log").read_text().split() == ["0", "0"]
        assert not escapee.is_running() or escapee.status() == psutil.STATUS_ZOMBIE
        assert cli(root, "stop").returncode == 0
        assert again.finish() == 0
        killed = [
            log["count"] for log in again.logs if log["event"] == "guardian.left-behind-killed"
        ]
        # At the cgroup level the cgroup goes first; the environment scan then finds none.
        assert killed == ([1] if containment == "process" else [])
