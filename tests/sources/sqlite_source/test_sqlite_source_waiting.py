"""The ``sqlite`` task source's ``receive`` when there is nothing to do: woken by an enqueue or
a stop, at once without notifications too, and its socket removed on close.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_context import FakeContext, MakeContext

from coretsia.sources.sqlite_queue import SqliteQueue
from coretsia.sources.sqlite_source import SqliteSource, make_source


def _later(delay: float, action: Callable[[], object]) -> threading.Timer:
    """Run ``action`` in a thread after ``delay`` seconds, while the test waits in receive."""
    timer = threading.Timer(delay, action)
    timer.start()
    return timer


class TestWaiting:
    def test_receive_returns_at_once_when_work_is_pending(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        source, _ = build()
        source.queue.enqueue(["a"])
        assert source.receive() is not None

    def test_an_enqueue_wakes_a_waiting_receive(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        """Woken by the poke, well before the 5-second safety re-check."""
        source, _ = build()
        assert source.notifying

        def enqueue() -> None:
            with SqliteQueue(source.queue.path) as other:  # another connection, as a producer
                other.enqueue(["late"])

        timer = _later(0.3, enqueue)
        started = time.monotonic()
        task = source.receive()
        elapsed = time.monotonic() - started
        timer.join()
        assert task is not None
        assert task.message.payload == "late"
        assert 0.25 <= elapsed < 2.0

    def test_stop_wakes_a_waiting_receive(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        source, context = build()
        timer = _later(0.3, context.stop)
        started = time.monotonic()
        assert source.receive() is None
        elapsed = time.monotonic() - started
        timer.join()
        assert 0.25 <= elapsed < 2.0

    def test_no_new_acquisition_after_stop(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        source, context = build()
        source.queue.enqueue(["a"])
        context.stop()
        assert source.receive() is None
        assert source.queue.stats()["pending"] == 1

    @pytest.mark.serial(
        reason="the stop must wake the receive within 0.9 s, before the 1 s re-check: a "
        "process kept off the CPU by other tests' processes can take longer"
    )
    def test_without_notifications_stop_still_wakes_at_once(
        self, root: Path, handlers: str, make_context: MakeContext, sources: list[SqliteSource]
    ) -> None:
        """A database path too long for a socket: re-checks each second, stop is immediate."""
        context = make_context({"handler": f"{handlers}:record", "database": "d" * 70 + "/q.db"})
        source = make_source(context)
        sources.append(source)
        assert not source.notifying
        timer = _later(0.2, context.stop)
        started = time.monotonic()
        assert source.receive() is None
        timer.join()
        assert time.monotonic() - started < 0.9

    def test_close_removes_the_socket(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        source, _ = build()
        notify_dir = source.queue.notify_dir
        assert len(os.listdir(notify_dir)) == 1
        source.close()
        source.close()
        assert os.listdir(notify_dir) == []
