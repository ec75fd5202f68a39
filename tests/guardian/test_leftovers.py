"""What a killed generation left behind is found by its mark, killed, or refused."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import psutil
import pytest

from coretsia.guardian import leftovers

ROOT_ID = os.urandom(8).hex()


def _marked_sleeper(mark: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["sleep", "1000"],
        env={**os.environ, leftovers.ROOT_ENV: mark},
        start_new_session=True,
        close_fds=True,
    )


@pytest.fixture
def escapee() -> Iterator[subprocess.Popen[bytes]]:
    """A process of this root's mark in its own session, as a task's ``setsid`` child."""
    proc = _marked_sleeper(ROOT_ID)
    yield proc
    proc.kill()
    proc.wait()


def test_a_marked_process_is_killed(escapee: subprocess.Popen[bytes]) -> None:
    """Found by its environment alone, killed, and waited for (a zombie counts as gone)."""
    assert leftovers.clear(ROOT_ID, 5.0) == 1
    assert escapee.wait(5) == -9


def test_another_root_s_process_is_left_alone(escapee: subprocess.Popen[bytes]) -> None:
    assert leftovers.clear(os.urandom(8).hex(), 5.0) == 0
    assert escapee.poll() is None


def test_a_mark_that_only_starts_with_this_root_s_is_left_alone() -> None:
    """The mark is compared whole: another root's id that begins with this one is not it."""
    proc = _marked_sleeper(ROOT_ID + "0f")
    try:
        assert leftovers.clear(ROOT_ID, 5.0) == 0
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_one_that_cannot_be_killed_refuses(
    escapee: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user's process (simulated: the kill is refused) makes the start refuse."""

    def refused(self: psutil.Process) -> None:
        raise psutil.AccessDenied(self.pid)

    monkeypatch.setattr(psutil.Process, "kill", refused)
    assert leftovers.clear(ROOT_ID, 5.0) is None
    assert escapee.poll() is None


def test_one_that_survives_the_budget_refuses(
    escapee: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that outlives SIGKILL (simulated: the kill does nothing) refuses too."""
    monkeypatch.setattr(psutil.Process, "kill", lambda self: None)
    assert leftovers.clear(ROOT_ID, 0.2) is None
    assert escapee.poll() is None
