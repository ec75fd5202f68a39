"""The platform claims, enforced: one decision, refused at once where no pool runs.

The decision (:func:`platform_support`) is a pure function of ``sys.platform`` and
``os.name``, tested over every kind of platform. The refusal is tested through the real
command and the real ``ProcessManager.start()``: a fresh interpreter that believes it is
Windows (``sys.platform`` set before the CLI is imported) must fail before it reads or
starts anything.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from coretsia.supervisor.daemon.platforms import (
    TESTED,
    UNSUPPORTED,
    UNTESTED,
    platform_support,
    require_supported_platform,
)

REFUSAL = "CORETSIA_WORKER_START_FAILED: worker-platform-unsupported"
AS_WINDOWS = "import sys; sys.platform = 'win32'; "


@pytest.mark.parametrize(
    ("platform", "os_name", "expected"),
    [
        ("linux", "posix", TESTED),
        ("darwin", "posix", UNTESTED),
        ("freebsd14", "posix", UNTESTED),
        ("openbsd7", "posix", UNTESTED),
        ("win32", "nt", UNSUPPORTED),
        ("cygwin", "posix", UNSUPPORTED),
        ("msys", "posix", UNSUPPORTED),
        ("emscripten", "posix", UNSUPPORTED),
        ("wasi", "posix", UNSUPPORTED),
        ("linux", "nt", UNSUPPORTED),
    ],
)
def test_the_decision(platform: str, os_name: str, expected: str) -> None:
    """Linux is tested, other POSIX systems untested, Windows and no-process ones refused."""
    assert platform_support(platform, os_name) == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the claim is Linux")
def test_this_machine_is_the_tested_platform() -> None:
    """Where the tests run is where the claim says they run."""
    assert require_supported_platform() == TESTED


@pytest.mark.parametrize(
    "argv",
    [["start"], ["stop"], ["status", "--json"], ["health"], ["--help"], ["start", "--bogus"]],
    ids=["start", "stop", "status", "health", "help", "bad-usage"],
)
def test_every_command_refuses_at_once_where_no_pool_runs(tmp_path: Path, argv: list[str]) -> None:
    """Exit 1 with the stable token alone, before argparse, config or guardian."""
    (tmp_path / "coretsia.toml").write_text("[worker]\nworkers = 'broken'\n")
    code = AS_WINDOWS + "from coretsia.supervisor.cli import main; main()"
    began = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            *argv,
            *(["--root", str(tmp_path)] if argv[0] != "--help" else []),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (1, "", REFUSAL + "\n")
    assert sorted(os.listdir(tmp_path)) == ["coretsia.toml"]  # nothing read into var/
    assert time.monotonic() - began < 10


def test_process_manager_refuses_too(tmp_path: Path) -> None:
    """``ProcessManager.start()`` reaches the supervisor without the CLI: same error."""
    script = AS_WINDOWS + textwrap.dedent(
        """
        from coretsia.supervisor.process import ProcessManager
        from coretsia.worker_protocol.exceptions import WorkerStartFailedError

        manager = ProcessManager(root=sys.argv[1])
        manager.add(print)
        try:
            manager.start()
        except WorkerStartFailedError as error:
            print(error)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, REFUSAL + "\n", "")
    assert not (tmp_path / "var").exists()


def test_an_untested_platform_runs_with_one_warning_at_start(tmp_path: Path) -> None:
    """macOS is not refused: ``start`` goes on (here to its --root check) after one line
    that says no test has run there; the probes stay silent."""
    code = "import sys; sys.platform = 'darwin'; from coretsia.supervisor.cli import main; main()"
    missing = str(tmp_path / "missing")
    results = [
        subprocess.run(
            [sys.executable, "-c", code, command, "--root", missing],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        for command in ("start", "status")
    ]
    refused = (
        "CORETSIA_WORKER_CONFIG_INVALID: worker-config-invalid (key --root, rule file-missing)\n"
    )
    warning = (
        "coretsia-supervisor: warning: no test has run on this platform; see docs/reliability.md\n"
    )
    assert [(r.returncode, r.stderr) for r in results] == [(6, warning + refused), (6, refused)]
