"""A separate process holding a lifecycle lock, as another supervisor would."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

APP = Path(__file__).resolve().parent / "apps" / "hold_lock.py"


class LockHolder:
    """``apps/hold_lock.py`` on one lock path: its first line says whether it got the lock.

    It holds the lock until :meth:`close` (or until killed by pid, to free it abruptly).
    """

    def __init__(self, path: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(APP), path], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self.proc.stdout is not None
        self.first_line = self.proc.stdout.readline().decode().strip()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


HoldLock = Callable[[str], LockHolder]
"""The ``hold_lock`` fixture: hold the lock at a path in a new process until the test ends."""
