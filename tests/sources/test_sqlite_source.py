"""The ``sqlite`` task source: factory options, the SPI, settlement, waiting and stop."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from coretsia.sources import sqlite_source
from coretsia.sources.sqlite_queue import LeaseLostError, QueueError, SqliteQueue
from coretsia.sources.sqlite_source import (
    SourceOptionError,
    SqliteSource,
    SqliteTask,
    make_source,
)
from coretsia.worker_protocol.task_source import Task, TaskSource

if TYPE_CHECKING:  # conftest is not an importable module; the type is for readers
    from .conftest import FakeContext

    MakeContext = Callable[..., FakeContext]


@pytest.fixture
def root(short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project root: the worker's working directory, as the launcher sets it."""
    monkeypatch.chdir(short_dir)
    return short_dir


@pytest.fixture
def sources() -> Iterator[list[SqliteSource]]:
    """Sources a test built; closed at teardown so no socket file is left."""
    built: list[SqliteSource] = []
    yield built
    for source in built:
        source.close()


@pytest.fixture
def build(
    root: Path, handlers: str, make_context: MakeContext, sources: list[SqliteSource]
) -> Callable[..., tuple[SqliteSource, FakeContext]]:
    def build_one(
        *, generation: str | None = "gen-a", **options: object
    ) -> tuple[SqliteSource, FakeContext]:
        options.setdefault("handler", f"{handlers}:record")
        context = make_context(options, generation=generation)
        source = make_source(context)
        sources.append(source)
        return source, context

    return build_one


def _later(delay: float, action: Callable[[], object]) -> threading.Timer:
    timer = threading.Timer(delay, action)
    timer.start()
    return timer


