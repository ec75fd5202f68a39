"""The supervisor as PID 1 of a container: a tiny init reaps orphans and forwards signals.

A real PID namespace (``unshare --pid --fork``) stands in for a container, so the
supervisor command really is PID 1 there, as under ``docker run`` without ``--init``.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from pools import cli, wait_for, wait_gone

EVERY_CONTAINMENT = True
"""Each test runs at every containment level the machine offers (see the conftest)."""

UNSHARE = shutil.which("unshare")
NSENTER = shutil.which("nsenter")


def _namespaces_available() -> bool:
    if UNSHARE is None or NSENTER is None:
        return False
    probe = subprocess.run(
        [UNSHARE, "--pid", "--fork", "--mount-proc", "true"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(
    not _namespaces_available(), reason="PID namespaces are not available here (needs root)"
)


def test_pid1_reaps_orphans_and_stops_gracefully(root: Path) -> None:
    """As PID 1: orphans of the namespace are reaped, SIGTERM is a graceful stop."""
    assert UNSHARE is not None
    assert NSENTER is not None
    proc = subprocess.Popen(
        [UNSHARE, "--pid", "--fork", "--mount-proc", "--", sys.executable, "-m",
         "coretsia.supervisor.cli", "start", "--root", str(root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(b"running:")
        (init,) = psutil.Process(proc.pid).children()  # PID 1 inside the namespace
        (supervisor,) = init.children()
        assert "coretsia.supervisor.cli" in " ".join(supervisor.cmdline())
        assert cli(root, "health").returncode == 0
        # An orphan of the namespace: its parent exits at once, so it re-parents to PID 1.
        # It lives until killed here, so the test sees it re-parented however late it looks.
        subprocess.run(
            [NSENTER, "--target", str(init.pid), "--pid", "--mount", "--",
             "sh", "-c", "sleep 600 & exit 0"],
            check=True,
            timeout=30,
        )  # fmt: skip
        wait_for(lambda: any(c.name() == "sleep" for c in init.children()))
        (orphan,) = [c for c in init.children() if c.name() == "sleep"]
        orphan.kill()  # its zombie stays among PID 1's children until PID 1 reaps it
        wait_for(lambda: [c for c in init.children() if c.pid != supervisor.pid] == [])
        init.send_signal(signal.SIGTERM)  # forwarded to the supervisor: graceful stop
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert wait_gone(root) == []
