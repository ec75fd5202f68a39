"""The SQLite queue's wake-ups: an enqueue pokes a waiting worker over a datagram socket, a stop
descriptor wakes it, a stale socket is cleaned up, and a path too long for a socket falls
back to plain timeouts.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from coretsia.sources.sqlite_queue import SqliteQueue

WAKE_ALONE = (
    "a wake-up must come within 1 s, where a missed poke would take the 5 s timeout: a "
    "waiter kept off the CPU by other tests' processes can take longer"
)


class TestNotification:
    @pytest.mark.serial(reason=WAKE_ALONE)
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

    @pytest.mark.serial(reason=WAKE_ALONE)
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
