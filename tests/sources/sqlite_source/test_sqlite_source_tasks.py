"""The ``sqlite`` task source's tasks: run then settle exactly once, retries up to
``max_attempts``, the message leased ahead with an acknowledgement (and given back on stop or
close), recovery across generations, and what a failure records.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fake_context import FakeContext

from coretsia.sources._source_common import describe
from coretsia.sources.sqlite_queue import LeaseLostError, SqliteQueue
from coretsia.sources.sqlite_source import SqliteSource, SqliteTask
from coretsia.worker_protocol.task_source import Task


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


def test_describe_names_the_exception_type_and_the_message_only_if_asked() -> None:
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

    assert describe(Broken(), with_message=True).endswith(".Broken")
