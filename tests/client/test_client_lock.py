"""The lifecycle lock: probing never takes or creates it, and it dies with its holder."""

from __future__ import annotations

import os
from pathlib import Path

from coretsia.worker_protocol import lock


class TestProbe:
    def test_missing_file_is_free_and_not_created(self, tmp_path: Path) -> None:
        """A probe of a root that never ran a pool leaves no file behind."""
        path = tmp_path / "worker.lock"
        assert lock.probe(str(path)) is False
        assert not path.exists()

    def test_held_by_another_process(self, tmp_path: Path, hold_lock) -> None:  # type: ignore[no-untyped-def]
        """A lock held by a live process reads as held."""
        path = str(tmp_path / "worker.lock")
        assert hold_lock(path).first_line == "held"
        assert lock.probe(path) is True

    def test_probe_does_not_block_a_concurrent_acquire(self, tmp_path: Path) -> None:
        """Probing never takes the lock, so a start racing a probe still wins it."""
        path = str(tmp_path / "worker.lock")
        fd = lock.acquire(path)
        assert fd is not None
        os.close(fd)
        assert lock.probe(path) is False
        fd = lock.acquire(path)
        assert fd is not None
        os.close(fd)

    def test_freed_when_holder_is_killed(self, tmp_path: Path, hold_lock) -> None:  # type: ignore[no-untyped-def]
        """SIGKILL of the holder frees the lock at once: no stale PID file to clean."""
        path = str(tmp_path / "worker.lock")
        holder = hold_lock(path)
        holder.proc.kill()
        holder.proc.wait(timeout=10)
        assert lock.probe(path) is False


class TestAcquire:
    def test_second_acquire_is_refused(self, tmp_path: Path, hold_lock) -> None:  # type: ignore[no-untyped-def]
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
