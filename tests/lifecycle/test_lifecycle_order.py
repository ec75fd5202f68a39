"""The order of a real pool's start and shutdown steps (architecture.md, seed 000).

Seed 000: "The supervisor publishes the locator only after the listener, signal handling,
and starting state are ready, but before child spawn. During shutdown it deletes the
locator before requesting terminal guardian release." architecture.md's start installs
signal handling first of all, then opens the listener, publishes ``starting``, then the
locator, then spawns. The steps are recorded from inside the real processes through
Python's audit events (``order_log``), so each is seen at the moment it happens.
"""

from __future__ import annotations

from pathlib import Path

from order_log import order_env, recorded
from pools import Supervisors, cli


def test_start_and_shutdown_steps_in_order(
    root: Path, supervisors: Supervisors, tmp_path: Path
) -> None:
    """Signals, (a stale locator deleted), listener, ``starting``, locator, then the
    first worker; at shutdown the locator goes while the lock is still held."""
    log = tmp_path / "order.log"
    supervisor = supervisors.running(root, env=order_env(tmp_path / "site", log))
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0
    steps = recorded(log)
    first_worker = steps.index("worker")
    assert steps[:first_worker] == [
        "locator-removed lock-held sigterm-handled",  # a stale one, under the lock
        "listener sigterm-handled",
        "state starting sigterm-handled",
        "locator sigterm-handled",
    ]
    assert steps[first_worker:].count("worker") == 2
    assert "state running sigterm-handled" in steps[first_worker:]
    removed = [step for step in steps[first_worker:] if step.startswith("locator-removed")]
    assert removed == ["locator-removed lock-held sigterm-handled"]
