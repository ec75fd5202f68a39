"""The PostgreSQL queue's tables, created and upgraded through a migration table.

``coretsia_queue_migrations`` records each schema version applied; a release that changes
the schema adds a step to :data:`MIGRATIONS`, and the first process to open the database
applies what is missing, in one transaction, under a transaction-level advisory lock (so
two processes that start together never both apply a step, and nobody sees half a step).
A database whose recorded version is newer than this package knows is refused: an older
worker must not write rows a newer schema reads differently.

An up-to-date database costs one read: the lock and the DDL are taken only when a step is
missing.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from coretsia.sources._queue_records import QueueSchemaError

MESSAGES: Final = "coretsia_queue_messages"
MIGRATIONS_TABLE: Final = "coretsia_queue_migrations"
_LOCK_KEY: Final = 0x43525451_00000001
"""The advisory lock held while migrating ("CRTQ", 1): any fixed 64-bit key of ours."""

MIGRATIONS: Final[tuple[tuple[int, str], ...]] = (
    (
        1,
        f"""
        CREATE TABLE {MESSAGES} (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            queue text NOT NULL,
            payload text NOT NULL,
            state text NOT NULL DEFAULT 'pending'
                CHECK (state IN ('pending', 'leased', 'done', 'failed')),
            attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            generation text,
            lease_token text,
            lease_expires_at timestamptz,
            enqueued_at timestamptz NOT NULL DEFAULT now(),
            leased_at timestamptz,
            settled_at timestamptz,
            last_error text,
            CHECK ((state = 'leased') = (lease_token IS NOT NULL)),
            CHECK (state <> 'leased' OR lease_expires_at IS NOT NULL)
        );
        CREATE INDEX {MESSAGES}_pending ON {MESSAGES} (queue, id) WHERE state = 'pending';
        CREATE INDEX {MESSAGES}_leased ON {MESSAGES} (queue, lease_expires_at)
            WHERE state = 'leased';
        CREATE INDEX {MESSAGES}_settled ON {MESSAGES} (queue, state, id)
            WHERE state IN ('done', 'failed');
        """,
    ),
)
SCHEMA_VERSION: Final = MIGRATIONS[-1][0]
"""The version this package reads and writes."""

Connection = psycopg.Connection[tuple[Any, ...]]


def ensure_schema(conn: Connection, *, create: bool) -> None:
    """Accept the current schema, apply missing steps (``create``), refuse anything else."""
    version = schema_version(conn)
    if version == SCHEMA_VERSION:
        return
    _refuse_newer(version)
    if not create:
        raise QueueSchemaError("the database holds no queue of this version")
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} ("
            "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        version = schema_version(conn) or 0  # again, now as the only migrator
        _refuse_newer(version)
        for step, script in MIGRATIONS:
            if step > version:
                conn.execute(script.encode())  # no parameters: several statements at once
                conn.execute(f"INSERT INTO {MIGRATIONS_TABLE} (version) VALUES (%s)", (step,))


def schema_version(conn: Connection) -> int | None:
    """The newest version applied, or None where the migration table does not exist."""
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (MIGRATIONS_TABLE,)).fetchone()
    if row is None or not row[0]:
        return None
    row = conn.execute(f"SELECT max(version) FROM {MIGRATIONS_TABLE}").fetchone()
    return None if row is None or row[0] is None else int(row[0])


def _refuse_newer(version: int | None) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise QueueSchemaError(
            f"the queue database has schema version {version}, "
            f"this package reads version {SCHEMA_VERSION}"
        )
