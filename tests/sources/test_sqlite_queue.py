"""The SQLite queue on real files: states, exactly-once settlement, recovery, schema."""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coretsia.sources._queue_maintenance import PURGE_BATCH
from coretsia.sources.sqlite_queue import (
    INTERRUPTED,
    LeaseLostError,
    Message,
    QueueError,
    Retried,
    SqliteQueue,
)


@pytest.fixture
def queue(short_root: Path) -> Iterator[SqliteQueue]:
    with SqliteQueue(short_root / "var" / "q.sqlite3") as q:
        yield q


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def _counts(pending: int = 0, in_flight: int = 0, done: int = 0, failed: int = 0) -> dict[str, int]:
    return {"pending": pending, "in_flight": in_flight, "done": done, "failed": failed}


class TestOpening:
    def test_creates_parent_directory_schema_and_wal(self, short_root: Path) -> None:
        """First use creates var/ and the schema; the file is in WAL mode."""
        path = short_root / "a" / "b" / "q.sqlite3"
        with SqliteQueue(path) as q:
            q.check()
            assert q.stats() == _counts()
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            conn.close()

    def test_reopening_keeps_the_messages(self, short_root: Path) -> None:
        path = short_root / "q.sqlite3"
        with SqliteQueue(path) as q:
            q.enqueue(["a", "b"])
        with SqliteQueue(path, create=False) as q:
            assert q.stats() == _counts(pending=2)

    def test_create_false_refuses_a_missing_file(self, short_root: Path) -> None:
        """A read-only caller (stats) must not leave an empty database behind a typo."""
        path = short_root / "missing.sqlite3"
        with pytest.raises(QueueError, match="does not exist"):
            SqliteQueue(path, create=False)
        assert not path.exists()

    def test_a_foreign_database_is_refused(self, short_root: Path) -> None:
        """A SQLite file with other tables is never turned into a queue."""
        path = short_root / "other.sqlite3"
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
        with pytest.raises(QueueError, match="not a Coretsia queue"):
            SqliteQueue(path)

    def test_a_file_that_is_not_sqlite_is_refused(self, short_root: Path) -> None:
        path = short_root / "text.sqlite3"
        path.write_text("hello, I am not a database\n" * 100)
        with pytest.raises(QueueError):
            SqliteQueue(path)

    def test_a_newer_schema_is_refused(self, short_root: Path) -> None:
        path = short_root / "q.sqlite3"
        SqliteQueue(path).close()
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA user_version = 99")
        conn.close()
        with pytest.raises(QueueError, match="schema version 99"):
            SqliteQueue(path)

    def test_check_notices_a_broken_schema(self, queue: SqliteQueue) -> None:
        queue.check()
        conn = sqlite3.connect(queue.path)
        conn.execute("PRAGMA user_version = 2")
        conn.close()
        with pytest.raises(QueueError):
            queue.check()


class TestEnqueueAndLease:
    def test_fifo_and_none_when_empty(self, queue: SqliteQueue) -> None:
        assert queue.lease("g") is None
        assert queue.enqueue(["first", "second"]) == 2
        assert queue.enqueue(iter(["third"])) == 1
        leased = [queue.lease("g") for _ in range(3)]
        assert [m.payload for m in leased if m] == ["first", "second", "third"]
        assert queue.lease("g") is None
        assert queue.stats() == _counts(in_flight=3)

    def test_lease_records_generation_and_a_fresh_token(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a", "b"])
        one, two = queue.lease("gen-1"), queue.lease("gen-1")
        assert one is not None
        assert two is not None
        assert one.generation == "gen-1"
        assert one.attempts == 0
        assert len(one.token) == 32
        assert one.token != two.token

    def test_payloads_round_trip_exactly(self, queue: SqliteQueue) -> None:
        payloads = ["", " spaced ", "line\nbreak", "nul\0byte", "ünïcødé ☃", "x" * 100_000]
        queue.enqueue(payloads)
        got = [m.payload for m in iter(lambda: queue.lease("g"), None)]
        assert got == payloads

    def test_empty_batch_is_nothing(self, queue: SqliteQueue) -> None:
        assert queue.enqueue([]) == 0
        assert queue.stats() == _counts()

    def test_invalid_payloads_are_refused_before_anything_is_written(
        self, queue: SqliteQueue
    ) -> None:
        with pytest.raises(TypeError):
            queue.enqueue(["ok", b"bytes"])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="UTF-8"):
            queue.enqueue(["ok", "\udcff"])
        assert queue.stats() == _counts()

    def test_a_batch_is_all_or_nothing(self, queue: SqliteQueue) -> None:
        """An iterator that fails half-way enqueues nothing."""

        def payloads() -> Iterator[str]:
            yield "a"
            raise OSError("the pipe broke")

        with pytest.raises(OSError, match="pipe broke"):
            queue.enqueue(payloads())
        assert queue.stats() == _counts()


