"""The SQLite queue on real files: states, exactly-once settlement, recovery, schema."""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coretsia.sources.sqlite_queue import (
    LeaseLostError,
    Message,
    QueueError,
    SqliteQueue,
)


@pytest.fixture
def queue(short_dir: Path) -> Iterator[SqliteQueue]:
    with SqliteQueue(short_dir / "var" / "q.sqlite3") as q:
        yield q


def _counts(pending: int = 0, in_flight: int = 0, done: int = 0, failed: int = 0) -> dict[str, int]:
    return {"pending": pending, "in_flight": in_flight, "done": done, "failed": failed}


class TestOpening:
    def test_creates_parent_directory_schema_and_wal(self, short_dir: Path) -> None:
        """First use creates var/ and the schema; the file is in WAL mode."""
        path = short_dir / "a" / "b" / "q.sqlite3"
        with SqliteQueue(path) as q:
            q.check()
            assert q.stats() == _counts()
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            conn.close()

    def test_reopening_keeps_the_messages(self, short_dir: Path) -> None:
        path = short_dir / "q.sqlite3"
        with SqliteQueue(path) as q:
            q.enqueue(["a", "b"])
        with SqliteQueue(path, create=False) as q:
            assert q.stats() == _counts(pending=2)

    def test_create_false_refuses_a_missing_file(self, short_dir: Path) -> None:
        """A read-only caller (stats) must not leave an empty database behind a typo."""
        path = short_dir / "missing.sqlite3"
        with pytest.raises(QueueError, match="does not exist"):
            SqliteQueue(path, create=False)
        assert not path.exists()

    def test_a_foreign_database_is_refused(self, short_dir: Path) -> None:
        """A SQLite file with other tables is never turned into a queue."""
        path = short_dir / "other.sqlite3"
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
        with pytest.raises(QueueError, match="not a Coretsia queue"):
            SqliteQueue(path)

    def test_a_file_that_is_not_sqlite_is_refused(self, short_dir: Path) -> None:
        path = short_dir / "text.sqlite3"
        path.write_text("hello, I am not a database\n" * 100)
        with pytest.raises(QueueError):
            SqliteQueue(path)

    def test_a_newer_schema_is_refused(self, short_dir: Path) -> None:
        path = short_dir / "q.sqlite3"
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
    def test_recovers_only_other_generations(self, queue: SqliteQueue) -> None:
        queue.enqueue(["old-1", "old-2", "current", "other"])
        old = [queue.lease("old"), queue.lease("old")]
        current = queue.lease("current")
        other = queue.lease("older")
        assert current is not None
        assert other is not None
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

    def test_recover_without_a_limit_keeps_attempts(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        assert queue.lease("old") is not None
        queue.recover("new")
        message = queue.lease("new")
        assert message is not None
        assert message.attempts == 0

    def test_recover_with_a_limit_counts_the_interrupted_attempt(self, queue: SqliteQueue) -> None:
        """A message that kills its worker every time ends up failed, not in a crash loop."""
        queue.enqueue(["crashes-its-worker"])
        for generation in range(2):
            assert queue.lease(f"gen-{generation}") is not None
            assert queue.recover(f"gen-{generation + 1}", max_attempts=2) == 1
        assert queue.stats() == _counts(failed=1)
        assert queue.lease("gen-3") is None


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

    def test_too_long_a_path_falls_back_without_notifications(self, short_dir: Path) -> None:
        """A socket path over the OS limit cannot be bound: wait still times out and stops."""
        deep = short_dir / ("d" * 60) / ("e" * 60)
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
