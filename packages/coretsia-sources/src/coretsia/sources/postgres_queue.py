"""A durable queue in PostgreSQL, shared by the workers of any number of pools and machines.

One table holds every queue (a ``queue`` column names it). A message moves through the
same four states as in the SQLite queue (``pending``, ``leased``, ``done``, ``failed``),
with the same guarantees: executed at least once, acknowledged exactly once (each lease
carries a random token, and a settlement changes the row only while it is still leased
with it), retried until ``max_attempts``, then failed.

**Claims** are one ``UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED)``: no
worker waits behind another's claim, and two never take one message.

**Leases expire.** A pool may run on a machine that is lost whole, so liveness cannot be
asked of a local kernel as the SQLite queue does with ``flock``. Each lease carries its
generation and an expiry (the server's clock plus ``lease_timeout_ms``); the worker that
holds it renews it while the task runs (``renew``, from the source's heartbeat thread),
and a lease whose expiry has passed is taken back (``recover``), counted as an interrupted
attempt. So a dead pool's leases come back after the lease timeout, and a live pool's
never do while its heartbeat reaches the server. Times are the server's: the workers'
clocks never matter.

**Waking.** ``enqueue`` (and ``recover`` or ``retry`` when they make messages pending)
sends ``NOTIFY`` on the queue's channel in the same transaction, so the notification is
delivered at commit or never. A waiting worker ``LISTEN``\\ s before it looks at the
queue (no lost wake-up) and waits on its connection's descriptor and the pool's stop
descriptor together (:mod:`coretsia.sources.postgres_source`).

**Errors** are :class:`~coretsia.sources.sqlite_queue.QueueError`, with a fixed message
and the SQLSTATE at most: a libpq message can name the host, the socket path, the user or
the database, and the connection string itself is a secret (it may hold a password).
Neither is ever in an error, a log line or a traceback raised from here.

**Layout.** This module is the queue's face and its message moves; the connection and its
errors (``_pg_connection``), the tables and migrations (``_pg_schema``) and an operator's
tools (``_pg_maintenance``) have modules of their own.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Final, Literal

import psycopg
from psycopg import sql

from coretsia.sources import _pg_maintenance as maintenance
from coretsia.sources import _pg_schema as schema
from coretsia.sources._pg_connection import connect, database_errors, notify
from coretsia.sources._pg_names import DEFAULT_QUEUE, MAX_QUEUE_NAME, valid_queue_name
from coretsia.sources._pg_schema import MESSAGES, Connection
from coretsia.sources._queue_messages import INTERRUPTED, MAX_ERROR_CHARS, check_max_attempts
from coretsia.sources._queue_records import (
    FailedMessage,
    Message,
    QueueSchemaError,
    Retried,
    lease_lost,
)

_MS: Final = "%(timeout)s * interval '1 millisecond'"
_FAIL_SET: Final = (
    "attempts = attempts + 1, lease_token = NULL, lease_expires_at = NULL, "
    "state = CASE WHEN attempts + 1 >= %(max)s THEN 'failed' ELSE 'pending' END, "
    "settled_at = CASE WHEN attempts + 1 >= %(max)s THEN now() END, last_error = %(error)s"
)
"""One failed (or interrupted) attempt: the SET clause shared by ``fail`` and ``recover``."""
_HELD: Final = "id = %(id)s AND state = 'leased' AND lease_token = %(token)s"
"""The row of a lease that still holds: the condition of every settlement."""
_ACK: Final = (
    f"UPDATE {MESSAGES} SET state = 'done', lease_token = NULL, lease_expires_at = NULL, "
    "settled_at = now()"
)
_LEASE: Final = (
    f"UPDATE {MESSAGES} SET state = 'leased', generation = %(generation)s, "
    f"lease_token = %(token)s, leased_at = now(), lease_expires_at = clock_timestamp() + {_MS}"
)
_OLDEST: Final = (
    f"SELECT id FROM {MESSAGES} WHERE queue = %(queue)s AND state = 'pending' "
    "ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
)
_ACK_AND_LEASE: Final = (
    f"WITH acked AS ({_ACK} WHERE id = %(id)s AND state = 'leased' AND lease_token = %(held)s "
    f"RETURNING id), next AS (SELECT id FROM {MESSAGES} WHERE EXISTS (SELECT 1 FROM acked) "
    "AND queue = %(queue)s AND state = 'pending' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED), "
    f"leased AS ({_LEASE} FROM next WHERE {MESSAGES}.id = next.id "
    f"RETURNING {MESSAGES}.id, {MESSAGES}.payload, {MESSAGES}.attempts) "
    "SELECT (SELECT count(*) FROM acked), leased.* FROM (SELECT 1) AS one "
    "LEFT JOIN leased ON true"
)
"""The acknowledgement of one lease and the lease of the next message, in one statement;
nothing is leased unless the acknowledgement changed its row."""


class PostgresQueue:
    """One connection to the queue ``queue`` in the PostgreSQL database ``dsn``.

    ``dsn`` is a libpq connection string or URI; None or ``""`` means libpq's defaults (the
    ``PG*`` environment variables). ``create`` (the default) creates or upgrades the schema
    on first use; with ``create=False`` a database without it is a :class:`QueueError`.
    The connection is in autocommit mode: each method is one statement or one explicit
    transaction. Not thread-safe: a thread that needs the queue opens its own.
    """

    def __init__(self, dsn: str | None, queue: str = DEFAULT_QUEUE, *, create: bool = True) -> None:
        if not valid_queue_name(queue):
            raise ValueError(f"a queue name is 1 to {MAX_QUEUE_NAME} of A-Z a-z 0-9 _ . -")
        self.queue = queue
        self.channel = f"coretsia_queue.{queue}"
        self._listening = False
        self.poked = False
        """Set when a notification arrived during a statement (cleared by the waiter)."""
        self._conn: Connection = connect(dsn)
        try:
            with database_errors():
                schema.ensure_schema(self._conn, create=create)
        except BaseException:
            self._conn.close()
            raise

    def close(self) -> None:
        """Close the connection; idempotent."""
        self._conn.close()

    def __enter__(self) -> PostgresQueue:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def check(self) -> None:
        """Raise :class:`QueueError` unless the server answers and holds our schema."""
        with database_errors():
            if schema.schema_version(self._conn) != schema.SCHEMA_VERSION:
                raise QueueSchemaError("the database holds no queue of this version")

    def verify(self) -> None:
        """``coretsia-queue check``: the schema check (the server keeps its own storage
        sound; ``amcheck`` is the tool for that, with a superuser's rights)."""
        self.check()

    # -- producing and operating ---------------------------------------------------------

    def enqueue(self, payloads: Iterable[str]) -> int:
        """Add messages (all or none, in order) and wake the waiting workers; the count.

        The payloads are all read and checked before the transaction begins; they are
        copied in with ``COPY`` (one round trip for the batch).
        """
        batch = list(payloads)
        for payload in batch:
            if not isinstance(payload, str):
                raise TypeError("a payload must be a str")
            try:
                payload.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("a payload is not valid UTF-8 text") from None
            if "\0" in payload:
                raise ValueError("a payload cannot hold a NUL character (PostgreSQL text)")
        if not batch:
            return 0
        with database_errors(), self._conn.transaction():
            with self._conn.cursor().copy(f"COPY {MESSAGES} (queue, payload) FROM STDIN") as copy:
                for payload in batch:
                    copy.write_row((self.queue, payload))
            self._notify()
        return len(batch)

    def stats(self) -> dict[str, int]:
        """How many messages of this queue are in each state (``in_flight`` = leased)."""
        return maintenance.stats(self._conn, self.queue)

    def failed(self) -> list[FailedMessage]:
        """The messages that failed for good, oldest id first (never their payloads)."""
        return maintenance.failed(self._conn, self.queue)

    def retry(self, ids: Iterable[int] | Literal["all"]) -> Retried:
        """Put failed messages back to pending, attempts reset; the others only reported."""
        return maintenance.retry(self._conn, self.queue, self.channel, ids)

    def purge(self, state: Literal["done", "failed"]) -> int:
        """Delete every settled message in ``state``, a few hundred rows at a time."""
        return maintenance.purge(self._conn, self.queue, state)

    # -- consuming -----------------------------------------------------------------------

    def lease(self, generation: str, lease_timeout_ms: int) -> Message | None:
        """Lease the oldest pending message for ``generation``, or None if there is none."""
        token = os.urandom(16).hex()
        with database_errors():
            row = self._conn.execute(
                f"{_LEASE} WHERE id = ({_OLDEST}) RETURNING id, payload, attempts",
                self._lease_params(generation, token, lease_timeout_ms),
            ).fetchone()
        return None if row is None else _message(row, generation, token)

    def ack_and_lease(
        self, message: Message, generation: str, lease_timeout_ms: int
    ) -> Message | None:
        """:meth:`ack` ``message`` and lease the next pending one, in one statement.

        One round trip per task instead of two. Nothing is leased when the acknowledgement
        fails (:class:`LeaseLostError`); None when nothing was pending.
        """
        token = os.urandom(16).hex()
        params = {
            **self._lease_params(generation, token, lease_timeout_ms),
            "id": message.id,
            "held": message.token,
        }
        with database_errors():
            row = self._conn.execute(
                _ACK_AND_LEASE,
                params,
            ).fetchone()
        if row is None or row[0] != 1:
            raise lease_lost(message)
        return None if row[1] is None else _message(row[1:], generation, token)

    def release(self, message: Message) -> bool:
        """Give a leased message back, never run: pending again, no attempt counted.

        For a message leased ahead that its worker will not run (it is stopping). False if
        the lease no longer held. Wakes the waiting workers.
        """
        with database_errors(), self._conn.transaction():
            changed = self._conn.execute(
                f"UPDATE {MESSAGES} SET state = 'pending', lease_token = NULL, "
                f"lease_expires_at = NULL, generation = NULL, leased_at = NULL WHERE {_HELD}",
                {"id": message.id, "token": message.token},
            ).rowcount
            if changed:
                self._notify()
        return changed == 1

    def _lease_params(self, generation: str, token: str, timeout_ms: int) -> dict[str, object]:
        """The parameters of :data:`_LEASE` and :data:`_OLDEST`."""
        queue = self.queue
        return {"generation": generation, "token": token, "timeout": timeout_ms, "queue": queue}

    def ack(self, message: Message) -> None:
        """Mark ``message`` done; :class:`LeaseLostError` if this lease no longer holds."""
        with database_errors():
            changed = self._conn.execute(
                f"{_ACK} WHERE {_HELD}", {"id": message.id, "token": message.token}
            ).rowcount
        if changed != 1:
            raise lease_lost(message)

    def fail(self, message: Message, max_attempts: int, *, error: str | None = None) -> str:
        """Count a failed attempt if the lease still holds; the new state."""
        check_max_attempts(max_attempts)
        params = {
            "max": max_attempts,
            "error": None if error is None else error[:MAX_ERROR_CHARS],
            "id": message.id,
            "token": message.token,
        }
        with database_errors():
            row = self._conn.execute(
                f"UPDATE {MESSAGES} SET {_FAIL_SET} WHERE {_HELD} RETURNING state", params
            ).fetchone()
        if row is None:
            raise lease_lost(message)
        return str(row[0])

    def renew(self, tokens: Iterable[str], lease_timeout_ms: int) -> int:
        """Push the expiry of these leases (still held) ``lease_timeout_ms`` ahead; how many."""
        with database_errors():
            return self._conn.execute(
                f"UPDATE {MESSAGES} SET lease_expires_at = clock_timestamp() + {_MS} "
                "WHERE state = 'leased' AND lease_token = ANY(%(tokens)s)",
                {"timeout": lease_timeout_ms, "tokens": list(tokens)},
            ).rowcount

    def recover(self, max_attempts: int) -> int:
        """Take back every expired lease of this queue, as an interrupted attempt; how many.

        Rows locked by a renewal or a settlement in progress are skipped (they are alive).
        Wakes the waiting workers when something became pending.
        """
        check_max_attempts(max_attempts)
        with database_errors(), self._conn.transaction():
            row = self._conn.execute(
                f"WITH expired AS (SELECT id FROM {MESSAGES} WHERE queue = %(queue)s "
                "AND state = 'leased' AND lease_expires_at < clock_timestamp() "
                "FOR UPDATE SKIP LOCKED), "
                f"taken AS (UPDATE {MESSAGES} m SET {_FAIL_SET} FROM expired "
                "WHERE m.id = expired.id RETURNING m.state) "
                "SELECT count(*), count(*) FILTER (WHERE state = 'pending') FROM taken",
                {"queue": self.queue, "max": max_attempts, "error": INTERRUPTED},
            ).fetchone()
            taken, pending = (0, 0) if row is None else (int(row[0]), int(row[1]))
            if pending:
                self._notify()
        return taken

    def next_expiry(self) -> float | None:
        """Seconds until the first lease of this queue expires (0 if one has); None if none."""
        with database_errors():
            row = self._conn.execute(
                "SELECT extract(epoch FROM min(lease_expires_at) - clock_timestamp())::float8 "
                f"FROM {MESSAGES} WHERE queue = %s AND state = 'leased'",
                (self.queue,),
            ).fetchone()
        return None if row is None or row[0] is None else max(0.0, float(row[0]))

    def listen(self) -> int:
        """``LISTEN`` on the queue's channel (once); the connection's descriptor to wait on.

        A notification read while a statement runs sets :attr:`poked`; one that arrives
        while the worker waits makes the descriptor readable, and the next statement
        reads it (and sets :attr:`poked` again, which only costs one more look).
        """
        if not self._listening:
            with database_errors():
                self._conn.add_notify_handler(self._poke)
                self._conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
            self._listening = True
        return self._conn.fileno()

    def _poke(self, _notification: psycopg.Notify) -> None:
        self.poked = True

    def _notify(self) -> None:
        """Wake this queue's listeners at commit (called inside the transaction)."""
        notify(self._conn, self.channel)


def _message(row: tuple[object, ...], generation: str, token: str) -> Message:
    message_id, payload, attempts = row
    return Message(
        id=int(str(message_id)),
        payload=str(payload),
        attempts=int(str(attempts)),
        generation=generation,
        token=token,
    )
