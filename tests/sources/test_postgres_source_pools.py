"""The ``postgres`` source in real pools: two roots (as two machines) on one queue, a pool
SIGKILLed whole, option errors, the secret dsn and a connection failure's kind (the server
restarted or stopped under a pool: test_postgres_outages.py).

Every pool is a real ``coretsia-supervisor start`` (guardian and worker interpreters); the
work is fed with the real ``coretsia-queue`` command through the server's socket.
"""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import psutil
import psycopg
import pytest
from commands import QUEUE_CLI, run_process
from pg_server import PgServer
from pools import (
    Supervisor,
    Supervisors,
    assert_failed,
    assert_start_refused,
    cli,
    install_app,
    wait_for,
    write_root,
)

LEASE_MS = 1000


def configure(root: Path, dsn: object, **options: object) -> Path:
    """A queue pool of two workers on the postgres source, its handler installed."""
    source_options = {
        "dsn": dsn,
        "handler": "pg_pool_app:handle",
        "lease_timeout_ms": LEASE_MS,
        **options,
    }
    write_root(
        root,
        task_type="queue",
        task_source="postgres",
        stop_timeout_ms=300,
        source_options=source_options,
    )
    install_app(root, "pg_pool_app.py")
    return root


def handled(root: Path) -> list[str]:
    path = root / "handled.log"
    return [line.split()[1] for line in path.read_text().splitlines()] if path.exists() else []


class Queue:
    """``coretsia-queue`` on the test's database, run as an operator would."""

    def __init__(self, command: str, url: str) -> None:
        self.command = command
        self.url = url

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        done = run_process([self.command, *args, "--db", self.url], stdin=stdin)
        assert (done.returncode, done.stderr) == (0, ""), done
        return done.stdout

    def stats(self) -> dict[str, int]:
        counts: dict[str, int] = json.loads(self("stats", "--json"))
        return counts


@pytest.fixture
def queue(pg_server: PgServer, pg_db: str) -> Queue:
    return Queue(QUEUE_CLI, pg_server.url(pg_db))


def kill_whole(supervisor: Supervisor) -> float:
    """SIGKILL the supervisor, the guardian and every worker at once, as a lost machine;
    when (``time.monotonic``) the signals were sent."""
    victims = [psutil.Process(supervisor.proc.pid), *supervisor.tree()]
    killed = time.monotonic()
    for victim in victims:
        try:
            victim.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    supervisor.proc.wait(timeout=10)
    psutil.wait_procs(victims, timeout=10)
    return killed


@pytest.mark.slow
def test_two_pools_drain_one_queue_each_message_once(
    short_roots: Callable[[], Path], supervisors: Supervisors, pg_dsn: str, queue: Queue
) -> None:
    first, second = configure(short_roots(), pg_dsn), configure(short_roots(), pg_dsn)
    pools = [supervisors.running(first), supervisors.running(second)]
    payloads = [f"job-{i}" for i in range(300)]
    assert queue("enqueue", stdin="\n".join(payloads) + "\n") == "enqueued 300\n"
    wait_for(lambda: queue.stats()["done"] == 300, 60)
    assert queue.stats() == {"pending": 0, "in_flight": 0, "done": 300, "failed": 0}
    assert sorted(handled(first) + handled(second)) == sorted(payloads)  # each ran once
    assert handled(first)
    assert handled(second)  # both pools took part
    for root, pool in zip((first, second), pools, strict=True):
        assert cli(root, "stop").returncode == 0
        assert pool.finish(30) == 0


