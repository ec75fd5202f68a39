"""Recovery of the leases of dead generations: the generation lock files that tell dead from
live, what comes back and with which attempt count, and a boot that never waits for a writer.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from queue_counts import counts

from coretsia.sources.sqlite_queue import INTERRUPTED, LeaseLostError, QueueError, SqliteQueue


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


class TestRecover:
    """Leases of dead generations come back; live ones, of any generation, never do."""

    def test_recovers_only_dead_generations(self, queue: SqliteQueue) -> None:
        queue.enqueue(["old-1", "old-2", "current", "other"])
        with SqliteQueue(queue.path) as dead:  # a worker that leases, then is gone
            old = [dead.lease("old"), dead.lease("old")]
            current = queue.lease("current")
            other = dead.lease("older")
        assert current is not None
        assert queue.recover("current") == 3
        assert queue.stats() == counts(pending=3, in_flight=1)
        queue.ack(current)  # the current generation's lease is untouched
        for lost in [*old, other]:
            assert lost is not None
            with pytest.raises(LeaseLostError):  # the dead worker's lease is void
                queue.ack(lost)
        again = [m.payload for m in iter(lambda: queue.lease("current"), None)]
        assert again == ["old-1", "old-2", "other"]
        assert queue.recover("current") == 0

    def test_a_live_generation_of_another_pool_is_left_alone(self, queue: SqliteQueue) -> None:
        """An open queue holds its generation's lock: no recoverer takes its lease."""
        queue.enqueue(["a"])
        with SqliteQueue(queue.path) as other_pool:
            live = other_pool.lease("pool-b")
            assert live is not None
            assert queue.recover("pool-a") == 0
            assert queue.stats() == counts(in_flight=1)
            other_pool.ack(live)
        assert queue.stats() == counts(done=1)

    def test_a_generation_is_dead_once_its_last_holder_closes(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        first, second = SqliteQueue(queue.path), SqliteQueue(queue.path)
        try:
            assert first.lease("g") is not None
            second.hold("g")  # a sibling worker of the same generation, still alive
            first.close()
            assert queue.recover("new") == 0
        finally:
            first.close()
            second.close()
        assert queue.recover("new") == 1
        assert queue.stats() == counts(pending=1)

    def test_never_recovers_its_own_generation(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        with SqliteQueue(queue.path) as dead:
            assert dead.lease("same") is not None
        assert queue.recover("same") == 0
        assert queue.stats() == counts(in_flight=1)

    def test_recover_without_a_limit_keeps_attempts(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        with SqliteQueue(queue.path) as dead:
            assert dead.lease("old") is not None
        queue.recover("new")
        message = queue.lease("new")
        assert message is not None
        assert message.attempts == 0

    def test_recover_with_a_limit_counts_the_interrupted_attempt(self, queue: SqliteQueue) -> None:
        """A message that kills its worker every time ends up failed, not in a crash loop."""
        queue.enqueue(["crashes-its-worker"])
        for generation in range(2):
            with SqliteQueue(queue.path) as dead:
                assert dead.lease(f"gen-{generation}") is not None
            with SqliteQueue(queue.path) as booting:  # the next generation's worker
                assert booting.recover(f"gen-{generation + 1}", max_attempts=2) == 1
        assert queue.stats() == counts(failed=1)
        assert queue.lease("gen-3") is None
        (failed,) = queue.failed()
        assert (failed.attempts, failed.last_error) == (2, INTERRUPTED)


class TestGenerationLocks:
    """The lock files: private, removed when dead, and never a lease without one."""

    def test_a_lease_holds_a_private_lock_file_until_close(self, short_root: Path) -> None:
        with SqliteQueue(short_root / "var" / "q.sqlite3") as queue:
            queue.enqueue(["a"])
            assert queue.lease("gen-1") is not None
            lock = Path(queue.generations_dir) / "gen-1.lock"
            assert _mode(Path(queue.generations_dir)) == 0o700
            assert _mode(lock) == 0o600
        assert not lock.exists()  # the last holder removes it

    def test_recovery_sweeps_the_files_of_dead_generations(self, queue: SqliteQueue) -> None:
        directory = Path(queue.generations_dir)
        directory.mkdir(mode=0o700)
        (directory / "gone-1.lock").touch()  # left by a SIGKILLed worker with no lease
        with SqliteQueue(queue.path) as alive:
            alive.hold("alive")
            assert queue.recover("me") == 0
            assert sorted(os.listdir(directory)) == ["alive.lock", "me.lock"]

    def test_an_odd_generation_id_gets_a_safe_file_name(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        with SqliteQueue(queue.path) as dead:
            assert dead.lease("../../etc/x y") is not None
            (name,) = os.listdir(queue.generations_dir)
            assert name.startswith("+")
            assert queue.recover("me") == 0  # alive: the odd name is locked like any other
        assert queue.recover("me") == 1

    def test_a_worker_waits_for_a_recoverer_then_locks_a_fresh_file(
        self, queue: SqliteQueue
    ) -> None:
        """While a recoverer claims a generation, its new worker cannot lease; then it can."""
        with SqliteQueue(queue.path, busy_timeout=0.2) as late:
            with queue._locks.claim_dead(["g"]) as dead:  # the recoverer's step
                assert dead == ["g"]
                with pytest.raises(QueueError, match="generation"):
                    late.hold("g")  # bounded by its busy timeout
            late.hold("g")
            assert queue.recover("me") == 0
            lock = Path(queue.generations_dir) / "g.lock"
            assert lock.exists()


class TestBootWithoutTheWriterLock:
    """Opening, checking and recovering with nothing to recover never wait for a writer."""

    def test_open_check_and_recover_while_another_process_writes(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        with SqliteQueue(queue.path) as dead:
            assert dead.lease("dead") is not None
        queue.recover("me")
        writer = sqlite3.connect(queue.path, isolation_level=None)
        try:
            writer.execute("BEGIN IMMEDIATE")  # holds the writer lock throughout
            with SqliteQueue(queue.path, busy_timeout=0.05) as booting:
                assert booting.recover("booting") == 0
                booting.check()
                assert booting.stats() == counts(pending=1)
                with pytest.raises(sqlite3.OperationalError, match="locked"):
                    booting.enqueue(["b"])  # a real write does wait, and gives up
        finally:
            writer.close()
