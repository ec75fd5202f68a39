"""The ``postgres`` source rides out its server's outages: one source in-process (what it
reports, its lease kept or lost), then real pools draining 3,000 messages while the server
restarts or stops for 5 s, and a pool whose outage outlasts ``reconnect_timeout_ms``.

The server is this module's own (``own_pg_server``): stopping the session's would disturb
the other modules' tests.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, cast

import psycopg
import pytest
from commands import QUEUE_CLI, run_process
from fake_context import FakeContext
from pg_server import PgServer
from pools import (
    Supervisor,
    Supervisors,
    assert_failed,
    cli,
    install_app,
    wait_for,
    write_root,
)

from coretsia.sources._pg_connection import QueueUnavailableError
from coretsia.sources._pg_worker_source import MAX_RETRY_SECONDS, PostgresSource, PostgresTask
from coretsia.sources.postgres_queue import PostgresQueue
from coretsia.sources.postgres_source import make_source
from coretsia.worker_protocol.catalogue import SourceFault

# -- one source, in-process ----------------------------------------------------------------


@pytest.fixture
def reconnect_timeout_ms() -> int:
    """The source's option (a test parametrizes it to change it)."""
    return 30_000


@pytest.fixture
def source(
    own_pg_dsn: str, handlers: str, make_context: Callable[..., Any], reconnect_timeout_ms: int
) -> Iterator[PostgresSource]:
    """One source of the test's database (30 s leases), on a fake context that records
    what the source reports."""
    options = {"reconnect_timeout_ms": reconnect_timeout_ms}
    built = make_source(
        make_context({"dsn": own_pg_dsn, "handler": f"{handlers}:record", **options})
    )
    yield built
    built.close()


@pytest.fixture
def producer(own_pg_dsn: str) -> Iterator[Callable[[], PostgresQueue]]:
    """Open the queue as a producer would, after any restart (closed at the end)."""
    opened: list[PostgresQueue] = []

    def make() -> PostgresQueue:
        opened.append(PostgresQueue(own_pg_dsn))
        return opened[-1]

    yield make
    for queue in opened:
        queue.close()


def reports(source: PostgresSource) -> list[str]:
    """What the source reported to its (fake) context, in order."""
    return cast("FakeContext", source._context).reports


def received(source: PostgresSource, within: float = 10) -> PostgresTask | None:
    """The next task, or None if a stop had to be requested after ``within`` seconds."""
    timer = threading.Timer(within, source._context.stop)  # type: ignore[attr-defined]
    timer.start()
    try:
        return source.receive()
    finally:
        timer.cancel()


def test_an_idle_source_reconnects_after_a_restart_and_says_so(
    source: PostgresSource, producer, own_pg_server: PgServer
) -> None:
    own_pg_server.restart()
    producer().enqueue(["after"])
    task = received(source)
    assert task is not None
    assert task.message.payload == "after"
    task.complete(None)
    assert reports(source) == ["unavailable unreachable", "available"]


def test_a_task_held_through_a_restart_is_acknowledged_with_its_lease(
    source: PostgresSource, producer, own_pg_server: PgServer
) -> None:
    """Its lease (30 s) outlives the outage: the same lease settles it, once."""
    producer().enqueue(["held"])
    task = received(source)
    assert task is not None
    own_pg_server.restart()
    task.complete(None)
    assert producer().stats() == {"pending": 0, "in_flight": 0, "done": 1, "failed": 0}
    assert reports(source) == ["unavailable unreachable", "available"]


