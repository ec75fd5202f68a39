"""The PostgreSQL queue's connection: opening it, and errors that never quote the server.

A libpq message can name the host, the socket path, the role or the database, and the
connection string itself is a secret (it may hold a password): every driver error becomes
a :class:`QueueError` with a fixed message (the SQLSTATE at most), and the driver's
exception is not kept as its cause, so not even a debug traceback shows it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import psycopg

from coretsia.sources._pg_schema import Connection
from coretsia.sources._queue_records import QueueError


@contextlib.contextmanager
def database_errors() -> Iterator[None]:
    """Turn a driver error into a :class:`QueueError` that says nothing of the server.

    ``from None``: the driver's message (host, socket path, user, database) must not ride
    along as the cause either, even in a debug traceback.
    """
    try:
        yield
    except psycopg.OperationalError:
        raise QueueError("cannot use the queue database: the connection failed") from None
    except psycopg.Error as error:
        state = error.sqlstate or "unknown"
        raise QueueError(f"the queue database refused a statement (SQLSTATE {state})") from None


def connect(dsn: str | None) -> Connection:
    """A connection in autocommit mode; a :class:`QueueError` that quotes nothing if not.

    libpq refuses a malformed string before connecting (a ``ProgrammingError`` whose
    message quotes the offending part): said apart, as it needs a fix, not a retry.
    """
    try:
        return psycopg.connect(dsn or "", autocommit=True)
    except psycopg.ProgrammingError:
        raise QueueError(
            "cannot use the queue database: the connection string is not valid"
        ) from None
    except psycopg.Error:
        raise QueueError("cannot use the queue database: the connection failed") from None


def notify(conn: Connection, channel: str) -> None:
    """Wake the channel's listeners at commit (called inside the writing transaction)."""
    conn.execute("SELECT pg_notify(%s, '')", (channel,))
