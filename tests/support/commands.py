"""Running a real command to completion, as an operator would: output captured, bounded."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

QUEUE_CLI = str(Path(sys.executable).with_name("coretsia-queue"))
"""The installed ``coretsia-queue`` console script (SQLite or PostgreSQL by URL)."""
SQLITE_QUEUE_CLI = str(Path(sys.executable).with_name("coretsia-sqlite-queue"))
"""The installed ``coretsia-sqlite-queue`` console script: the deprecated alias."""


def run_process(
    argv: Sequence[str],
    *,
    stdin: str | None = None,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    umask: int = -1,
    timeout: float = 30,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` to its end: text output captured, the exit status left to the caller.

    ``timeout`` bounds the wait: a command that hangs fails the test (``TimeoutExpired``,
    the child killed and reaped) instead of hanging it. ``umask`` (``-1``: inherit) is set
    in the child only.
    """
    return subprocess.run(
        list(argv),
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        umask=umask,
        timeout=timeout,
        check=False,
    )
