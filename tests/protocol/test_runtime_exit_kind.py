"""Exit kinds: the bounded names the guardian and the proc host report for an exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from coretsia.worker_protocol.internal.runtime.exit_kind import from_returncode, from_wait_status


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (0, "exit-0"),
        (1, "exit-nonzero"),
        (255, "exit-nonzero"),
        (-signal.SIGTERM, "signal-term"),
        (-signal.SIGKILL, "signal-kill"),
        (-signal.SIGINT, "signal-other"),
    ],
)
def test_from_returncode(code: int, kind: str) -> None:
    """``subprocess``'s convention: negative for a death by signal."""
    assert from_returncode(code) == kind


@pytest.mark.parametrize(
    ("how", "kind"),
    [
        ("raise SystemExit(0)", "exit-0"),
        ("raise SystemExit(3)", "exit-nonzero"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "signal-kill"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", "signal-term"),
    ],
)
def test_from_wait_status_of_a_real_child(how: str, kind: str) -> None:
    """A raw ``waitpid`` status of a real child names the same kind as its return code."""
    child = subprocess.Popen([sys.executable, "-c", how])
    _pid, status = os.waitpid(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: tell Popen
    assert from_wait_status(status) == kind
    assert from_returncode(child.returncode) == kind
