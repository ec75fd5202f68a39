"""The queue's table, and how a file is recognised as a queue: ``application_id``, version.

Opening reads the schema in a read transaction (WAL readers never wait for the writer),
so a booting worker takes the writer lock only for a file still empty. A file that is not
ours is refused before anything in it changes.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from coretsia.sources._queue_connection import Connection
from coretsia.sources._queue_health import queue_error
from coretsia.sources._queue_records import QueueCorruptError, QueueSchemaError

APPLICATION_ID: Final = 0x43525451
"""``PRAGMA application_id`` of a queue file ("CRTQ"): tells a queue from any other DB."""
SCHEMA_VERSION: Final = 1
"""``PRAGMA user_version`` of the schema below."""

_SCHEMA: Final = """
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    payload TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'leased', 'done', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    generation TEXT,
    lease_token TEXT,
    enqueued_at REAL NOT NULL,
    leased_at REAL,
    settled_at REAL,
    last_error TEXT,
    CHECK ((state = 'leased') = (lease_token IS NOT NULL))
);
CREATE INDEX messages_state_id ON messages (state, id);
"""


def ensure_schema(conn: Connection, *, create: bool) -> None:
    """Accept our schema (read only), create it in an empty file, refuse anything else."""
    try:
        if conn.retrying(lambda: _read_schema(conn, create=create)):
            return
        with conn.transaction() as raw:  # an empty file: look again, now as the only writer
            if _read_schema(conn, create=create):
                return
            # Statement by statement: executescript() would COMMIT our transaction first.
            for statement in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                raw.execute(statement)
            raw.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except sqlite3.Error as error:
        raise queue_error(error, "cannot use the queue database", conn.path) from error


def _read_schema(conn: Connection, *, create: bool) -> bool:
    """True for our schema, False for an empty file we may fill; else QueueSchemaError."""
    with conn.transaction(write=False) as raw:  # nested (a no-op) inside ensure_schema's
        application_id = conn.pragma("application_id")
        if application_id == APPLICATION_ID:
            version = conn.pragma("user_version")
            if version != SCHEMA_VERSION:
                raise QueueSchemaError(
                    f"the queue database has schema version {version}, "
                    f"this package reads version {SCHEMA_VERSION}"
                )
            return True
        tables = raw.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if application_id != 0 or tables != 0 or not create:
            raise QueueSchemaError("the file is not a Coretsia queue database")
        return False


def check(conn: Connection) -> None:
    """Raise :class:`QueueError` unless the database answers and holds our schema."""
    try:
        conn.retrying(lambda: _check_once(conn))
    except sqlite3.Error as error:
        raise queue_error(error, "cannot use the queue database", conn.path) from error


def _check_once(conn: Connection) -> None:
    with conn.transaction(write=False) as raw:
        if conn.pragma("application_id") != APPLICATION_ID:
            raise QueueSchemaError("the file is not a Coretsia queue database")
        if conn.pragma("user_version") != SCHEMA_VERSION:
            raise QueueSchemaError("the queue database has another schema version")
        raw.execute("SELECT count(*) FROM messages WHERE 0").fetchone()


def check_integrity(conn: Connection, *, thorough: bool) -> None:
    """Raise :class:`QueueCorruptError` unless SQLite's own check finds the file sound.

    ``PRAGMA quick_check`` (``thorough=False``) reads every page and checks the b-trees'
    structure, in a time linear in the file's size. ``PRAGMA integrity_check`` also
    checks that each index matches its table (both measured:
    ``docs/performance.md#timings-the-code-refers-to``). Either is a read: workers go on meanwhile.
    """
    pragma = "integrity_check" if thorough else "quick_check"
    try:
        rows = conn.rows(f"PRAGMA {pragma}")
    except sqlite3.Error as error:
        raise queue_error(error, "the integrity check failed", conn.path) from error
    if rows != [("ok",)]:
        problems = sum(len(str(row[0]).splitlines()) for row in rows)
        raise QueueCorruptError(f"SQLite's {pragma} found {problems} problems")
