"""The checks, each in a fresh container of the image: what ``docs/deploy`` promises.

1. ``stop``: the pool is PID 1 and every worker gets ready; ``status`` and ``health``
   answer through ``docker exec``; ``docker stop`` is graceful (exit 0) within the pool's
   own budget, ``stop_timeout_ms + 2 x force_kill_timeout_ms``.
2. ``supervisor-kill``: a SIGKILL of the real supervisor (PID 1's child): the guardian
   contains the generation (its ``guardian.containment`` line), the container exits 137
   (the init leaves with 128 + the signal that ended the supervisor) and nothing is left.
3. ``docker-kill``: ``docker kill`` (SIGKILL to PID 1): exit 137, nothing left on the host.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from container_check import REPO
from container_check.commands import HEALTH, KILL, RUN, STATUS, STOP, render
from container_check.docker import Docker
from container_check.errors import CheckFailed
from container_check.inside import (
    MARK,
    carrying,
    left_after,
    processes_inside,
    wait_running,
)
from coretsia.supervisor.config.loading import load_config

APP = REPO / "docs" / "examples" / "quickstart"
"""The application the Dockerfile puts in /app."""
DOCKER_STOP_S: Final = 10
"""``docker stop``'s own grace period before its SIGKILL (the pool's budget must fit)."""
KILLED_EXIT: Final = 137
CONTAINED: Final = '"event":"guardian.containment"'


@dataclass(frozen=True)
class Row:
    """One line of the session's table."""

    step: str
    seconds: float
    result: str


@dataclass(frozen=True)
class Pool:
    """What the image's application asks of its pool."""

    workers: int
    start_s: float
    budget_s: float

    @classmethod
    def of_app(cls) -> Pool:
        config = load_config(APP)
        budgets = config.budgets
        return cls(
            workers=config.worker.workers,
            start_s=budgets.start_timeout_ms / 1000,
            budget_s=(budgets.stop_timeout_ms + 2 * budgets.force_kill_timeout_ms) / 1000,
        )


