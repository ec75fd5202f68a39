"""The ``postgres`` task source on a real server: options, the SPI, waiting, leases."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Any, cast

import pytest
from fake_context import FakeContext

from coretsia.sources._pg_worker_source import PostgresSource, PostgresTask
from coretsia.sources.postgres_queue import PostgresQueue
from coretsia.sources.postgres_source import check_options, make_source
from coretsia.sources.sqlite_queue import QueueError
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.task_source import TaskSourceOptionError

LEASE_MS = 300


@pytest.fixture
def build(
    pg_dsn: str, handlers: str, make_context: Callable[..., Any]
) -> Iterator[Callable[..., PostgresSource]]:
    """Build sources on the test's database (their contexts returned too); closed at the end."""
    built: list[PostgresSource] = []

    def make(handler: str = "record", **options: object) -> PostgresSource:
        settings = {
            "dsn": pg_dsn,
            "handler": f"{handlers}:{handler}",
            "lease_timeout_ms": LEASE_MS,
            **options,
        }
        built.append(make_source(make_context(settings)))
        return built[-1]

    yield make
    for source in built:
        source.close()


@pytest.fixture
def producer(pg_dsn: str) -> Iterator[PostgresQueue]:
    with PostgresQueue(pg_dsn) as queue:
        yield queue


def received(source: PostgresSource, within: float = 5) -> PostgresTask:
    """The next task, which must come ``within`` seconds: a stop is requested then, so a
    receive that would wait for ever returns None and fails the test instead."""
    context = cast("FakeContext", source._context)
    deadline = threading.Timer(within, context.stop)
    deadline.start()
    try:
        task = source.receive()
    finally:
        deadline.cancel()
    assert isinstance(task, PostgresTask)
    return task


def test_the_entry_point_names_the_factory() -> None:
    (entry,) = entry_points(group="coretsia.worker.task_sources", name="postgres")
    assert entry.value == "coretsia.sources.postgres_source:make_source"
    assert entry.load().task_type == "queue"


@pytest.mark.parametrize(
    ("options", "key", "rule"),
    [
        ({}, "handler", ConfigRule.REQUIRED),
        ({"handler": "m:f", "surprise": 1}, "surprise", ConfigRule.UNKNOWN_KEY),
        ({"handler": "m:f", "dsn": 5}, "dsn", ConfigRule.WRONG_TYPE),
        ({"handler": "m:f", "dsn": "host=x\0"}, "dsn", ConfigRule.NOT_ONE_OF),
        ({"handler": "m:f", "queue": "a b"}, "queue", ConfigRule.NOT_ONE_OF),
        ({"handler": "m:f", "queue": "q" * 41}, "queue", ConfigRule.NOT_ONE_OF),
        ({"handler": "m:f", "queue": 1}, "queue", ConfigRule.WRONG_TYPE),
        ({"handler": "m f"}, "handler", ConfigRule.INVALID_TARGET),
        ({"handler": "m:f", "max_attempts": 0}, "max_attempts", ConfigRule.OUT_OF_RANGE),
        ({"handler": "m:f", "max_attempts": True}, "max_attempts", ConfigRule.WRONG_TYPE),
        ({"handler": "m:f", "lease_timeout_ms": 99}, "lease_timeout_ms", ConfigRule.OUT_OF_RANGE),
        ({"handler": "m:f", "lease_timeout_ms": 1.5}, "lease_timeout_ms", ConfigRule.WRONG_TYPE),
        (
            {"handler": "m:f", "keep_error_messages": 1},
            "keep_error_messages",
            ConfigRule.WRONG_TYPE,
        ),
    ],
)
def test_check_options_names_the_key_and_the_rule(
    options: dict[str, object], key: str, rule: ConfigRule | str
) -> None:
    with pytest.raises(TaskSourceOptionError) as caught:
        check_options(options)
    assert (caught.value.key, caught.value.rule) == (key, ConfigRule(rule))


def test_check_options_accepts_a_full_table() -> None:
    check_options(
        {
            "dsn": "postgresql:///jobs",
            "queue": "mail.out-1",
            "handler": "myapp.jobs:handle",
            "max_attempts": 5,
            "lease_timeout_ms": 100,
            "keep_error_messages": True,
        }
    )


def test_a_task_runs_and_is_acknowledged(build, producer: PostgresQueue) -> None:
    source = build()
    source.assert_ready()
    producer.enqueue(["hello"])
    task = received(source)
    assert task.run() == "HELLO"
    task.complete("HELLO")
    assert (task.settled_state, task.attempt) == ("done", 1)
    assert producer.stats() == {"pending": 0, "in_flight": 0, "done": 1, "failed": 0}