@pytest.mark.slow
def test_a_pool_killed_whole_loses_nothing_and_acks_nothing_twice(
    short_roots: Callable[[], Path], supervisors: Supervisors, pg_dsn: str, queue: Queue
) -> None:
    """Its two in-flight messages are re-run by the other pool once their leases expire."""
    doomed, survivor = configure(short_roots(), pg_dsn), configure(short_roots(), pg_dsn)
    (doomed / "hang").touch()  # each of its workers blocks on the first message it takes
    lost = supervisors.running(doomed)
    wait_for(lambda: len(lost.workers()) == 2, 15)
    queue("enqueue", "held-1", "held-2")
    wait_for(lambda: sorted(handled(doomed)) == ["held-1", "held-2"], 15)
    supervisors.running(survivor)
    payloads = [f"job-{i}" for i in range(200)]
    queue("enqueue", stdin="\n".join(payloads) + "\n")
    wait_for(lambda: queue.stats()["done"] == 200, 60)
    assert queue.stats() == {"pending": 0, "in_flight": 2, "done": 200, "failed": 0}

    killed = kill_whole(lost)
    wait_for(lambda: queue.stats()["done"] == 202, 30)
    waited = time.monotonic() - killed
    assert waited > LEASE_MS / 1000 * 2 / 3  # not before the lease could have expired
    assert queue.stats() == {"pending": 0, "in_flight": 0, "done": 202, "failed": 0}
    assert Counter(handled(survivor)) == Counter([*payloads, "held-1", "held-2"])
    with psycopg.connect(pg_dsn) as conn:
        attempts = conn.execute(
            "SELECT payload, attempts, last_error FROM coretsia_queue_messages "
            "WHERE attempts > 0 ORDER BY payload"
        ).fetchall()
    interrupted = "interrupted: its worker exited before settling it"
    assert attempts == [("held-1", 1, interrupted), ("held-2", 1, interrupted)]


@pytest.mark.parametrize(
    ("options", "key", "rule"),
    [
        ({"queue": "no spaces"}, "queue", "not-one-of"),
        ({"lease_timeout_ms": 10}, "lease_timeout_ms", "out-of-range"),
        ({"dsn": 5432}, "dsn", "wrong-type"),
        ({"max_attempts": 0}, "max_attempts", "out-of-range"),
        ({"reconnect_timeout_ms": -1}, "reconnect_timeout_ms", "out-of-range"),
        ({"reconnect_timeout_ms": "30s"}, "reconnect_timeout_ms", "wrong-type"),
    ],
    ids=["queue", "lease-timeout", "dsn", "max-attempts", "reconnect-range", "reconnect-type"],
)
def test_a_broken_option_is_refused_at_start(
    root: Path, pg_dsn: str, options: dict[str, object], key: str, rule: str
) -> None:
    configure(root, **{"dsn": pg_dsn, **options})
    assert_start_refused(root, f"worker.source_options.{key}", rule)


def test_the_dsn_never_appears_in_any_output(
    root: Path, supervisors: Supervisors, pg_server: PgServer
) -> None:
    secret = "s3cretpw"
    dsn = f"{pg_server.dsn('missing_db_s3cret')} password={secret}"
    configure(root, dsn)
    pool = supervisors(root, "--log-format", "json")
    assert_failed(
        pool,
        root,
        "CORETSIA_WORKER_START_FAILED: worker-task-source-not-ready (source missing-database)",
    )
    (failed,) = [entry for entry in pool.logs if entry["event"] == "pool.failed"]
    assert failed["fault"] == "missing-database"
    assert secret not in pool.stdout + pool.stderr
    # The frozen generation carries the options to the workers: private, like the config.
    frozen = {p for p in root.glob("var/generations/*/generation.json")}
    assert frozen
    assert {p.stat().st_mode & 0o777 for p in frozen} == {0o600}
    written = [p for p in root.rglob("*") if p.is_file() and p.name != "coretsia.toml"]
    assert [p for p in written if p not in frozen and secret.encode() in p.read_bytes()] == []

    url = f"postgresql://coretsia:{secret}@/missing_db_s3cret?host={pg_server.socket_dir}"
    for args in (["stats", "--json"], ["enqueue", "x"], ["failed"]):
        done = run_process([QUEUE_CLI, *args, "--db", url])
        assert done.returncode == 1
        assert secret not in done.stdout + done.stderr
        assert done.stderr == (
            "coretsia-queue: error: cannot use the queue database: the database does not exist\n"
        )
    refused = run_process([QUEUE_CLI, "stats", "--db", f"mysql://{secret}@host/db"])
    assert refused.returncode == 2
    assert secret not in refused.stdout + refused.stderr


def test_a_wrong_role_is_said_at_start(
    root: Path, supervisors: Supervisors, pg_server: PgServer
) -> None:
    """The kind of a connection failure is the token's detail, even without debug."""
    configure(root, f"host={pg_server.socket_dir} dbname=postgres user=no_such_role")
    assert_failed(
        supervisors(root),
        root,
        "CORETSIA_WORKER_START_FAILED: worker-task-source-not-ready (source authentication)",
    )
