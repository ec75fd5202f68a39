"""The SQLite queue's operator tools: list the failed messages (never their payloads), retry
them by id or all, and purge a settled state in bounded batches.
"""

from __future__ import annotations

import os
import socket
import time

import pytest
from queue_counts import counts

from coretsia.sources._queue_maintenance import PURGE_BATCH
from coretsia.sources.sqlite_queue import Retried, SqliteQueue


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
        assert queue.stats() == counts(pending=2, done=1, failed=1)
        message = queue.lease("g")
        assert message is not None
        assert (message.id, message.attempts) == (3, 0)

    def test_retry_all(self, queue: SqliteQueue) -> None:
        self._failed_queue(queue)
        assert queue.retry("all") == Retried(2, (), ())
        assert queue.stats() == counts(pending=3, done=1)
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
        assert queue.stats() == counts(pending=1, failed=2)
        assert queue.purge("failed") == 2
        assert queue.stats() == counts(pending=1)
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
        assert queue.stats() == counts(in_flight=1)

    def test_purge_refuses_other_states(self, queue: SqliteQueue) -> None:
        with pytest.raises(ValueError, match="done"):
            queue.purge("pending")  # type: ignore[arg-type]
