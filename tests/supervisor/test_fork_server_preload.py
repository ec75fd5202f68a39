"""``[worker] preload``: modules the fork server imports once, before its first fork.

The test module ``preload_app`` logs every process that imports it
(``tests/support/apps/preload_app.py``), and can be made to break the fork server's rules.
"""

from __future__ import annotations

import os
from pathlib import Path

import pools
import pytest

WORKERS = 3


def _configure(root: Path, spawn: str) -> None:
    pools.install_app(root, "preload_app.py")
    pools.write_root(
        root,
        workers=WORKERS,
        task_source="preload_app:idle",
        spawn=spawn,
        driver="fork",
        preload=["preload_app"],
    )


def _importers(root: Path) -> list[int]:
    return [int(line) for line in (root / "preload-imports.log").read_text().split()]


@pytest.mark.parametrize("spawn", ["forkserver", "exec"])
def test_imported_once_by_the_fork_server(
    root: Path, supervisors: pools.Supervisors, spawn: str
) -> None:
    """forkserver: one import, in the fork server, which every worker shares; exec: the
    key is ignored, every worker imports the module itself."""
    _configure(root, spawn)
    supervisor = supervisors.running(root)
    if spawn == "forkserver":
        assert _importers(root) == [supervisor.fork_server().pid]
    else:  # its own pids, in a PID namespace (containment auto, as root)
        assert len(set(_importers(root))) == WORKERS
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0


@pytest.mark.parametrize("broken", ["raise", "thread", "file"])
def test_a_preload_that_breaks_the_rules_fails_the_start(
    root: Path, supervisors: pools.Supervisors, broken: str
) -> None:
    """A failed import, a thread left running, a file left open: the fork server refuses
    to fork (a worker would inherit it), and the start fails with the host's token."""
    _configure(root, "forkserver")
    supervisor = supervisors(root, env={**os.environ, "PRELOAD_APP_BREAK": broken})
    assert supervisor.finish() == 1
    assert supervisor.error == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-process-host-failed"
