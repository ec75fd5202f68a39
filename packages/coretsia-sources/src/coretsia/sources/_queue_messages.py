"""A message's moves between states, each one statement or one write transaction.

Every change that must be exclusive takes the writer lock before it reads: one
``UPDATE`` (which SQLite runs as a write transaction from its first step), or an explicit
``BEGIN IMMEDIATE`` transaction. So two workers never both see one message as pending.
``UPDATE ... RETURNING`` (SQLite 3.35, 2021) makes a lease or a failure one statement;
older builds read the row back in a ``BEGIN IMMEDIATE`` transaction instead.

Settling (``ack``, ``fail``, ``release``) changes a row only while it is still leased
with the caller's token: that check is what makes acknowledgement exactly-once.
Generation locks and wake-ups are the caller's (:class:`SqliteQueue`): this module only
talks to the database.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from typing import Final

from coretsia.sources._queue_connection import Connection
from coretsia.sources._queue_records import Message, lease_lost

MAX_ERROR_CHARS: Final = 2000
"""How much of a failure's description is kept in ``last_error``."""
INTERRUPTED: Final = "interrupted: its worker exited before settling it"
"""``last_error`` of a lease taken back by :meth:`SqliteQueue.recover` with a limit."""

_RETURNING: Final = sqlite3.sqlite_version_info >= (3, 35, 0)
"""``UPDATE ... RETURNING`` exists (SQLite 3.35, 2021); older builds use two statements."""
_LEASE_SET: Final = "state = 'leased', generation = ?, lease_token = ?, leased_at = ?"
_FAIL_SET: Final = (
    "attempts = attempts + 1, lease_token = NULL, "
    "state = CASE WHEN attempts + 1 >= ? THEN 'failed' ELSE 'pending' END, "
    "settled_at = CASE WHEN attempts + 1 >= ? THEN ? ELSE NULL END, last_error = ?"
)
"""One failed (or interrupted) attempt: the SET clause shared by ``fail`` and recovery."""
_HELD: Final = "WHERE id = ? AND state = 'leased' AND lease_token = ?"
"""The row of a lease that still holds: the condition of every settlement."""
_ACK: Final = f"UPDATE messages SET state = 'done', lease_token = NULL, settled_at = ? {_HELD}"
_OLDEST: Final = "SELECT id FROM messages WHERE state = 'pending' ORDER BY id LIMIT 1"


def enqueue(conn: Connection, payloads: Iterable[str]) -> int:
    """Insert the payloads (all or none, in order) durably; how many.

    The payloads are collected *before* the transaction: a slow iterator (a pipe being
    read) must not hold the writer lock while the workers wait for it.
    """
    batch = list(payloads)
    for payload in batch:
        if not isinstance(payload, str):
            raise TypeError("a payload must be a str")
        try:
            payload.encode("utf-8")  # a lone surrogate cannot be stored: refuse it here
        except UnicodeEncodeError:
            raise ValueError("a payload is not valid UTF-8 text") from None
    if not batch:
        return 0
    now = time.time()
    with conn.durable(), conn.transaction() as raw:
        raw.executemany(
            "INSERT INTO messages (payload, enqueued_at) VALUES (?, ?)",
            ((payload, now) for payload in batch),
        )
    return len(batch)


def lease(conn: Connection, generation: str) -> Message | None:
    """Lease the oldest pending message for ``generation``, or None if there is none.

    The cheap check outside the transaction (a WAL read, which never waits) keeps idle
    workers, all woken by one poke, from queueing up for the writer lock only to find
    nothing.
    """
    exists = "SELECT EXISTS (SELECT 1 FROM messages WHERE state = 'pending')"
    if not conn.rows(exists)[0][0]:
        return None
    token = os.urandom(16).hex()
    taken = (generation, token, time.time())
    if _RETURNING:
        rows = conn.rows(
            f"UPDATE messages SET {_LEASE_SET} WHERE id = ({_OLDEST}) "
            "RETURNING id, payload, attempts",
            taken,
        )
        row = rows[0] if rows else None
    else:  # pragma: no cover - SQLite older than 3.35
        with conn.transaction() as raw:
            row = _lease_locked(raw, taken)
    return None if row is None else _message(row, generation, token)


