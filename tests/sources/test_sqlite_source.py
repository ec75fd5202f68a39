"""The ``sqlite`` task source: factory options, the SPI, settlement, waiting and stop."""

from __future__ import annotations

import os
import sys
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
    check_options,
    make_source,
)
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.task_source import Task, TaskSource, TaskSourceOptionError

if TYPE_CHECKING:  # conftest is not an importable module; the type is for readers
    from .conftest import FakeContext

    MakeContext = Callable[..., FakeContext]


@pytest.fixture
def root(short_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A root that is the working directory, as the launcher sets a worker's."""
    monkeypatch.chdir(short_root)
    return short_root


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


def received(source: SqliteSource) -> SqliteTask:
    """The task ``receive`` returns: there must be one."""
    task = source.receive()
    assert task is not None
    return task


def served(source: SqliteSource) -> SqliteTask:
    """Receive a task, run it and complete it (which leases the next message ahead)."""
    task = received(source)
    task.complete(task.run())
    return task


def run_and_fail(task: SqliteTask) -> None:
    """Run a task whose handler raises and fail it with what it raised."""
    with pytest.raises(RuntimeError) as caught:
        task.run()
    task.fail(caught.value)


BAD_OPTIONS: list[tuple[dict[str, object], str, ConfigRule]] = [
    ({"handler": None}, "handler", ConfigRule.REQUIRED),
    ({"handler": 5}, "handler", ConfigRule.WRONG_TYPE),
    ({"handler": "no_colon"}, "handler", ConfigRule.INVALID_TARGET),
    ({"handler": "cq_handlers:"}, "handler", ConfigRule.INVALID_TARGET),
    ({"handler": "a:b:c"}, "handler", ConfigRule.INVALID_TARGET),
    ({"handler": "my app:f"}, "handler", ConfigRule.INVALID_TARGET),
    ({"max_attempts": 0}, "max_attempts", ConfigRule.OUT_OF_RANGE),
    ({"max_attempts": True}, "max_attempts", ConfigRule.WRONG_TYPE),
    ({"max_attempts": "3"}, "max_attempts", ConfigRule.WRONG_TYPE),
    ({"database": ""}, "database", ConfigRule.UNSAFE_PATH),
    ({"database": "a\0b"}, "database", ConfigRule.UNSAFE_PATH),
    ({"database": 7}, "database", ConfigRule.WRONG_TYPE),
    ({"keep_error_messages": "yes"}, "keep_error_messages", ConfigRule.WRONG_TYPE),
    ({"keep_error_messages": 1}, "keep_error_messages", ConfigRule.WRONG_TYPE),
    ({"surprise": 1}, "surprise", ConfigRule.UNKNOWN_KEY),
]
"""Options both ``check_options`` and ``make_source`` refuse (``handler: None``: left out)."""


def _with_handler(options: dict[str, object], handler: str) -> dict[str, object]:
    """``options`` over a good ``handler``; ``handler: None`` leaves it out."""
    merged: dict[str, object] = {"handler": handler, **options}
    if merged["handler"] is None:
        del merged["handler"]
    return merged


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
        ("options", "key", "rule"),
        [
            *BAD_OPTIONS,
            ({"handler": "no_such_module_cq:f"}, "handler", ConfigRule.INVALID_TARGET),
            ({"handler": "cq_handlers:missing"}, "handler", ConfigRule.INVALID_TARGET),
            ({"handler": "cq_handlers:not_callable"}, "handler", ConfigRule.INVALID_TARGET),
        ],
    )
    def test_bad_options_name_the_key(
        self,
        root: Path,
        handlers: str,
        make_context: MakeContext,
        options: dict[str, object],
        key: str,
        rule: ConfigRule,
    ) -> None:
        """The factory refuses what the start-time check refuses, and a handler it cannot use."""
        with pytest.raises(SourceOptionError) as caught:
            make_source(make_context(_with_handler(options, f"{handlers}:record")))
        assert (caught.value.key, caught.value.rule) == (key, rule)
        assert str(caught.value) == f"worker.source_options.{key}: {rule.value}"

    def test_without_options_the_handler_is_missing(
        self, root: Path, make_context: MakeContext
    ) -> None:
        """A runtime without context.options still gets a clear error, not an AttributeError."""
        with pytest.raises(SourceOptionError, match="handler: required"):
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


