"""The fork server on its own: what it imports, and ``[worker] preload``, the modules it
imports once before its first fork.

The test module ``preload_app`` logs every process that imports it
(``tests/support/apps/preload_app.py``), and can be made to break the fork server's rules.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pools
import pytest

from coretsia.supervisor.drivers import FORK_SERVER_CODE
from coretsia.supervisor.fork_server import BOOT_MODULES
from coretsia.worker_protocol.parent_watch import PARENT_PID_ENV

WORKERS = 3

NEVER_IMPORTED = (
    "trio",
    "attrs",
    "cattrs",
    "psutil",
    "coretsia.supervisor.config",
    "coretsia.supervisor.supervisor",
    "coretsia.supervisor.cli",
    "coretsia.guardian",
    "lifecycle_app",
)
"""Nothing of the supervisor's process, the configuration, the guardian or the
application (installed in the working directory) reaches a fork server."""


ON_FD_3 = (
    "import os, sys; fd = int(sys.argv[1]); os.dup2(fd, 3); os.close(fd); "
    "os.execv(sys.executable, sys.argv[2:])"
)
"""Move the descriptor ``argv[1]`` (above 3) to 3, then exec the rest of the command line."""


def test_the_fork_server_imports_the_boot_modules_and_nothing_else(tmp_path: Path) -> None:
    """Observed with ``-X importtime`` (its environment form) on a real fork server, which
    exits 0 at the end of its channel."""
    pools.install_app(tmp_path, "lifecycle_app.py")
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    server = [sys.executable, "-c", FORK_SERVER_CODE]
    with theirs, (tmp_path / "imports.log").open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-c", ON_FD_3, str(theirs.fileno()), *server],
            pass_fds=(theirs.fileno(),),
            cwd=tmp_path,
            env={**env, PARENT_PID_ENV: str(os.getpid())},
            stderr=stderr,
        )
    ours.close()  # the server reads the end of its channel once it is up
    assert proc.wait(timeout=30) == 0
    logged = (tmp_path / "imports.log").read_text().splitlines()
    lines = [line for line in logged if line.startswith("import time:")]
    modules = {line.rsplit("|", 1)[1].strip() for line in lines}
    assert set(BOOT_MODULES) <= modules
    assert [name for name in NEVER_IMPORTED if name in modules] == []


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
