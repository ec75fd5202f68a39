"""Fixtures shared by every test: a process-leak guard; the rest is ``tests/support``."""

from __future__ import annotations

from collections.abc import Iterator

import psutil
import pytest

# Fresh roots, started supervisors, lock holders: tests/support/shared_fixtures.py.
pytest_plugins = ("shared_fixtures",)


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