def ack_and_lease(conn: Connection, message: Message, generation: str) -> Message | None:
    """Acknowledge ``message`` and lease the next pending one in one write transaction."""
    token = os.urandom(16).hex()
    taken = (generation, token, time.time())
    with conn.transaction() as raw:
        if raw.execute(_ACK, (time.time(), message.id, message.token)).rowcount != 1:
            raise lease_lost(message)
        row = _lease_locked(raw, taken)
    return None if row is None else _message(row, generation, token)


def ack(conn: Connection, message: Message) -> None:
    """Mark ``message`` done if its lease still holds; else :class:`LeaseLostError`."""
    if conn.changed(_ACK, (time.time(), message.id, message.token)) != 1:
        raise lease_lost(message)


def release(conn: Connection, message: Message) -> bool:
    """Put ``message`` back to pending, no attempt counted, if its lease still holds."""
    changed = conn.changed(
        "UPDATE messages SET state = 'pending', lease_token = NULL, generation = NULL, "
        f"leased_at = NULL {_HELD}",
        (message.id, message.token),
    )
    return changed == 1


def fail(conn: Connection, message: Message, max_attempts: int, error: str | None) -> str:
    """Count a failed attempt if the lease still holds; the new state (pending or failed)."""
    check_max_attempts(max_attempts)
    clipped = None if error is None else error[:MAX_ERROR_CHARS]
    params = (max_attempts, max_attempts, time.time(), clipped, message.id, message.token)
    if _RETURNING:
        rows = conn.rows(f"UPDATE messages SET {_FAIL_SET} {_HELD} RETURNING state", params)
    else:  # pragma: no cover - SQLite older than 3.35
        with conn.transaction() as raw:
            changed = raw.execute(f"UPDATE messages SET {_FAIL_SET} {_HELD}", params).rowcount
            rows = raw.execute("SELECT state FROM messages WHERE id = ?", (message.id,)).fetchall()[
                :changed
            ]
    if not rows:
        raise lease_lost(message)
    return str(rows[0][0])


def leased_generations(conn: Connection, current_generation: str) -> list[str | None]:
    """The generations other than ``current_generation`` that hold leases (a read)."""
    rows = conn.rows(
        "SELECT DISTINCT generation FROM messages WHERE state = 'leased' AND generation IS NOT ?",
        (current_generation,),
    )
    return [None if row[0] is None else str(row[0]) for row in rows]


def end_leases(
    conn: Connection, generations: Iterable[str | None], max_attempts: int | None
) -> int:
    """Put the leases of ``generations`` back (one transaction); how many.

    With ``max_attempts``, each counts as a failed attempt (recorded as
    :data:`INTERRUPTED`), so a message that kills its worker every time ends ``failed``.
    """
    freed = 0
    with conn.transaction() as raw:
        for generation in generations:
            if max_attempts is None:
                sql = "UPDATE messages SET state = 'pending', lease_token = NULL"
                params: tuple[object, ...] = (generation,)
            else:
                sql = f"UPDATE messages SET {_FAIL_SET}"
                params = (max_attempts, max_attempts, time.time(), INTERRUPTED, generation)
            freed += raw.execute(
                sql + " WHERE state = 'leased' AND generation IS ?", params
            ).rowcount
    return freed


def check_max_attempts(max_attempts: int) -> None:
    """Refuse anything but an int of at least 1 (``True`` is an int to ``isinstance``)."""
    if type(max_attempts) is not int or max_attempts < 1:
        raise ValueError("max_attempts must be an integer of at least 1")


def _lease_locked(
    raw: sqlite3.Connection, taken: tuple[str, str, float]
) -> tuple[object, ...] | None:
    """Lease the oldest pending message inside a write transaction already begun."""
    row: tuple[object, ...] | None = raw.execute(
        f"SELECT id, payload, attempts FROM messages WHERE id = ({_OLDEST})"
    ).fetchone()
    if row is not None:
        raw.execute(f"UPDATE messages SET {_LEASE_SET} WHERE id = ?", (*taken, row[0]))
    return row


def _message(row: tuple[object, ...], generation: str, token: str) -> Message:
    message_id, payload, attempts = row
    assert isinstance(message_id, int)
    assert isinstance(payload, str)
    assert isinstance(attempts, int)
    return Message(
        id=message_id, payload=payload, attempts=attempts, generation=generation, token=token
    )
