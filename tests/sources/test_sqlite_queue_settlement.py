"""The SQLite queue's messages on real files: FIFO leases with fresh tokens, exact payloads,
all-or-nothing batches, and exactly-once settlement (ack, ack-and-lease, release, fail).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from queue_counts import counts

from coretsia.sources.sqlite_queue import LeaseLostError, Message, SqliteQueue


class TestEnqueueAndLease:
    def test_fifo_and_none_when_empty(self, queue: SqliteQueue) -> None:
        assert queue.lease("g") is None
        assert queue.enqueue(["first", "second"]) == 2
        assert queue.enqueue(iter(["third"])) == 1
        leased = [queue.lease("g") for _ in range(3)]
        assert [m.payload for m in leased if m] == ["first", "second", "third"]
        assert queue.lease("g") is None
        assert queue.stats() == counts(in_flight=3)

    def test_lease_records_generation_and_a_fresh_token(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a", "b"])
        one, two = queue.lease("gen-1"), queue.lease("gen-1")
        assert one is not None
        assert two is not None
        assert one.generation == "gen-1"
        assert one.attempts == 0
        assert len(one.token) == 32
        assert one.token != two.token
        assert one.token not in repr(one)  # the lease's secret stays out of any log line

    def test_payloads_round_trip_exactly(self, queue: SqliteQueue) -> None:
        payloads = ["", " spaced ", "line\nbreak", "nul\0byte", "ünïcødé ☃", "x" * 100_000]
        queue.enqueue(payloads)
        got = [m.payload for m in iter(lambda: queue.lease("g"), None)]
        assert got == payloads

    def test_empty_batch_is_nothing(self, queue: SqliteQueue) -> None:
        assert queue.enqueue([]) == 0
        assert queue.stats() == counts()

    def test_invalid_payloads_are_refused_before_anything_is_written(
        self, queue: SqliteQueue
    ) -> None:
        with pytest.raises(TypeError):
            queue.enqueue(["ok", b"bytes"])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="UTF-8"):
            queue.enqueue(["ok", "\udcff"])
        assert queue.stats() == counts()

    def test_a_batch_is_all_or_nothing(self, queue: SqliteQueue) -> None:
        """An iterator that fails half-way enqueues nothing."""

        def payloads() -> Iterator[str]:
            yield "a"
            raise OSError("the pipe broke")

        with pytest.raises(OSError, match="pipe broke"):
            queue.enqueue(payloads())
        assert queue.stats() == counts()


class TestSettlement:
    def test_ack_exactly_once(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        message = queue.lease("g")
        assert message is not None
        queue.ack(message)
        assert queue.stats() == counts(done=1)
        with pytest.raises(LeaseLostError):
            queue.ack(message)
        with pytest.raises(LeaseLostError):
            queue.fail(message, 3)
        assert queue.stats() == counts(done=1)

    def test_ack_of_a_pending_message_is_refused(self, queue: SqliteQueue) -> None:
        """A message that was never leased (or was put back) cannot be acknowledged."""
        queue.enqueue(["a"])
        forged = Message(id=1, payload="a", attempts=0, generation="g", token="0" * 32)
        with pytest.raises(LeaseLostError):
            queue.ack(forged)
        assert queue.stats() == counts(pending=1)

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
        assert queue.stats() == counts(in_flight=1, done=1)
        with pytest.raises(LeaseLostError):  # the ack was final
            queue.ack(first)

    def test_ack_and_lease_with_nothing_pending_still_acknowledges(
        self, queue: SqliteQueue
    ) -> None:
        queue.enqueue(["a"])
        message = queue.lease("g")
        assert message is not None
        assert queue.ack_and_lease(message, "g") is None
        assert queue.stats() == counts(done=1)

    def test_ack_and_lease_of_a_lost_lease_leases_nothing(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a", "b"])
        message = queue.lease("g")
        assert message is not None
        forged = Message(message.id, message.payload, 0, "g", "f" * 32)
        with pytest.raises(LeaseLostError):
            queue.ack_and_lease(forged, "g")
        assert queue.stats() == counts(pending=1, in_flight=1)  # rolled back whole

    def test_release_gives_a_message_back_without_an_attempt(self, queue: SqliteQueue) -> None:
        queue.enqueue(["a"])
        message = queue.lease("g")
        assert message is not None
        assert queue.release(message) is True
        assert queue.stats() == counts(pending=1)
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
        assert queue.stats() == counts(pending=1, failed=1)
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
        assert queue.stats() == counts(in_flight=1)
