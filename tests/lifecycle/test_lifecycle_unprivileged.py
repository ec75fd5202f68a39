"""The ``namespace`` level for an unprivileged user, in a user namespace of the guardian's.

Root prepares what such a user would have (a root directory of its own, an interpreter
it may run) and starts the pool as ``nobody`` (uid and gid 65534, no other group), with
``containment = "namespace"`` and with ``auto``, which must pick it. The worker contract
holds inside: the files the workers write belong to the real uid, the stop reaches them;
and, as for root, a task's ``setsid`` child dies with the guardian.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from pools import SUPERVISOR, Supervisor, lock_held, wait_for, wait_gone, write_root

NOBODY = 65534
"""The unprivileged user (and group) the pools of this module run as."""

STOP_MS = 1000
FORCE_KILL_MS = 500

_RUNS_A_POOL = (
    "import subprocess, sys; import coretsia.supervisor.cli; "
    "sys.exit(subprocess.run([sys.executable, '-c', '']).returncode)"
)
"""What ``nobody`` must manage with an interpreter: import the packages, and start
another interpreter by ``sys.executable`` (the supervisor starts the guardian so)."""

_HAS_USERNS = (
    "import sys; from coretsia.worker_protocol.internal.runtime import userns; "
    "sys.exit(0 if userns.available() else 1)"
)


def _as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _runs_a_pool(python: str) -> bool:
    try:
        return _as_nobody(python, "-c", _RUNS_A_POOL).returncode == 0
    except OSError:  # nobody may not even start it
        return False


def _interpreter_for_nobody(workdir: Path) -> str | None:
    """This interpreter if ``nobody`` may run it, else a fresh venv of the same Python
    version (from a base interpreter it may run) that imports this one's packages."""
    if _runs_a_pool(sys.executable):
        return sys.executable
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    paths = sysconfig.get_paths()
    hook = "".join(
        f"import site; site.addsitedir({path!r})\n"
        for path in dict.fromkeys((paths["purelib"], paths["platlib"]))
    )
    bases = (getattr(sys, "_base_executable", ""), shutil.which(version, path="/usr/bin"))
    for n, base in enumerate(dict.fromkeys(b for b in bases if b)):
        venv = workdir / f"venv-{n}"
        made = subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=False)
        if made.returncode != 0:
            continue
        (venv / "lib" / version / "site-packages" / "coretsia-repo.pth").write_text(hook)
        python = str(venv / "bin" / "python")
        if _runs_a_pool(python):
            return python
    return None


@pytest.fixture(scope="module")
def nobody_python() -> Iterator[str]:
    """An interpreter ``nobody`` may run with this repository's packages; skips if none,
    or if user namespaces are refused to it."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to prepare an unprivileged user's root and start it as one")
    with tempfile.TemporaryDirectory(prefix="cw-py-", dir="/tmp") as workdir:
        os.chmod(workdir, 0o755)
        python = _interpreter_for_nobody(Path(workdir))
        if python is None:
            pytest.skip("uid 65534 can run neither this interpreter nor a venv of the same version")
        if _as_nobody(python, "-c", _HAS_USERNS).returncode != 0:
            pytest.skip("user namespaces are refused to an unprivileged user on this machine")
        yield python


@pytest.fixture(params=["namespace", "auto"])
def unprivileged_root(root: Path, request: pytest.FixtureRequest) -> Path:
    """The test's root, configured for the level of the parameter and owned by nobody."""
    write_root(
        root,
        containment=request.param,
        task_source="lifecycle_app:escaping",
        workers=1,
        stop_timeout_ms=STOP_MS,
        force_kill_timeout_ms=FORCE_KILL_MS,
    )
    for path in (root, *root.rglob("*")):
        os.chown(path, NOBODY, NOBODY)
    return root


@pytest.fixture
def start(nobody_python: str) -> Iterator[Callable[[Path], Supervisor]]:
    """Start a pool as nobody; each is stopped at teardown."""
    started: list[Supervisor] = []

    def run(root: Path) -> Supervisor:
        started.append(Supervisor(root, python=nobody_python, user=NOBODY))
        return started[-1]

    yield run
    for supervisor in started:
        supervisor.close()


def _client(python: str, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _as_nobody(python, *SUPERVISOR[1:], *args, "--root", str(root))


def test_a_pool_serves_and_stops_as_an_unprivileged_user(
    unprivileged_root: Path, start: Callable[[Path], Supervisor], nobody_python: str
) -> None:
    """The pool runs in a PID namespace; the task's file belongs to nobody, mode as asked;
    ``stop`` ends everything (the ``setsid`` child too) and the start exits 0."""
    root = unprivileged_root
    supervisor = start(root)
    assert "containment namespace" in supervisor.wait_running()
    wait_for(lambda: (root / "escapee.pid").exists())
    written = (root / "escapee.pid").stat()
    assert (written.st_uid, written.st_gid) == (NOBODY, NOBODY)
    assert stat.S_IMODE(written.st_mode) == 0o600
    status = _client(nobody_python, root, "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["containment"] == "namespace"
    assert _client(nobody_python, root, "health").returncode == 0
    assert _client(nobody_python, root, "stop").returncode == 0
    assert supervisor.finish() == 0, supervisor.stderr
    assert wait_gone(root, 5) == []
    assert not lock_held(root)


def test_a_setsid_escapee_dies_with_the_guardian(
    unprivileged_root: Path, start: Callable[[Path], Supervisor]
) -> None:
    """The task's ``setsid sleep 1000`` (no descriptor of ours) is gone within a second
    of a SIGKILL of the supervisor and the guardian together: its namespace's init dies
    of its parent-death signal, and the kernel kills everything inside."""
    root = unprivileged_root
    supervisor = start(root)
    supervisor.wait_running()
    wait_for(lambda: (root / "escapee.pid").exists())
    guardian = supervisor.guardian()
    killed_at = time.monotonic()
    for proc in (psutil.Process(supervisor.proc.pid), guardian):
        proc.send_signal(signal.SIGKILL)
    supervisor.proc.wait(timeout=30)
    assert wait_gone(root, killed_at + 1.0 - time.monotonic()) == []
    # The lock goes with the guardian's last thread: its leader shows as a zombie
    # (out of wait_gone's sight) while its spawner thread may still be exiting.
    wait_for(lambda: not lock_held(root), 5)
