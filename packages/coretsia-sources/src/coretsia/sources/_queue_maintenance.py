"""An operator's view of the queue: counts, failed messages, retry and purge.

What the ``coretsia-queue`` commands run on an SQLite queue. Nothing here ever shows a payload
(application data, and this output ends up in terminals and tickets), and nothing holds
the writer lock for long: the workers share the same database meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

from coretsia.sources._queue_connection import Connection
from coretsia.sources._queue_records import FailedMessage, Retried

STATES: Final = ("pending", "in_flight", "done", "failed")
"""The keys of :meth:`SqliteQueue.stats`, in display order (``in_flight`` = leased)."""
PURGE_BATCH: Final = 500
"""Rows deleted per transaction by :func:`purge`: workers get the lock between."""


def stats(conn: Connection) -> dict[str, int]:
    """How many messages are in each state, keyed by :data:`STATES`."""
    counts = dict.fromkeys(STATES, 0)
    for state, count in conn.rows("SELECT state, count(*) FROM messages GROUP BY state"):
        assert isinstance(count, int)
        counts["in_flight" if state == "leased" else str(state)] = count
    return counts


def failed(conn: Connection) -> list[FailedMessage]:
    """The messages that failed for good, oldest id first (never their payloads)."""
    rows = conn.rows(
        "SELECT id, attempts, settled_at, last_error FROM messages "
        "WHERE state = 'failed' ORDER BY id"
    )
    return [
        FailedMessage(
            id=int(str(row[0])),
            attempts=int(str(row[1])),
            settled_at=None if row[2] is None else float(str(row[2])),
            last_error=None if row[3] is None else str(row[3]),
        )
        for row in rows
    ]


def retry(conn: Connection, ids: Iterable[int] | Literal["all"]) -> Retried:
    """Put failed messages back to pending, attempts reset; the others are only reported.

    Retrying a pending, leased or done message would run it again, so given ids are
    looked at one by one in one write transaction. ``last_error`` is kept (what the last
    attempt died of is still worth knowing).
    """
    reset = "UPDATE messages SET state = 'pending', attempts = 0, settled_at = NULL"
    if ids == "all":
        return Retried(conn.changed(f"{reset} WHERE state = 'failed'"), (), ())
    wanted = list(dict.fromkeys(ids))  # each once, in the caller's order
    for message_id in wanted:
        if type(message_id) is not int:
            raise TypeError("a message id must be an int")
    count = 0
    unknown: list[int] = []
    not_failed: list[int] = []
    with conn.transaction() as raw:
        for message_id in wanted:
            row = raw.execute("SELECT state FROM messages WHERE id = ?", (message_id,)).fetchone()
            if row is None:
                unknown.append(message_id)
            elif row[0] != "failed":
                not_failed.append(message_id)
            else:
                count += raw.execute(f"{reset} WHERE id = ?", (message_id,)).rowcount
    return Retried(count, tuple(unknown), tuple(not_failed))


def purge(conn: Connection, state: Literal["done", "failed"]) -> int:
    """Delete every settled message in ``state``, :data:`PURGE_BATCH` rows a transaction."""
    if state not in ("done", "failed"):
        raise ValueError("purge deletes 'done' or 'failed' messages only")
    deleted = 0
    batch = (
        "DELETE FROM messages WHERE id IN "
        f"(SELECT id FROM messages WHERE state = ? ORDER BY id LIMIT {PURGE_BATCH})"
    )
    while True:
        changed = conn.changed(batch, (state,))
        deleted += changed
        if changed < PURGE_BATCH:
            return deleted
