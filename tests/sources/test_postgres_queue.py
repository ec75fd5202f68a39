"""The PostgreSQL queue on a real server: lease, ack, retry, fail, lease expiry, schema."""

from __future__ import annotations

import select
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest
from pg_server import PgServer

from coretsia.sources._pg_connection import QueueUnavailableError
from coretsia.sources._pg_schema import MIGRATIONS_TABLE, SCHEMA_VERSION
from coretsia.sources._queue_messages import INTERRUPTED
from coretsia.sources.postgres_queue import PostgresQueue
from coretsia.sources.sqlite_queue import LeaseLostError, QueueError
from coretsia.worker_protocol.catalogue import SourceFault
from coretsia.worker_protocol.task_source import TaskSourceUnavailableError

LEASE_MS = 200


@pytest.fixture
def open_queue(pg_dsn: str) -> Iterator[Callable[..., PostgresQueue]]:
    """Open queues on the test's database; all closed at teardown."""
    opened: list[PostgresQueue] = []

    def make(queue: str = "default", **kwargs: bool) -> PostgresQueue:
        opened.append(PostgresQueue(pg_dsn, queue, **kwargs))
        return opened[-1]

    yield make
    for queue in opened:
        queue.close()


def wait_expired(queue: PostgresQueue) -> None:
    """Until the first lease's expiry (the server's clock) has passed; bounded."""
    left = queue.next_expiry()
    assert left is not None
    assert left <= LEASE_MS / 1000
    time.sleep(left + 0.01)
    assert queue.next_expiry() == 0.0


def test_lease_takes_the_oldest_and_ack_settles_it_once(open_queue) -> None:
    queue = open_queue()
    assert queue.enqueue(["first", "second"]) == 2
    message = queue.lease("gen-a", LEASE_MS)
    assert message is not None
    assert (message.id, message.payload, message.attempts, message.generation) == (
        1,
        "first",
        0,
        "gen-a",
    )
    assert queue.stats() == {"pending": 1, "in_flight": 1, "done": 0, "failed": 0}
    queue.ack(message)
    with pytest.raises(LeaseLostError):
        queue.ack(message)  # a second acknowledgement changes nothing
    assert queue.stats() == {"pending": 1, "in_flight": 0, "done": 1, "failed": 0}


def test_a_failed_attempt_is_retried_until_max_attempts(open_queue) -> None:
    queue = open_queue()
    queue.enqueue(["flaky"])
    states = []
    for _ in range(3):
        message = queue.lease("gen-a", LEASE_MS)
        assert message is not None
        states.append(queue.fail(message, 3, error="ValueError"))
    assert states == ["pending", "pending", "failed"]
    assert queue.lease("gen-a", LEASE_MS) is None
    (failed,) = queue.failed()
    assert (failed.id, failed.attempts, failed.last_error) == (1, 3, "ValueError")
    assert failed.settled_at is not None
    assert abs(failed.settled_at - time.time()) < 60
    assert queue.retry([1, 7]) == (1, (7,), ())
    assert queue.retry("all") == (0, (), ())
    again = queue.lease("gen-a", LEASE_MS)
    assert again is not None
    assert again.attempts == 0
    queue.ack(again)
    assert queue.purge("done") == 1
    assert queue.stats() == {"pending": 0, "in_flight": 0, "done": 0, "failed": 0}


def test_an_expired_lease_comes_back_as_an_interrupted_attempt(open_queue) -> None:
    queue = open_queue()
    queue.enqueue(["lost"])
    lost = queue.lease("dead-pool", LEASE_MS)
    assert lost is not None
    assert queue.recover(3) == 0  # alive until its expiry
    wait_expired(queue)
    assert queue.recover(3) == 1
    again = queue.lease("live-pool", LEASE_MS)
    assert again is not None
    assert (again.id, again.attempts) == (lost.id, 1)
    with pytest.raises(LeaseLostError):
        queue.ack(lost)  # the dead holder's token no longer settles it
    queue.ack(again)
    assert queue.stats()["done"] == 1


def test_an_expired_lease_at_the_limit_fails(open_queue) -> None:
    queue = open_queue()
    queue.enqueue(["kills its worker"])
    assert queue.lease("dead-pool", LEASE_MS) is not None
    wait_expired(queue)
    assert queue.recover(1) == 1
    (failed,) = queue.failed()
    assert (failed.attempts, failed.last_error) == (1, INTERRUPTED)


def test_a_renewed_lease_outlives_its_timeout(open_queue) -> None:
    queue = open_queue()
    queue.enqueue(["long"])
    message = queue.lease("gen-a", LEASE_MS)
    assert message is not None
    deadline = time.monotonic() + 3 * LEASE_MS / 1000
    while time.monotonic() < deadline:
        assert queue.renew([message.token], LEASE_MS) == 1
        time.sleep(LEASE_MS / 3000)
        assert queue.recover(3) == 0
    queue.ack(message)


def test_a_lease_skips_a_locked_row_without_waiting(open_queue, pg_dsn: str) -> None:
    queue = open_queue()
    queue.enqueue(["locked", "free"])
    queue._conn.execute("SET lock_timeout = '2s'")  # a lease that waited would fail, bounded
    with psycopg.connect(pg_dsn) as other, other.transaction():
        other.execute("SELECT id FROM coretsia_queue_messages WHERE id = 1 FOR UPDATE")
        started = time.monotonic()
        message = queue.lease("gen-a", LEASE_MS)
        assert time.monotonic() - started < 1.0
    assert message is not None
    assert message.payload == "free"


