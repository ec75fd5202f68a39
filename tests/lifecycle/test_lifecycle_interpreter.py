"""An interpreter the pool cannot execute is named as such, not as a fork or host failure.

Every process of a pool is the supervisor's own interpreter started again. These tests run
a pool on a private copy of that interpreter (a ``venv --copies`` that sees the project's
packages) and take its execute bit away, as a ``chmod`` or a virtual environment replaced
in place would: the pool must fail with ``worker-interpreter-unavailable``.
"""

from __future__ import annotations

import glob
import os
import site
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pools import Supervisor, assert_failed, assert_none_left, write_root

TOKEN = "CORETSIA_WORKER_START_FAILED: worker-interpreter-unavailable"


@pytest.fixture(scope="module")
def interpreter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copied interpreter (not a link: its mode is ours to change) with our packages."""
    env = tmp_path_factory.mktemp("interpreter") / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--copies", "--without-pip", str(env)],
        check=True,
        timeout=120,
    )
    (purelib,) = glob.glob(str(env / "lib" / "python3*" / "site-packages"))
    # A .pth line that starts with ``import`` runs: the project's site directory is added
    # as a site directory, so its own .pth files (the editable installs) are read too.
    (Path(purelib) / "project.pth").write_text(
        f"import site; site.addsitedir({site.getsitepackages()[0]!r})\n"
    )
    python = env / "bin" / "python"
    yield python
    python.chmod(0o755)


@pytest.fixture
def runnable(interpreter: Path) -> Iterator[Path]:
    """The interpreter, executable again however the test left it."""
    interpreter.chmod(0o755)
    yield interpreter
    interpreter.chmod(0o755)


@pytest.fixture
def started() -> Iterator[list[Supervisor]]:
    pools: list[Supervisor] = []
    yield pools
    for supervisor in pools:
        supervisor.close()


def _loader() -> str:
    """The dynamic loader, which runs a program whose execute bit is off."""
    for candidate in ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"):
        if os.path.exists(candidate):
            return candidate
    pytest.skip("no known dynamic loader on this machine")


@pytest.mark.parametrize("driver", ["fork", "proc"])
def test_a_recycled_worker_whose_interpreter_was_made_unexecutable(
    short_root: Path, runnable: Path, started: list[Supervisor], driver: str
) -> None:
    """Workers recycle after every task; once the interpreter loses its execute bit, the
    next spawn (the guardian's, or the proc host's) is refused by the kernel, and the pool
    fails with the interpreter's token, not ``worker-fork-failed``."""
    write_root(
        short_root, workers=1, task_source="lifecycle_app:one_task", max_requests=1, driver=driver
    )
    supervisor = Supervisor(short_root, "--log-format", "json", python=str(runnable))
    started.append(supervisor)
    supervisor.wait_running()
    runnable.chmod(0o644)
    assert_failed(supervisor, short_root, TOKEN)


@pytest.mark.parametrize("mode", ["exec", "forkserver"])
def test_a_start_whose_interpreter_cannot_be_executed(
    short_root: Path, runnable: Path, mode: str
) -> None:
    """The supervisor itself runs (through the loader, which needs no execute bit), but
    the guardian cannot be started from the same interpreter: the start names it, and
    leaves nothing behind."""
    write_root(short_root, workers=1, spawn=mode)
    runnable.chmod(0o644)
    command = [_loader(), str(runnable), "-m", "coretsia.supervisor.cli", "start"]
    result = subprocess.run(
        [*command, "--root", str(short_root)], capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, result.stdout, result.stderr.strip()) == (1, "", TOKEN)
    assert_none_left(short_root)