class Runner:
    """Starts the containers of one check run and removes every one of them."""

    def __init__(self, docker: Docker, image: str, token: str) -> None:
        self.docker = docker
        self.image = image
        self.token = token
        self.pool = Pool.of_app()
        self.started: list[str] = []

    def start(self, case: str) -> tuple[str, float]:
        """A new container, waited on until its pool is ready; its name and that time."""
        name = f"coretsia-check-{self.token}-{case}"
        began = time.monotonic()
        self.started.append(name)
        self.docker.run(
            render(
                RUN, {"image": self.image, "container": name}, ("--env", f"{MARK}={self.token}")
            ),
            timeout=60,
            token="docker-run",
        )
        # Start-up budget plus the interpreters' first start in a fresh container.
        try:
            wait_running(self.docker, name, self.pool.workers, self.pool.start_s + 20)
        except CheckFailed:
            self._show_end(name)
            raise
        return name, time.monotonic() - began

    def _show_end(self, name: str) -> None:
        """Put the container's output and exit code on stderr: what says why it failed."""
        logs = self.docker.run(("docker", "logs", name), timeout=30, token="logs", check=False)
        state = self.docker.run(
            ("docker", "inspect", "-f", "{{.State.Status}} exit {{.State.ExitCode}}", name),
            timeout=30,
            token="inspect",
            check=False,
        )
        sys.stderr.write(f"{logs.stdout[-4000:]}{logs.stderr[-4000:]}{state.stdout}")

    def exit_code(self, name: str, timeout: float) -> int:
        """The container's exit code once it ended (``docker wait``, bounded)."""
        done = self.docker.run(("docker", "wait", name), timeout=timeout, token="docker-wait")
        return int(done.stdout.strip())

    def remove_all(self) -> None:
        """``docker rm -f`` every container this run started (each one, even on failure)."""
        for name in self.started:
            self.docker.run(("docker", "rm", "-f", name), timeout=60, token="rm", check=False)
        self.started.clear()

    def _pool_tree(self, name: str) -> int:
        """Check PID 1 is the init and the pool is below it; the real supervisor's pid."""
        seen = processes_inside(self.docker, name)
        init = [p for p in seen if p.pid == 1 and p.runs("coretsia-supervisor start")]
        real = [p for p in seen if p.ppid == 1 and p.runs("coretsia.supervisor.cli start")]
        if len(init) != 1 or len(real) != 1:
            raise CheckFailed("pool-not-pid-1")
        guardians = [p for p in seen if p.ppid == real[0].pid and p.runs("coretsia.guardian")]
        if len(guardians) != 1:
            raise CheckFailed("guardian-missing")
        workers = [
            p
            for p in seen
            if p.runs("from coretsia.supervisor.worker_side.launcher import main; main()")
        ]
        if len(workers) != self.pool.workers:
            raise CheckFailed("workers-missing")
        if len(carrying(self.token)) != len(seen):
            raise CheckFailed("host-scan-disagrees")  # the leftover check would be blind
        return real[0].pid

    def _probe(self, template: tuple[str, ...], name: str, expected: str) -> Row:
        began = time.monotonic()
        done = self.docker.run(render(template, {"container": name}), timeout=30, token="probe")
        if not done.stdout.startswith(expected):
            raise CheckFailed("probe-unexpected-answer")
        return Row(
            f"{template[3]} {template[4]} via docker exec", time.monotonic() - began, "exit 0"
        )

    def graceful_stop(self) -> list[Row]:
        """Case 1: PID 1, probes, ``docker stop`` within the budget with exit 0."""
        if self.pool.budget_s >= DOCKER_STOP_S:
            raise CheckFailed("budget-exceeds-docker-stop")
        name, ready_s = self.start("stop")
        self._pool_tree(name)
        rows = [
            Row(f"docker run to {self.pool.workers}/{self.pool.workers} ready", ready_s, "PID 1")
        ]
        expected = f"{self.pool.workers}/{self.pool.workers} workers ready"
        rows.append(self._probe(STATUS, name, f"running: {expected}"))
        rows.append(self._probe(HEALTH, name, "healthy: worker-pool-healthy"))
        snapshot = carrying(self.token)
        began = time.monotonic()
        self.docker.run(render(STOP, {"container": name}), timeout=DOCKER_STOP_S + 30, token="stop")
        stop_s = time.monotonic() - began
        code = self.exit_code(name, 30)
        if code != 0 or stop_s > self.pool.budget_s:
            raise CheckFailed("stop-not-graceful")
        left = left_after(self.token, snapshot, 10)
        if left:
            raise CheckFailed("processes-left-after-stop")
        return [
            *rows,
            Row(f"docker stop (budget {self.pool.budget_s:g} s)", stop_s, "exit 0, 0 left"),
        ]

    def _ended_by(self, case: str, kill: Callable[[str, int], object]) -> tuple[str, float]:
        """A new container ended by ``kill(name, supervisor's pid)``; its name, exit time.

        It must exit 137 within the pool's budget (the guardian's containment bound), and
        no process carrying the marker may be left.
        """
        name, _ = self.start(case)
        supervisor = self._pool_tree(name)
        snapshot = carrying(self.token)
        began = time.monotonic()
        kill(name, supervisor)
        code = self.exit_code(name, self.pool.budget_s + 30)
        exit_s = time.monotonic() - began
        if code != KILLED_EXIT or exit_s > self.pool.budget_s:
            raise CheckFailed(f"{case}-unexpected-exit")
        if left_after(self.token, snapshot, 10):
            raise CheckFailed(f"processes-left-after-{case}")
        return name, exit_s

    def _kill_supervisor(self, name: str, pid: int) -> None:
        self.docker.run(
            ("docker", "exec", name, "sh", "-c", 'kill -KILL "$1"', "sh", str(pid)),
            timeout=30,
            token="kill-supervisor",
        )

    def _docker_kill(self, name: str, _pid: int) -> None:
        self.docker.run(render(KILL, {"container": name}), timeout=30, token="docker-kill")

    def supervisor_kill(self) -> list[Row]:
        """Case 2: SIGKILL of the real supervisor inside; contained, 137, nothing left."""
        name, exit_s = self._ended_by("supervisor-kill", self._kill_supervisor)
        logs = self.docker.run(("docker", "logs", name), timeout=30, token="logs")
        if CONTAINED not in logs.stderr:
            raise CheckFailed("guardian-did-not-contain")
        result = f"exit {KILLED_EXIT}, contained, 0 left"
        return [Row("supervisor SIGKILL to container exit", exit_s, result)]

    def docker_kill(self) -> list[Row]:
        """Case 3: ``docker kill``: exit 137 and no process of it on the host."""
        _, exit_s = self._ended_by("docker-kill", self._docker_kill)
        return [Row("docker kill to container exit", exit_s, f"exit {KILLED_EXIT}, 0 left")]