def test_queues_in_one_database_are_apart(open_queue) -> None:
    mail, sms = open_queue("mail"), open_queue("sms")
    mail.enqueue(["m"])
    assert sms.lease("gen-a", LEASE_MS) is None
    assert sms.stats() == {"pending": 0, "in_flight": 0, "done": 0, "failed": 0}
    assert mail.stats()["pending"] == 1


def test_an_enqueue_wakes_a_listener_at_commit(open_queue) -> None:
    waiting, producer = open_queue(), open_queue()
    fd = waiting.listen()
    assert select.select([fd], [], [], 0)[0] == []
    producer.enqueue(["wake"])
    assert select.select([fd], [], [], 5)[0] == [fd]
    waiting.poked = False
    assert waiting.lease("gen-a", LEASE_MS) is not None
    assert waiting.poked  # the statement read the notification


def test_the_schema_is_made_once_with_its_migration_table(open_queue, pg_dsn: str) -> None:
    with pytest.raises(QueueError, match="no queue"):
        open_queue(create=False)
    open_queue()
    open_queue()  # already current: nothing applied twice
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(f"SELECT version FROM {MIGRATIONS_TABLE}").fetchall()
        assert rows == [(SCHEMA_VERSION,)]
        conn.execute(f"INSERT INTO {MIGRATIONS_TABLE} (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    with pytest.raises(QueueError, match="schema version 2, this package reads version 1"):
        open_queue()


def test_errors_never_show_the_connection_string(pg_server: PgServer) -> None:
    secret = "s3cret-marker"
    dsn = f"{pg_server.dsn('no_such_database')} password={secret} application_name={secret}"
    with pytest.raises(QueueError) as caught:
        PostgresQueue(dsn)
    assert str(caught.value) == "cannot use the queue database: the database does not exist"
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    assert "no_such_database" not in repr(caught.value)
    assert secret not in repr(caught.value)


@pytest.fixture(scope="module")
def locked_out(pg_server: PgServer) -> str:
    """A database ``locked`` (no CONNECT for PUBLIC) holding a queue, and two roles:
    ``idle_role`` may connect to ``postgres`` and nothing more there."""
    pg_server.create_database("locked")
    with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
        conn.execute("REVOKE CONNECT ON DATABASE locked FROM PUBLIC")
        conn.execute("CREATE ROLE idle_role LOGIN")
    PostgresQueue(pg_server.dsn()).close()  # the queue's tables, owned by the superuser
    return "locked"


@pytest.mark.parametrize(
    ("dsn", "fault", "says"),
    [
        ("host={sock} dbname=postgres user=no_such_role", "authentication", "the server refused"),
        ("host={sock} dbname=no_such_db user=coretsia", "missing-database", "the database does"),
        ("host={sock}/gone dbname=postgres user=coretsia", "unreachable", "the server is unr"),
        ("host={sock} dbname=locked user=idle_role", "permission", "permission denied"),
        ("host={sock} dbname=postgres user=idle_role", "permission", "permission denied"),
    ],
    ids=["wrong-role", "missing-database", "stopped-server", "no-connect", "no-privilege"],
)
def test_a_connection_failure_says_which_kind_it_is(
    pg_server: PgServer, locked_out: str, dsn: str, fault: str, says: str
) -> None:
    """The role without privileges connects, and is refused its first statement; the
    other four never connect. None of it names the role, the database or the socket."""
    with pytest.raises(QueueUnavailableError) as caught:
        PostgresQueue(dsn.format(sock=pg_server.socket_dir), create=False)
    assert caught.value.fault is SourceFault(fault)
    assert isinstance(caught.value, TaskSourceUnavailableError)
    text = str(caught.value)
    assert text.startswith(f"cannot use the queue database: {says}")
    for secret in ("no_such", "idle_role", "locked", str(pg_server.socket_dir)):
        assert secret not in text
    assert caught.value.__cause__ is None


@pytest.mark.parametrize("dsn", ["host=x y s3cret", "postgresql://%zz@h/s3cret"])
def test_a_malformed_connection_string_is_said_apart_and_not_quoted(dsn: str) -> None:
    with pytest.raises(QueueError) as caught:
        PostgresQueue(dsn)
    assert str(caught.value) == (
        "cannot use the queue database: the connection string is not valid"
    )
    assert caught.value.__cause__ is None


def test_a_payload_postgresql_cannot_hold_is_refused_before_anything_is_written(
    open_queue,
) -> None:
    queue = open_queue()
    with pytest.raises(ValueError, match="NUL"):
        queue.enqueue(["fine", "nul\0inside"])
    assert queue.stats()["pending"] == 0


def test_ack_and_lease_leases_nothing_when_the_ack_fails(open_queue) -> None:
    queue = open_queue()
    queue.enqueue(["a", "b", "c"])
    first = queue.lease("gen-a", LEASE_MS)
    assert first is not None
    second = queue.ack_and_lease(first, "gen-a", LEASE_MS)
    assert second is not None
    assert second.payload == "b"
    with pytest.raises(LeaseLostError):
        queue.ack_and_lease(first, "gen-a", LEASE_MS)  # already done: nothing else leased
    assert queue.stats() == {"pending": 1, "in_flight": 1, "done": 1, "failed": 0}
    third = queue.ack_and_lease(second, "gen-a", LEASE_MS)
    assert third is not None
    assert third.payload == "c"
    assert queue.ack_and_lease(third, "gen-a", LEASE_MS) is None  # nothing was pending
    assert queue.stats() == {"pending": 0, "in_flight": 0, "done": 3, "failed": 0}
