"""Live progress for people at a terminal, and none for scripts."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

from pools import SUPERVISOR, Supervisors, cli, write_root


class OnTerminal:
    """A command whose stdout is a pseudo-terminal; reaped (killed if needed) on exit."""

    def __init__(self, argv: list[str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv, stdout=slave, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        )
        os.close(slave)
        self.seen = b""

    def read(self, until: bytes | None = None, timeout: float = 60) -> bytes:
        """What it showed, up to ``until`` or the end of its output."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            self.seen += chunk
            if until is not None and until in self.seen:
                break
        return self.seen

    def __enter__(self) -> OnTerminal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        os.close(self.master)
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=60)


def test_terminal_shows_start_and_stop_progress(root: Path) -> None:
    """start redraws "N/M workers ready"; stop shows its phases with a countdown."""
    write_root(root, task_source="lifecycle_app:stubborn", stop_timeout_ms=600)
    with OnTerminal([*SUPERVISOR, "start", "--root", str(root)]) as start:
        started = start.read(until=b"running: 2/2 workers ready")
        assert b"\r\x1b[Kstarting: " in started
        with OnTerminal([*SUPERVISOR, "stop", "--root", str(root)]) as stop:
            stopped = stop.read()
            assert stop.proc.wait(timeout=60) == 0
        assert b"stopping: cooperative (" in stopped
        assert b"stopping: terminate (" in stopped or b"stopping: kill (" in stopped
        assert stopped.endswith(b"stopped\r\n")
        assert start.proc.wait(timeout=30) == 8  # a forced stop: the stubborn task was killed


def test_no_progress_without_a_terminal(root: Path, supervisors: Supervisors) -> None:
    """Piped output is the summary line and nothing else."""
    supervisor = supervisors(root)
    supervisor.wait_running()
    stop = cli(root, "stop")
    assert stop.stdout == "stopped\n"
    assert supervisor.finish() == 0
    assert "\x1b" not in supervisor.stdout