@pytest.mark.parametrize("settle", ["complete", "fail"])
def test_a_lease_taken_meanwhile_is_reported_and_not_settled_again(
    source: PostgresSource, producer, own_pg_server: PgServer, own_pg_dsn: str, settle: str
) -> None:
    """While the server was down, another worker took the message (its lease expired):
    the settlement after the return finds the lease gone, reports it, raises nothing."""
    producer().enqueue(["taken"])
    task = received(source)
    assert task is not None
    own_pg_server.restart()
    with psycopg.connect(own_pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE coretsia_queue_messages SET lease_token = 'another worker'")
    if settle == "complete":
        task.complete(None)
    else:
        task.fail(RuntimeError("boom"))
        assert task.retried is None  # not this worker's to know
    assert reports(source) == ["unavailable unreachable", "available", "lease-lost"]
    assert producer().stats() == {"pending": 0, "in_flight": 1, "done": 0, "failed": 0}


@pytest.mark.parametrize("reconnect_timeout_ms", [300])
def test_an_outage_past_the_reconnect_timeout_is_raised_with_its_fault(
    source: PostgresSource, own_pg_server: PgServer
) -> None:
    own_pg_server.stop()
    began = time.monotonic()
    with pytest.raises(QueueUnavailableError) as caught:
        source.receive()
    assert time.monotonic() - began >= 0.3
    assert caught.value.fault is SourceFault.UNREACHABLE
    assert reports(source) == ["unavailable unreachable"]


def test_a_stop_during_an_outage_ends_the_receive(
    source: PostgresSource, own_pg_server: PgServer
) -> None:
    own_pg_server.stop()
    assert received(source, within=0.3) is None
    assert reports(source) == ["unavailable unreachable"]


# -- real pools ------------------------------------------------------------------------------

WORKERS = 3
MESSAGES = 3000
LEASE_MS = 2000


def configure(root: Path, dsn: str, **options: object) -> Path:
    write_root(
        root,
        workers=WORKERS,
        task_type="queue",
        task_source="postgres",
        stop_timeout_ms=3000,
        source_options={
            "dsn": dsn,
            "handler": "pg_pool_app:handle",
            "lease_timeout_ms": LEASE_MS,
            **options,
        },
    )
    install_app(root, "pg_pool_app.py")
    return root


def handled(root: Path) -> list[tuple[str, float]]:
    """Each handler call: its payload and when (``time.monotonic``)."""
    path = root / "handled.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(words[1], float(words[2])) for words in (line.split() for line in lines)]


def stats(url: str) -> dict[str, int]:
    done = run_process([QUEUE_CLI, "stats", "--json", "--db", url])
    assert done.returncode == 0, done
    counts: dict[str, int] = json.loads(done.stdout)
    return counts


def drain(root: Path, own_pg_server: PgServer, dsn: str) -> str:
    """Enqueue the messages and wait for a tenth of them to be handled; the queue's URL."""
    url = own_pg_server.url(dsn.rpartition("dbname=")[2].split()[0])
    payloads = "".join(f"job-{i}\n" for i in range(MESSAGES))
    done = run_process([QUEUE_CLI, "enqueue", "--db", url], stdin=payloads)
    assert done.returncode == 0, done
    wait_for(lambda: len(handled(root)) >= MESSAGES // 10, 60)
    assert stats(url)["pending"] > 0  # the outage comes mid-drain
    return url


def assert_all_done_at_most_one_twice_per_worker(root: Path, url: str) -> None:
    wait_for(lambda: stats(url)["done"] == MESSAGES, 90)
    assert stats(url) == {"pending": 0, "in_flight": 0, "done": MESSAGES, "failed": 0}
    runs = Counter(payload for payload, _ in handled(root))
    assert set(runs) == {f"job-{i}" for i in range(MESSAGES)}
    twice = [payload for payload, count in runs.items() if count > 1]
    assert len(twice) <= WORKERS, twice
    assert max(runs.values()) <= 2


def events(supervisor_logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [entry for entry in supervisor_logs if entry["event"] == name]


DRAIN_ALONE = (
    "the outage must come mid-drain, which the test sees by polling while three workers "
    "drain; with other tests on the same cores the pool finished first (and work must "
    "resume within 1 s of the server's return)"
)


class Draining(NamedTuple):
    root: Path
    pool: Supervisor
    url: str


@pytest.fixture
def draining(
    short_root: Path, supervisors: Supervisors, own_pg_server: PgServer, own_pg_dsn: str
) -> Draining:
    """A pool of three workers, a tenth of the way through the messages."""
    root = configure(short_root, own_pg_dsn)
    pool = supervisors.running(root, "--log-format", "json")
    return Draining(root, pool, drain(root, own_pg_server, own_pg_dsn))


@pytest.mark.slow
@pytest.mark.serial(reason=DRAIN_ALONE)
def test_a_fast_restart_during_a_drain_is_ridden_out(
    draining: Draining, own_pg_server: PgServer
) -> None:
    root, pool, url = draining
    own_pg_server.restart()  # pg_ctl stop -m fast, then start
    assert_all_done_at_most_one_twice_per_worker(root, url)
    assert pool.proc.poll() is None  # the pool never exited
    assert cli(root, "stop").returncode == 0
    assert pool.finish(30) == 0
    assert events(pool.logs, "task_source.unavailable")
    assert len(events(pool.logs, "task_source.available")) == len(
        events(pool.logs, "task_source.unavailable")
    )


@pytest.mark.slow
@pytest.mark.serial(reason=DRAIN_ALONE)
def test_a_5_s_stop_during_a_drain_fails_health_and_work_resumes_within_1_s(
    draining: Draining, own_pg_server: PgServer
) -> None:
    root, pool, url = draining
    own_pg_server.stop()
    down = time.monotonic()

    def unavailable() -> bool:
        health = cli(root, "health", "--json")
        return health.returncode == 1 and (
            json.loads(health.stdout)["reason"] == "worker-task-source-unavailable"
        )

    wait_for(unavailable, 4)
    status = json.loads(cli(root, "status", "--json").stdout)
    assert status["ready_worker_count"] == WORKERS
    assert 1 <= status["reconnecting_worker_count"] <= WORKERS
    time.sleep(max(0.0, down + 5 - time.monotonic()))  # the outage's length, not a wait
    own_pg_server.start()
    back = time.monotonic()  # pg_ctl returned: the server accepts connections

    assert_all_done_at_most_one_twice_per_worker(root, url)
    resumed = min(at for _, at in handled(root) if at > down)
    # A worker tries again at most MAX_RETRY_SECONDS after the return; the bound leaves
    # the rest of the second to two busy cores.
    assert resumed - back < 1.0, resumed - back
    assert MAX_RETRY_SECONDS <= 0.5
    wait_for(lambda: cli(root, "health").returncode == 0, 10)
    assert "reconnecting_worker_count" not in json.loads(cli(root, "status", "--json").stdout)
    assert pool.proc.poll() is None
    assert cli(root, "stop").returncode == 0
    assert pool.finish(30) == 0
    unavailable_events = events(pool.logs, "task_source.unavailable")
    assert {entry["fault"] for entry in unavailable_events} == {"unreachable"}
    assert {entry["slot"] for entry in unavailable_events} == set(range(WORKERS))


def test_an_outage_past_reconnect_timeout_fails_the_pool_as_before(
    short_root: Path, supervisors: Supervisors, own_pg_server: PgServer, own_pg_dsn: str
) -> None:
    root = configure(short_root, own_pg_dsn, reconnect_timeout_ms=1000)
    pool = supervisors.running(root)
    # From before the stop: the workers lose their connections while it runs, and that is
    # when their reconnect_timeout_ms starts, so no sooner than a second after this.
    down = time.monotonic()
    own_pg_server.stop()
    assert_failed(
        pool,
        root,
        "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-task-source-receive-failed (source unreachable)",
    )
    assert time.monotonic() - down >= 1.0
