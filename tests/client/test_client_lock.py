"""The lifecycle lock: probing never takes or creates it, and it dies with its holder."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest
from lock_holder import HoldLock

from coretsia.worker_protocol import lock


class TestProbe:
    def test_missing_file_is_free_and_not_created(self, tmp_path: Path) -> None:
        """A probe of a root that never ran a pool leaves no file behind."""
        path = tmp_path / "worker.lock"
        assert lock.probe(str(path)) is False
        assert not path.exists()

    def test_held_by_another_process(self, tmp_path: Path, hold_lock: HoldLock) -> None:
        """A lock held by a live process reads as held."""
        path = str(tmp_path / "worker.lock")
        assert hold_lock(path).first_line == "held"
        assert lock.probe(path) is True

    def test_probe_only_tests_the_lock(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Probing never takes the lock, so a start racing a probe still wins it.

        A probe that took and released the lock would look the same from outside once it
        returned; the commands it hands to ``fcntl`` show the difference.
        """
        path = str(tmp_path / "worker.lock")
        fd = lock.acquire(path)
        assert fd is not None
        os.close(fd)
        commands: list[int] = []
        real = fcntl.fcntl

        def recording(fd: int, cmd: int, arg: bytes) -> bytes:
            commands.append(cmd)
            return real(fd, cmd, arg)

        monkeypatch.setattr(fcntl, "fcntl", recording)
        assert lock.probe(path) is False
        assert commands == [fcntl.F_OFD_GETLK]

    @pytest.mark.parametrize("kind", ["fifo", "symlink", "directory"])
    def test_lock_path_that_is_not_a_regular_file(self, tmp_path: Path, kind: str) -> None:
        """A FIFO, symlink or directory at the lock path is an error, never a hang.

        A FIFO would block a plain ``open`` until a writer appears (an exec probe with a
        deadline would hang); a symlink would let the guardian create and lock a file
        outside the root.
        """
        path = tmp_path / "worker.lock"
        if kind == "fifo":
            os.mkfifo(path, 0o600)
        elif kind == "symlink":
            (tmp_path / "elsewhere").touch()
            path.symlink_to(tmp_path / "elsewhere")
        else:
            path.mkdir()
        with pytest.raises(OSError):
            lock.probe(str(path))
        with pytest.raises(OSError):
            lock.acquire(str(path))
        with pytest.raises(OSError):
            lock.acquire_shared(str(path))

    def test_freed_when_holder_is_killed(self, tmp_path: Path, hold_lock: HoldLock) -> None:
        """SIGKILL of the holder frees the lock at once: no stale PID file to clean."""
        path = str(tmp_path / "worker.lock")
        holder = hold_lock(path)
        holder.proc.kill()
        holder.proc.wait(timeout=10)
        assert lock.probe(path) is False


class TestAcquire:
    def test_second_acquire_is_refused(self, tmp_path: Path, hold_lock: HoldLock) -> None:
        """Only one holder at a time: the generation fence."""
        path = str(tmp_path / "worker.lock")
        hold_lock(path)
        assert lock.acquire(path) is None

    def test_file_is_private(self, tmp_path: Path) -> None:
        """The lock file is created 0600 and its descriptor is close-on-exec."""
        path = tmp_path / "worker.lock"
        old = os.umask(0)
        try:
            fd = lock.acquire(str(path))
        finally:
            os.umask(old)
        assert fd is not None
        try:
            assert path.stat().st_mode & 0o777 == 0o600
            assert not os.get_inheritable(fd)
        finally:
            os.close(fd)
