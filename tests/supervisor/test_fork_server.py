"""The fork server on its own: what it imports, and ``[worker] preload``, the modules it
imports once before its first fork.

The test module ``preload_app`` logs every process that imports it
(``tests/support/apps/preload_app.py``), and can be made to break the fork server's rules.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pools
import pytest

from coretsia.supervisor.daemon.drivers import FORK_SERVER_CODE
from coretsia.supervisor.worker_side.fork_server import BOOT_MODULES
from coretsia.worker_protocol.parent_watch import PARENT_PID_ENV

WORKERS = 3

NEVER_IMPORTED = (
    "trio",
    "attrs",
    "cattrs",
    "psutil",
    "coretsia.supervisor.config",
    "coretsia.supervisor.daemon.supervisor",
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


def _server_imports(tmp_path: Path) -> set[str]:
    """What a real fork server imports, observed with ``-X importtime`` (its environment
    form); the server exits 0 at the end of its channel."""
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
    return {line.rsplit("|", 1)[1].strip() for line in lines}


def _at_start() -> set[str]:
    """What ``-X importtime`` does not list: the modules an interpreter holds before it
    runs a line (built in, frozen), and the names ``importlib`` gives its frozen parts."""
    code = "import importlib, sys; print(*sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(shown.stdout.split())


def test_the_fork_server_imports_the_boot_modules_and_nothing_else(tmp_path: Path) -> None:
    modules = _server_imports(tmp_path)
    assert set(BOOT_MODULES) <= modules
    assert [name for name in NEVER_IMPORTED if name in modules] == []


def test_a_forked_worker_imports_only_the_application(
    tmp_path: Path, root: Path, supervisors: pools.Supervisors
) -> None:
    """Its whole boot, ``ready`` and the task loop included, runs on modules the server
    imported once for every fork (:data:`BOOT_MODULES`): a worker pays only for its
    application. And it finds them frozen, out of its collector's reach."""
    pools.install_app(root, "modules_app.py")
    pools.write_root(root, workers=2, task_source="modules_app:report", spawn="forkserver")
    supervisor = supervisors.running(root)
    reports = [root / f"modules-{slot}.json" for slot in range(2)]
    pools.wait_for(lambda: all(report.exists() for report in reports))
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0
    server = _server_imports(tmp_path) | _at_start()
    if "typing" in server:  # the server's (sibling_fork's); with the aliases it registers
        server |= {"typing.io", "typing.re"}
    for report in reports:
        facts = json.loads(report.read_text())
        assert set(facts["modules"]) - server == {"lifecycle_app", "modules_app"}
        assert facts["frozen"] > 0


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
    if spawn == "forkserver":  # its own pid, in a PID namespace (containment auto, as root)
        assert _importers(root) == [_own_pid(supervisor.fork_server().pid)]
    else:
        assert len(set(_importers(root))) == WORKERS
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0


def _own_pid(pid: int) -> int:
    """The pid of process ``pid`` as its own PID namespace sees it (``NSpid``'s last)."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    (line,) = [line for line in status if line.startswith("NSpid:")]
    return int(line.split()[-1])


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
