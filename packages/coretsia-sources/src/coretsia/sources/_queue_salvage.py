"""Saving what can still be read of a damaged SQLite queue into a new file: ``recover``.

SQLite's own salvage (the shell's ``.recover``, built on an extension Python's
:mod:`sqlite3` does not ship) is not at hand, so this reads the damaged file the plain
way: message ids in ranges of :data:`CHUNK`, and one by one inside a range that fails to
read. A row whose table page is damaged cannot be read: SQLite raises
``SQLITE_CORRUPT``, or the damaged page simply does not lead to it. Its message is lost,
and its id is reported as unreadable when something still names it: the read raised, or
the index on ``(state, id)``, kept apart from the table, lists it. Every other row is
copied whole (id, state, attempts, ``last_error``...) into a new queue file, in one
transaction.

What this cannot see: SQLite keeps no checksums, so a payload whose bytes were changed
but still read as text is copied as it is (the ``CHECK`` constraints of the new table
refuse a row whose state or counters make no sense, and it is counted unreadable).
The damaged file is opened read-only and never changed.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import urllib.parse
from typing import Final

import attrs

from coretsia.sources._queue_connection import Connection
from coretsia.sources._queue_maintenance import STATES
from coretsia.sources._queue_records import QueueCorruptError, QueueError

CHUNK: Final = 500
"""Ids read per range query; a range that fails is read again one id at a time."""
_COLUMNS: Final = (
    "id, payload, state, attempts, generation, lease_token, enqueued_at, leased_at, "
    "settled_at, last_error"
)
_INSERT: Final = f"INSERT INTO messages ({_COLUMNS}) VALUES ({', '.join('?' * 10)})"
_HIGHEST: Final = (
    "SELECT seq FROM sqlite_sequence WHERE name = 'messages'",
    "SELECT max(id) FROM messages",
    "SELECT max(id) FROM messages INDEXED BY messages_state_id",
)
"""Where the highest id ever given can be read: any one of them may sit on a bad page."""

Row = tuple[object, ...]


@attrs.frozen
class Salvaged:
    """What ``recover`` copied, by state (:data:`STATES`), and the ids it could not read."""

    saved: dict[str, int]
    unreadable: list[int]


def salvage(damaged: str, target: str) -> Salvaged:
    """Copy every readable message of ``damaged`` into the new queue file ``target``.

    ``target`` must not exist (ids are kept: merging into a live queue would clash). It is
    created as ``enqueue`` creates a queue (private, with the schema).
    """
    # deferred: import cycle
    from coretsia.sources.sqlite_queue import SqliteQueue

    if os.path.lexists(target):
        raise QueueError("the new queue file exists already: give a path that does not")
    with contextlib.closing(_open_read_only(damaged)) as old:
        rows, unreadable = _readable_rows(old, _highest_id(old))
        read = {row[0] for row in rows}
        unreadable += [known for known in _indexed_ids(old) if known not in read]
        SqliteQueue(target).close()
        new = Connection(target, busy_timeout=10.0, synchronous="FULL")
        saved = dict.fromkeys(STATES, 0)
        try:
            with new.transaction() as raw:
                for row in rows:
                    try:
                        raw.execute(_INSERT, row)
                    except sqlite3.IntegrityError:  # a row damaged into nonsense
                        unreadable.append(int(str(row[0])))
                    else:
                        saved["in_flight" if row[2] == "leased" else str(row[2])] += 1
        finally:
            new.close()
    return Salvaged(saved, sorted(set(unreadable)))


def _open_read_only(path: str) -> sqlite3.Connection:
    """``path`` read-only (``mode=ro``): the damaged file is evidence, never written."""
    if not os.path.isfile(path):
        raise QueueError("the queue database does not exist")
    uri = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"
    try:
        return sqlite3.connect(uri, uri=True, isolation_level=None)
    except sqlite3.Error as error:
        raise QueueError(f"cannot open the queue database: {error}") from error


def _highest_id(conn: sqlite3.Connection) -> int:
    found: list[int] = []
    for sql in _HIGHEST:
        with contextlib.suppress(sqlite3.Error):
            row = conn.execute(sql).fetchone()
            if row is not None and isinstance(row[0], int):
                found.append(row[0])
    if not found:
        raise QueueCorruptError("no message id can be read: nothing can be saved")
    return max(found)


def _indexed_ids(conn: sqlite3.Connection) -> list[int]:
    """The ids the index lists (a read of the index alone), or none if it cannot be read."""
    try:
        rows = conn.execute("SELECT id FROM messages INDEXED BY messages_state_id").fetchall()
    except sqlite3.Error:
        return []
    return [row[0] for row in rows if isinstance(row[0], int)]


def _readable_rows(conn: sqlite3.Connection, highest: int) -> tuple[list[Row], list[int]]:
    """Every readable row in id order, and the ids that raised or read as nonsense.

    A row whose id is outside the range asked for was made up by a damaged page (its
    cells decoded as rows): it is no message, and is left out.
    """
    rows: list[Row] = []
    unreadable: list[int] = []
    for low in range(1, highest + 1, CHUNK):
        high = min(low + CHUNK - 1, highest)
        try:
            chunk = conn.execute(
                f"SELECT {_COLUMNS} FROM messages WHERE id BETWEEN ? AND ? ORDER BY id",
                (low, high),
            ).fetchall()
        except sqlite3.Error:
            chunk = []
            for message_id in range(low, high + 1):
                try:
                    chunk += conn.execute(
                        f"SELECT {_COLUMNS} FROM messages WHERE id = ?", (message_id,)
                    ).fetchall()
                except sqlite3.Error:
                    unreadable.append(message_id)
        for row in chunk:
            message_id = row[0]
            if not isinstance(message_id, int) or not low <= message_id <= high:
                continue
            if isinstance(row[1], str):
                rows.append(row)
            else:
                unreadable.append(message_id)
    return rows, unreadable