class TestFactory:
    def test_registered_as_the_sqlite_entry_point_for_queue(self) -> None:
        """The supervisor finds the source by its entry point and reads its task type."""
        found = entry_points(group="coretsia.worker.task_sources", name="sqlite")
        (entry,) = list(found)
        assert entry.value == "coretsia.sources.sqlite_source:make_source"
        assert entry.load() is make_source
        assert make_source.task_type == "queue"

    def test_defaults(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]], root: Path
    ) -> None:
        source, _ = build()
        assert isinstance(source, TaskSource)
        assert source.queue.path == str(root / "var" / "queue.sqlite3")
        assert (root / "var" / "queue.sqlite3").is_file()
        source.assert_ready()

    def test_database_option_is_root_relative(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]], root: Path
    ) -> None:
        source, _ = build(database="data/jobs.db")
        assert source.queue.path == str(root / "data" / "jobs.db")

    @pytest.mark.parametrize(
        ("options", "key"),
        [
            ({"handler": None}, "handler"),
            ({"handler": 5}, "handler"),
            ({"handler": "no_colon"}, "handler"),
            ({"handler": "cq_handlers:"}, "handler"),
            ({"handler": "no_such_module_cq:f"}, "handler"),
            ({"handler": "cq_handlers:missing"}, "handler"),
            ({"handler": "cq_handlers:not_callable"}, "handler"),
            ({"max_attempts": 0}, "max_attempts"),
            ({"max_attempts": True}, "max_attempts"),
            ({"max_attempts": "3"}, "max_attempts"),
            ({"database": ""}, "database"),
            ({"database": 7}, "database"),
            ({"surprise": 1}, "surprise"),
            ({"keep_error_messages": 1}, "keep_error_messages"),
            ({"keep_error_messages": "yes"}, "keep_error_messages"),
        ],
    )
    def test_bad_options_name_the_key(
        self,
        root: Path,
        handlers: str,
        make_context: MakeContext,
        options: dict[str, object],
        key: str,
    ) -> None:
        merged: dict[str, object] = {"handler": f"{handlers}:record", **options}
        if merged["handler"] is None:
            del merged["handler"]
        with pytest.raises(SourceOptionError) as caught:
            make_source(make_context(merged))
        assert caught.value.key == key
        assert str(caught.value).startswith(f"worker.source_options.{key}: ")

    def test_without_options_the_handler_is_missing(
        self, root: Path, make_context: MakeContext
    ) -> None:
        """A runtime without context.options still gets a clear error, not an AttributeError."""
        with pytest.raises(SourceOptionError, match="handler: is required"):
            make_source(make_context(None))

    def test_serves_queue_only(self, root: Path, handlers: str, make_context: MakeContext) -> None:
        context = make_context({"handler": f"{handlers}:record"}, task_type="http")
        with pytest.raises(ValueError, match="task_type 'queue' only"):
            make_source(context)

    def test_an_unusable_database_is_reported_by_assert_ready(
        self, root: Path, handlers: str, make_context: MakeContext
    ) -> None:
        """The factory succeeds (the source resolved); the backend is what is not ready."""
        (root / "var").mkdir()
        (root / "var" / "queue.sqlite3").write_text("not a database\n" * 100)
        source = make_source(make_context({"handler": f"{handlers}:record"}))
        try:
            with pytest.raises(QueueError):
                source.assert_ready()
            with pytest.raises(QueueError):
                source.receive()
        finally:
            source.close()

    def test_assert_ready_fails_on_a_broken_database(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        source, _ = build()
        source.queue.close()
        with pytest.raises(QueueError):
            source.assert_ready()


class TestTasks:
    def test_run_then_complete_acknowledges(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        source, _ = build()
        source.queue.enqueue(["hello"])
        task = source.receive()
        assert isinstance(task, SqliteTask)
        assert isinstance(task, Task)
        assert task.run() == "HELLO"
        task.complete("HELLO")
        assert source.queue.stats()["done"] == 1
        with pytest.raises(LeaseLostError):  # settled exactly once
            task.complete("HELLO")

    def test_fail_retries_then_marks_failed(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]], handlers: str
    ) -> None:
        source, _ = build(handler=f"{handlers}:explode", max_attempts=2)
        source.queue.enqueue(["x"])
        for _ in range(2):
            task = source.receive()
            assert task is not None
            with pytest.raises(RuntimeError) as caught:
                task.run()
            task.fail(caught.value)
        assert source.queue.stats() == {"pending": 0, "in_flight": 0, "done": 0, "failed": 1}

    @pytest.mark.parametrize(
        ("options", "recorded"),
        [({}, "RuntimeError"), ({"keep_error_messages": True}, "RuntimeError: boom: x")],
    )
    def test_fail_tells_the_worker_whether_it_will_be_retried(
        self,
        build: Callable[..., tuple[SqliteSource, FakeContext]],
        handlers: str,
        options: dict[str, object],
        recorded: str,
    ) -> None:
        """``settled_state`` and ``message.attempts``; last_error keeps the type only by default."""
        source, _ = build(handler=f"{handlers}:explode", max_attempts=2, **options)
        source.queue.enqueue(["x"])
        states: list[str | None] = []
        for attempt in range(2):
            task = source.receive()
            assert task is not None
            assert task.settled_state is None
            assert task.message.attempts == attempt
            with pytest.raises(RuntimeError) as caught:
                task.run()
            task.fail(caught.value)
            states.append(task.settled_state)
        assert states == ["pending", "failed"]
        (failed,) = source.queue.failed()
        assert failed.last_error == recorded

    def test_complete_sets_settled_state_done(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        source, _ = build()
        source.queue.enqueue(["x"])
        task = source.receive()
        assert task is not None
        task.complete(task.run())
        assert task.settled_state == "done"

    def test_a_new_generation_recovers_once_the_old_one_is_gone(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        old, _ = build(generation="gen-1")
        old.queue.enqueue(["a"])
        assert old.receive() is not None
        sibling, _ = build(generation="gen-1")  # same generation: a live worker's lease
        assert sibling.queue.stats()["in_flight"] == 1
        other_pool, _ = build(generation="gen-x")  # gen-1 is alive: its lease stays
        assert other_pool.queue.stats()["in_flight"] == 1
        old.close()
        sibling.close()
        new, _ = build(generation="gen-2")
        assert new.queue.stats()["pending"] == 1
        task = new.receive()
        assert task is not None
        assert task.message.attempts == 1

    def test_an_unknown_generation_recovers_nothing(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        old, _ = build(generation="gen-1")
        old.queue.enqueue(["a"])
        assert old.receive() is not None
        old.close()
        unknown, _ = build(generation=None)
        assert unknown.queue.stats()["in_flight"] == 1


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


def test_describe_names_the_exception_type_and_the_message_only_if_asked() -> None:
    describe = sqlite_source._describe
    assert describe(RuntimeError("card 4242")) == "RuntimeError"
    assert describe(RuntimeError("boom"), with_message=True) == "RuntimeError: boom"
    assert describe(LeaseLostError("x")) == "coretsia.sources.sqlite_queue.LeaseLostError"
    assert describe(LeaseLostError(), with_message=True) == (
        "coretsia.sources.sqlite_queue.LeaseLostError"
    )


def test_describe_survives_a_broken_str() -> None:
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError

    assert sqlite_source._describe(Broken(), with_message=True).endswith(".Broken")
