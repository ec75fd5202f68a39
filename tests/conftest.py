"""Fixtures shared by every test: a process-leak guard and short-lived helper processes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest


@pytest.fixture(autouse=True)
def _no_process_left_behind() -> Iterator[None]:
    """Fail any test that leaves a child process of the test runner alive."""
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    left = [p for p in me.children(recursive=True) if p.pid not in before]
    alive = [p.pid for p in left if _kill_if_alive(p)]
    assert not alive, f"test left processes behind: {alive}"


def _kill_if_alive(proc: psutil.Process) -> bool:
    """Kill a leftover process; True if it was still running (not a zombie)."""
    try:
        running = proc.status() != psutil.STATUS_ZOMBIE
        proc.kill()
    except psutil.NoSuchProcess:
        return False
    return running


class Helper:
    """A ``python -c`` child that prints one line when ready and is killed by pid."""

    def __init__(self, code: str, *args: str, cwd: str | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=cwd,
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


@pytest.fixture
def helpers() -> Iterator[list[Helper]]:
    """Helper processes a test starts; each is killed and reaped at teardown."""
    started: list[Helper] = []
    yield started
    for helper in started:
        helper.close()


HOLD_LOCK = """
import sys
from coretsia.worker_protocol import lock
fd = lock.acquire(sys.argv[1])
print("held" if fd is not None else "busy", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def hold_lock(helpers: list[Helper]):  # type: ignore[no-untyped-def]
    """Start a separate process that holds a lifecycle lock until the test ends."""

    def hold(path: str) -> Helper:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        helper = Helper(HOLD_LOCK, path)
        helpers.append(helper)
        return helper

    return hold
