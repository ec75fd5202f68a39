"""``stop``, ``status`` and ``health`` never read ``coretsia.toml`` (operations.md).

They find the supervisor through the lock and the private locator only, so a
configuration broken (or edited) while the pool runs changes nothing for them: they
answer the running pool, stop it, and afterwards report "not running", never a
configuration error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pools import Supervisors, cli, write_root

BROKEN = "[worker\nworkers = \n"
"""Not TOML at all: any command that read the file would fail with exit 6."""


@pytest.fixture
def broken_root(short_root: Path) -> Path:
    """A root with the default driver (the clients do not depend on it)."""
    return write_root(short_root)


def test_clients_answer_a_running_pool_whatever_the_file_says(
    broken_root: Path, supervisors: Supervisors
) -> None:
    """With the file broken after the start: status and health answer (exit 0), and stop
    stops the pool (exit 0)."""
    supervisor = supervisors.running(broken_root)
    (broken_root / "coretsia.toml").write_text(BROKEN)
    status = cli(broken_root, "status")
    assert (status.returncode, status.stdout.split(":")[0]) == (0, "running")
    health = cli(broken_root, "health")
    assert (health.returncode, health.stdout.split(":")[0]) == (0, "healthy")
    assert cli(broken_root, "stop").returncode == 0
    assert supervisor.finish() == 0


@pytest.mark.parametrize("command", ["status", "health", "stop"])
def test_clients_say_not_running_with_a_broken_file(broken_root: Path, command: str) -> None:
    """Nothing runs and the file is broken: exit 3 (not running), never 6."""
    (broken_root / "coretsia.toml").write_text(BROKEN)
    result = cli(broken_root, command)
    assert result.returncode == 3, result.stderr
    assert "worker-not-running" in result.stdout + result.stderr
