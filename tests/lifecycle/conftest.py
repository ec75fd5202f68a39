"""Fixtures for lifecycle tests: a fresh root per test and supervisors cleaned up by pid."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from pools import Supervisor, processes_in, write_root


@pytest.fixture(params=["fork", "proc"])
def driver(request: pytest.FixtureRequest) -> str:
    """Every lifecycle test runs once per process driver."""
    value: str = request.param
    return value


@pytest.fixture
def root(driver: str) -> Iterator[Path]:
    """A fresh project root with a short path; fails the test if a process is left in it."""
    with tempfile.TemporaryDirectory(prefix="cw-", dir="/tmp") as tmp:
        path = Path(tmp).resolve()
        write_root(path, driver=driver)
        yield path
        left = processes_in(path)
        for proc in left:
            try:
                proc.kill()
            except psutil.Error:
                continue
        psutil.wait_procs(left, timeout=10)
        assert not left, f"processes left behind: {[p.pid for p in left]}"


@pytest.fixture
def supervisors() -> Iterator[Callable[..., Supervisor]]:
    """Start supervisors; each is stopped (SIGTERM, then SIGKILL) at teardown."""
    started: list[Supervisor] = []

    def start(root: Path, *extra: str, env: dict[str, str] | None = None) -> Supervisor:
        supervisor = Supervisor(root, *extra, env=env)
        started.append(supervisor)
        return supervisor

    yield start
    for supervisor in started:
        supervisor.close()
