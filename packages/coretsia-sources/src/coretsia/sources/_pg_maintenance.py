"""An operator's view of a PostgreSQL queue: counts, failed messages, retry and purge.

What ``coretsia-queue`` runs (through :class:`~coretsia.sources.postgres_queue.PostgresQueue`);
nothing here shows a payload, and a purge deletes in small batches so that the workers
sharing the table are never held up for long.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

from coretsia.sources._pg_connection import database_errors, notify
from coretsia.sources._pg_schema import MESSAGES, Connection
from coretsia.sources._queue_maintenance import STATES
from coretsia.sources._queue_records import FailedMessage, Retried

PURGE_BATCH: Final = 500
"""Rows deleted per transaction by :meth:`PostgresQueue.purge`."""


def stats(conn: Connection, queue: str) -> dict[str, int]:
    """How many messages of this queue are in each state (``in_flight`` = leased)."""
    counts = dict.fromkeys(STATES, 0)
    with database_errors():
        rows = conn.execute(
            f"SELECT state, count(*) FROM {MESSAGES} WHERE queue = %s GROUP BY state",
            (queue,),
        ).fetchall()
    for state, count in rows:
        counts["in_flight" if state == "leased" else str(state)] = int(count)
    return counts


def failed(conn: Connection, queue: str) -> list[FailedMessage]:
    """The messages that failed for good, oldest id first (never their payloads)."""
    with database_errors():
        rows = conn.execute(
            "SELECT id, attempts, extract(epoch FROM settled_at)::float8, last_error "
            f"FROM {MESSAGES} WHERE queue = %s AND state = 'failed' ORDER BY id",
            (queue,),
        ).fetchall()
    return [
        FailedMessage(id=int(i), attempts=int(a), settled_at=t, last_error=e) for i, a, t, e in rows
    ]


def retry(
    conn: Connection, queue: str, channel: str, ids: Iterable[int] | Literal["all"]
) -> Retried:
    """Put failed messages back to pending, attempts reset; the others only reported."""
    reset = f"UPDATE {MESSAGES} SET state = 'pending', attempts = 0, settled_at = NULL"
    unknown: list[int] = []
    not_failed: list[int] = []
    count = 0
    with database_errors(), conn.transaction():
        if ids == "all":
            count = conn.execute(
                f"{reset} WHERE queue = %s AND state = 'failed'", (queue,)
            ).rowcount
        else:
            for message_id in dict.fromkeys(ids):
                if type(message_id) is not int:
                    raise TypeError("a message id must be an int")
                row = conn.execute(
                    f"SELECT state FROM {MESSAGES} WHERE id = %s AND queue = %s FOR UPDATE",
                    (message_id, queue),
                ).fetchone()
                if row is None:
                    unknown.append(message_id)
                elif row[0] != "failed":
                    not_failed.append(message_id)
                else:
                    reset_one = f"{reset} WHERE id = %s"
                    count += conn.execute(reset_one, (message_id,)).rowcount
        if count:
            notify(conn, channel)
    return Retried(count, tuple(unknown), tuple(not_failed))


def purge(conn: Connection, queue: str, state: Literal["done", "failed"]) -> int:
    """Delete every settled message in ``state``, :data:`PURGE_BATCH` rows at a time."""
    if state not in ("done", "failed"):
        raise ValueError("purge deletes 'done' or 'failed' messages only")
    deleted = 0
    while True:
        with database_errors():
            changed = conn.execute(
                f"DELETE FROM {MESSAGES} WHERE id IN (SELECT id FROM {MESSAGES} "
                f"WHERE queue = %s AND state = %s ORDER BY id LIMIT {PURGE_BATCH})",
                (queue, state),
            ).rowcount
        deleted += changed
        if changed < PURGE_BATCH:
            return deleted