class TestSettlement:
    def test_ack_exactly_once(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        message = queue.lease("g")
        assert message is not None
        queue.ack(message)
        assert queue.stats() == _counts(done=1)
        with pytest.raises(LeaseLostError):
            queue.ack(message)
        with pytest.raises(LeaseLostError):
            queue.fail(message, 3)
        assert queue.stats() == _counts(done=1)

    def test_ack_of_a_pending_message_is_refused(self, queue: SqliteQueue) -> None:
        """A message that was never leased (or was put back) cannot be acknowledged."""
        queue.enqueue(["a"])
        forged = Message(id=1, payload="a", attempts=0, generation="g", token="0" * 32)
        with pytest.raises(LeaseLostError):
            queue.ack(forged)
        assert queue.stats() == _counts(pending=1)

    def test_ack_needs_this_leases_token(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        message = queue.lease("g")
        assert message is not None
        forged = Message(message.id, message.payload, 0, "g", "f" * 32)
        with pytest.raises(LeaseLostError):
            queue.ack(forged)
        queue.ack(message)

    def test_ack_and_lease_is_one_transaction(self, queue: SqliteQueue) -> None:
        """The acknowledgement and the next lease commit together: one writer-lock turn."""
        queue.enqueue(["a", "b"])
        first = queue.lease("g")
        assert first is not None
        statements: list[str] = []
        queue._conn.raw.set_trace_callback(statements.append)
        second = queue.ack_and_lease(first, "g")
        queue._conn.raw.set_trace_callback(None)
        assert second is not None
        assert (second.payload, second.attempts, second.generation) == ("b", 0, "g")
        assert second.token != first.token
        assert [s.split()[0] for s in statements].count("COMMIT") == 1
        assert statements[0] == "BEGIN IMMEDIATE"
        assert queue.stats() == _counts(in_flight=1, done=1)
        with pytest.raises(LeaseLostError):  # the ack was final
            queue.ack(first)

    def test_ack_and_lease_with_nothing_pending_still_acknowledges(
        self, queue: SqliteQueue
    ) -> None:
        queue.enqueue(["a"])
        message = queue.lease("g")
        assert message is not None
        assert queue.ack_and_lease(message, "g") is None
        assert queue.stats() == _counts(done=1)

    def test_ack_and_lease_of_a_lost_lease_leases_nothing(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a", "b"])
        message = queue.lease("g")
        assert message is not None
        forged = Message(message.id, message.payload, 0, "g", "f" * 32)
        with pytest.raises(LeaseLostError):
            queue.ack_and_lease(forged, "g")
        assert queue.stats() == _counts(pending=1, in_flight=1)  # rolled back whole

    def test_release_gives_a_message_back_without_an_attempt(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        message = queue.lease("g")
        assert message is not None
        assert queue.release(message) is True
        assert queue.stats() == _counts(pending=1)
        assert queue.release(message) is False  # that lease is over
        again = queue.lease("g")
        assert again is not None
        assert (again.id, again.attempts) == (message.id, 0)
        with pytest.raises(LeaseLostError):
            queue.ack(message)

    def test_fail_retries_then_fails_at_max_attempts(self, queue: SqliteQueue) -> None:
        queue.enqueue(["poison", "fine"])
        for attempt in range(3):
            message = queue.lease("g")
            assert message is not None
            assert (message.payload, message.attempts) == ("poison", attempt)
            state = queue.fail(message, 3, error=f"RuntimeError: try {attempt}")
            assert state == ("failed" if attempt == 2 else "pending")
        assert queue.stats() == _counts(pending=1, failed=1)
        conn = sqlite3.connect(queue.path)
        try:
            row = conn.execute("SELECT attempts, last_error FROM messages WHERE id = 1").fetchone()
        finally:
            conn.close()
        assert row == (3, "RuntimeError: try 2")
        nxt = queue.lease("g")
        assert nxt is not None
        assert nxt.payload == "fine"

    def test_fail_with_max_attempts_one_fails_at_once(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        message = queue.lease("g")
        assert message is not None
        assert queue.fail(message, 1) == "failed"
        assert queue.lease("g") is None

    @pytest.mark.parametrize("bad", [0, -1, True, 2.0])
    def test_fail_refuses_a_bad_max_attempts(self, queue: SqliteQueue, bad: object) -> None:
        queue.enqueue(["a"])
        message = queue.lease("g")
        assert message is not None
        with pytest.raises(ValueError, match="max_attempts"):
            queue.fail(message, bad)  # type: ignore[arg-type]
        assert queue.stats() == _counts(in_flight=1)


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
        assert queue.stats() == _counts(pending=3, in_flight=1)
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
            assert queue.stats() == _counts(in_flight=1)
            other_pool.ack(live)
        assert queue.stats() == _counts(done=1)

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
        assert queue.stats() == _counts(pending=1)

    def test_never_recovers_its_own_generation(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        with SqliteQueue(queue.path) as dead:
            assert dead.lease("same") is not None
        assert queue.recover("same") == 0
        assert queue.stats() == _counts(in_flight=1)

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
        assert queue.stats() == _counts(failed=1)
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
                assert booting.stats() == _counts(pending=1)
                with pytest.raises(sqlite3.OperationalError, match="locked"):
                    booting.enqueue(["b"])  # a real write does wait, and gives up
        finally:
            writer.close()


class TestOperatorTools:
    def _failed_queue(self, queue: SqliteQueue) -> list[int]:
        """Messages 1..4: 1 done, 2 and 3 failed, 4 pending; the failed ids."""
        queue.enqueue(["done", "bad-1", "bad-2", "pending"])
        done = queue.lease("g")
        assert done is not None
        queue.ack(done)
        for _ in range(2):
            message = queue.lease("g")
            assert message is not None
            assert queue.fail(message, 1, error="ValueError") == "failed"
        return [2, 3]

    def test_failed_lists_failures_without_payloads(self, queue: SqliteQueue) -> None:
        before = time.time()
        self._failed_queue(queue)
        failed = queue.failed()
        assert [(m.id, m.attempts, m.last_error) for m in failed] == [
            (2, 1, "ValueError"),
            (3, 1, "ValueError"),
        ]
        assert all(m.settled_at is not None and m.settled_at >= before - 1 for m in failed)
        assert not hasattr(failed[0], "payload")

    def test_retry_ids_resets_attempts_and_reports_the_rest(self, queue: SqliteQueue) -> None:
        self._failed_queue(queue)
        result = queue.retry([3, 99, 1, 3, 4])
        assert result == Retried(retried=1, unknown=(99,), not_failed=(1, 4))
        assert queue.stats() == _counts(pending=2, done=1, failed=1)
        message = queue.lease("g")
        assert message is not None
        assert (message.id, message.attempts) == (3, 0)

    def test_retry_all(self, queue: SqliteQueue) -> None:
        self._failed_queue(queue)
        assert queue.retry("all") == Retried(2, (), ())
        assert queue.stats() == _counts(pending=3, done=1)
        assert queue.retry("all") == Retried(0, (), ())

    def test_retry_refuses_a_non_integer_id(self, queue: SqliteQueue) -> None:
        with pytest.raises(TypeError):
            queue.retry(["1"])  # type: ignore[list-item]

    def test_retry_pokes_the_waiters(self, queue: SqliteQueue) -> None:
        """A local datagram is delivered at once: the poke is there when retry returns."""
        self._failed_queue(queue)
        os.makedirs(queue.notify_dir, exist_ok=True)
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
            listener.bind(os.path.join(queue.notify_dir, "test.sock"))
            listener.settimeout(0.0)
            queue.retry([99])  # nothing made pending: no poke
            with pytest.raises(BlockingIOError):
                listener.recv(8)
            queue.retry([2])
            assert listener.recv(8) == b"\0"

    def test_purge_deletes_one_settled_state(self, queue: SqliteQueue) -> None:
        self._failed_queue(queue)
        assert queue.purge("done") == 1
        assert queue.stats() == _counts(pending=1, failed=2)
        assert queue.purge("failed") == 2
        assert queue.stats() == _counts(pending=1)
        assert queue.purge("failed") == 0

    @pytest.mark.parametrize(
        ("rows", "deletes"),
        [
            (2 * PURGE_BATCH - 1, 2),  # a short batch ends it
            (2 * PURGE_BATCH, 3),  # a full batch asks again: the third finds nothing
            (2 * PURGE_BATCH + 1, 3),
        ],
    )
    def test_purge_deletes_everything_in_batches(
        self, queue: SqliteQueue, rows: int, deletes: int
    ) -> None:
        """One DELETE of at most ``PURGE_BATCH`` rows per transaction, until one is short."""
        queue.enqueue(str(i) for i in range(rows))
        queue.enqueue(["leased"])
        while (message := queue.lease("g")) is not None:
            if message.payload != "leased":
                queue.ack(message)
        statements: list[str] = []
        queue._conn.raw.set_trace_callback(statements.append)
        try:
            assert queue.purge("done") == rows
        finally:
            queue._conn.raw.set_trace_callback(None)
        assert [s.split()[0] for s in statements] == ["DELETE"] * deletes  # each autocommits
        assert queue.stats() == _counts(in_flight=1)

    def test_purge_refuses_other_states(self, queue: SqliteQueue) -> None:
        with pytest.raises(ValueError, match="done"):
            queue.purge("pending")  # type: ignore[arg-type]


class TestDurability:
    def test_a_worker_connection_is_normal_and_enqueue_stays_full(self, short_root: Path) -> None:
        """NORMAL for lease/ack; enqueue switches to FULL for its commit and back."""
        with SqliteQueue(short_root / "q.sqlite3", synchronous="NORMAL") as queue:
            level = "PRAGMA synchronous"
            assert queue._conn.raw.execute(level).fetchone() == (1,)
            queue.enqueue(["a"])
            assert queue._conn.raw.execute(level).fetchone() == (1,)
        with SqliteQueue(short_root / "q.sqlite3") as queue:
            assert queue._conn.raw.execute(level).fetchone() == (2,)

    def test_an_unknown_level_is_refused(self, short_root: Path) -> None:
        with pytest.raises(ValueError, match="synchronous"):
            SqliteQueue(short_root / "q.sqlite3", synchronous="OFF")  # type: ignore[arg-type]


class TestNotification:
    def test_a_poke_wakes_a_waiter_and_queued_pokes_are_drained(self, queue: SqliteQueue) -> None:
        waiter = queue.waiter()
        try:
            assert waiter.notifying
            assert len(os.listdir(queue.notify_dir)) == 1
            queue.enqueue(["a"])
            queue.enqueue(["b"])  # two pokes queued while "busy"
            started = time.monotonic()
            assert waiter.wait(5.0) is False
            assert time.monotonic() - started < 1.0
            started = time.monotonic()
            assert waiter.wait(0.2) is False  # both were drained: this one times out
            assert time.monotonic() - started >= 0.15
        finally:
            waiter.close()
        assert os.listdir(queue.notify_dir) == []

    def test_stop_descriptor_wakes_a_waiter(self, queue: SqliteQueue) -> None:
        read, write = os.pipe()
        waiter = queue.waiter(read)
        try:
            os.close(write)
            started = time.monotonic()
            assert waiter.wait(5.0) is True
            assert time.monotonic() - started < 1.0
        finally:
            waiter.close()
            os.close(read)

    def test_a_stale_socket_is_removed_by_the_next_poke(self, queue: SqliteQueue) -> None:
        """A waiter SIGKILLed while waiting leaves its socket file; enqueue cleans it up."""
        os.makedirs(queue.notify_dir)
        stale = os.path.join(queue.notify_dir, "1-deadbeef.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(stale)
        sock.close()  # the file stays, nobody is bound to it any more
        unrelated = os.path.join(queue.notify_dir, "README")
        Path(unrelated).write_text("not a socket")
        queue.enqueue(["a"])
        assert sorted(os.listdir(queue.notify_dir)) == ["README"]

    def test_too_long_a_path_falls_back_without_notifications(self, short_root: Path) -> None:
        """A socket path over the OS limit cannot be bound: wait still times out and stops."""
        deep = short_root / ("d" * 60) / ("e" * 60)
        with SqliteQueue(deep / "q.sqlite3") as q:
            read, write = os.pipe()
            waiter = q.waiter(read)
            try:
                assert not waiter.notifying
                q.enqueue(["a"])  # no socket to poke: must not fail
                started = time.monotonic()
                assert waiter.wait(0.1) is False
                assert time.monotonic() - started >= 0.05
                os.close(write)
                assert waiter.wait(5.0) is True
            finally:
                waiter.close()
                os.close(read)