def test_a_failing_task_is_retried_then_failed(build, producer: PostgresQueue) -> None:
    source = build("explode", max_attempts=2, keep_error_messages=True)
    producer.enqueue(["bad"])
    outcomes = []
    for _ in range(2):
        task = received(source)
        try:
            task.run()
        except RuntimeError as error:
            task.fail(error)
        outcomes.append((task.attempt, task.retried))
    assert outcomes == [(1, True), (2, False)]
    (failed,) = producer.failed()
    assert failed.last_error == "RuntimeError: boom: bad"


def test_an_idle_receive_wakes_for_new_work_and_for_a_stop(
    build, producer: PostgresQueue, make_context: Callable[..., Any]
) -> None:
    source = build()
    feeder = threading.Timer(0.3, producer.enqueue, (["late"],))
    feeder.start()
    started = time.monotonic()
    task = received(source)
    assert time.monotonic() - started < 2  # woken by the notification, not a timer
    feeder.join()
    task.complete(None)

    context = cast("FakeContext", source._context)
    stopper = threading.Timer(0.2, context.stop)
    fallback = threading.Timer(5, producer.enqueue, (["unblock"],))  # bounds a deaf receive
    stopper.start()
    fallback.start()
    started = time.monotonic()
    assert source.receive() is None
    assert time.monotonic() - started < 2
    fallback.cancel()
    stopper.join()


def test_a_dead_holders_lease_wakes_an_idle_worker_when_it_expires(
    build, producer: PostgresQueue
) -> None:
    """Nothing is enqueued: the idle receive wakes at the expiry and takes the lease back."""
    producer.enqueue(["orphan"])
    dead = producer.lease("dead-pool", LEASE_MS)  # never renewed: its holder is gone
    assert dead is not None
    source = build()
    started = time.monotonic()
    task = received(source, within=3)
    waited = time.monotonic() - started
    assert (task.message.id, task.attempt) == (dead.id, 2)
    assert waited < 3
    task.complete(None)


def test_a_running_task_keeps_its_lease_past_the_timeout(build, producer: PostgresQueue) -> None:
    """The heartbeat renews it: another worker's reaping never takes it."""
    source = build()
    producer.enqueue(["long"])
    task = received(source)
    deadline = time.monotonic() + 4 * LEASE_MS / 1000
    while time.monotonic() < deadline:
        assert producer.recover(3) == 0
        time.sleep(LEASE_MS / 4000)
    task.complete(None)
    assert producer.stats()["done"] == 1


def test_an_unreachable_server_is_not_ready_and_says_nothing_of_it(
    pg_server, handlers: str, make_context: Callable[..., Any]
) -> None:
    secret = "s3cret-marker"
    dsn = f"{pg_server.dsn('missing_db')} password={secret}"
    source = make_source(make_context({"dsn": dsn, "handler": f"{handlers}:record"}))
    try:
        with pytest.raises(QueueError) as caught:
            source.assert_ready()
        assert secret not in str(caught.value)
        assert "missing_db" not in str(caught.value)
        assert caught.value.__cause__ is None
    finally:
        source.close()


def test_the_supervisors_import_and_check_leave_psycopg_alone() -> None:
    """``start`` imports the entry point and checks the options: no driver is loaded."""
    code = (
        "import sys\n"
        "from coretsia.sources.postgres_source import make_source\n"
        "make_source.check_options({'handler': 'm:f', 'dsn': 'postgresql:///x'})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('psycopg', 'sqlite3')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "[]\n"


def test_an_acknowledgement_leases_the_next_message_ahead_and_a_stop_gives_it_back(
    build, producer: PostgresQueue
) -> None:
    source = build()
    producer.enqueue(["first", "second", "third"])
    task = received(source)
    task.complete(None)  # acknowledged, and "second" leased in the same statement
    assert producer.stats() == {"pending": 1, "in_flight": 1, "done": 1, "failed": 0}
    ahead = received(source, within=0.5)  # no wait: it was leased already
    assert ahead.message.payload == "second"
    ahead.complete(None)  # and "third" is ahead now
    cast("FakeContext", source._context).stop()
    assert source.receive() is None  # a stop gives the message ahead back, not run
    assert producer.stats() == {"pending": 1, "in_flight": 0, "done": 2, "failed": 0}
    message = producer.lease("gen-b", LEASE_MS)
    assert message is not None
    assert (message.payload, message.attempts) == ("third", 0)  # no attempt counted


def test_closing_gives_back_the_message_leased_ahead(build, producer: PostgresQueue) -> None:
    source = build()
    producer.enqueue(["first", "second"])
    received(source).complete(None)
    assert producer.stats()["in_flight"] == 1
    source.close()
    source.close()
    assert producer.stats() == {"pending": 1, "in_flight": 0, "done": 1, "failed": 0}