class TestCheckOptions:
    """``make_source.check_options``: the SPI's start-time check, run by the supervisor."""

    def test_attached_to_the_factory(self) -> None:
        """The supervisor finds the check as an attribute of the entry point's factory."""
        assert make_source.check_options is check_options  # type: ignore[attr-defined]

    @pytest.mark.parametrize(
        "options",
        [
            {"handler": "app.jobs:handle"},
            {"handler": "jobs:Handler.run", "database": "/srv/q.db", "max_attempts": 1},
            {"handler": "jobs:handle", "keep_error_messages": True},
        ],
    )
    def test_accepts_good_options(self, options: dict[str, object]) -> None:
        check_options(options)

    @pytest.mark.parametrize(("options", "key", "rule"), BAD_OPTIONS)
    def test_bad_options_name_the_key_and_the_rule(
        self, options: dict[str, object], key: str, rule: ConfigRule
    ) -> None:
        with pytest.raises(TaskSourceOptionError) as caught:
            check_options(_with_handler(options, "jobs:handle"))
        assert type(caught.value) is SourceOptionError
        assert (caught.value.key, caught.value.rule) == (key, rule)

    def test_imports_nothing(self) -> None:
        """At start the supervisor must not import the application: neither does the check."""
        before = set(sys.modules)
        check_options({"handler": "cq_never_imported.jobs:handle", "database": "x.db"})
        assert set(sys.modules) - before == set()

    def test_the_handler_module_is_not_imported(self, root: Path) -> None:
        """Importability is the worker's check: a handler that is not there passes here."""
        check_options({"handler": "no_such_module_cq:f"})
        assert not (root / "var").exists()  # nor is the database created or opened

    def test_the_first_unknown_key_in_name_order(self) -> None:
        """Unknown keys are reported before anything else, the same one every time."""
        with pytest.raises(SourceOptionError) as caught:
            check_options({"zeta": 1, "alpha": 2, "max_attempts": "x"})
        assert (caught.value.key, caught.value.rule) == ("alpha", ConfigRule.UNKNOWN_KEY)


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
            run_and_fail(received(source))
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
            task = received(source)
            assert task.settled_state is None
            assert task.message.attempts == attempt
            run_and_fail(task)
            states.append(task.settled_state)
        assert states == ["pending", "failed"]
        (failed,) = source.queue.failed()
        assert failed.last_error == recorded

    def test_complete_leases_the_next_message_ahead(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        """The next receive takes the message leased with the acknowledgement."""
        source, _ = build()
        source.queue.enqueue(["a", "b"])
        served(source)
        assert source.queue.stats() == {"pending": 0, "in_flight": 1, "done": 1, "failed": 0}
        assert served(source).message.payload == "b"
        assert source.queue.stats() == {"pending": 0, "in_flight": 0, "done": 2, "failed": 0}

    def test_a_stop_gives_the_message_leased_ahead_back(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        source, context = build()
        source.queue.enqueue(["a", "b"])
        served(source)
        context.stop()
        assert source.receive() is None
        assert source.queue.stats() == {"pending": 1, "in_flight": 0, "done": 1, "failed": 0}
        message = source.queue.lease("other")
        assert message is not None
        assert message.attempts == 0  # never run: no attempt counted

    def test_closing_gives_the_message_leased_ahead_back(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        source, _ = build()
        source.queue.enqueue(["a", "b"])
        path = source.queue.path
        served(source)
        source.close()
        with SqliteQueue(path, create=False) as queue:
            assert queue.stats() == {"pending": 1, "in_flight": 0, "done": 1, "failed": 0}

    def test_nothing_is_leased_ahead_while_stopping(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        source, context = build()
        source.queue.enqueue(["a", "b"])
        first = received(source)
        context.stop()  # the task runs on to its end; its worker leaves after it
        first.complete(first.run())
        assert source.queue.stats() == {"pending": 1, "in_flight": 0, "done": 1, "failed": 0}

    def test_complete_sets_settled_state_done(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        source, _ = build()
        source.queue.enqueue(["x"])
        task = served(source)
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
        assert received(new).message.attempts == 1

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
