"""The PostgreSQL queue's connection: opening it, and errors that never quote the server.

A libpq message can name the host, the socket path, the role or the database, and the
connection string itself is a secret (it may hold a password): every driver error becomes
a :class:`QueueError` with a fixed message (the SQLSTATE at most), and the driver's
exception is not kept as its cause, so not even a debug traceback shows it.

A connection that cannot be had or used says which way (a
:class:`~coretsia.worker_protocol.catalogue.SourceFault`): :class:`QueueUnavailableError`.
A statement's error carries its SQLSTATE, but a refused connection carries none (libpq
keeps the server's SQLSTATE to itself before a session exists), so its fault is read from
the server's message: the English one (a server whose ``lc_messages`` is another language
reads as ``unreachable``). The message is only matched, never kept.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Final

import psycopg

from coretsia.sources._pg_schema import Connection
from coretsia.sources._queue_records import QueueError
from coretsia.worker_protocol.catalogue import SourceFault
from coretsia.worker_protocol.task_source import TaskSourceUnavailableError

_SAYS: Final = {
    SourceFault.UNREACHABLE: "the server is unreachable",
    SourceFault.AUTHENTICATION: "the server refused the credentials",
    SourceFault.MISSING_DATABASE: "the database does not exist",
    SourceFault.PERMISSION: "permission denied",
}
_REFUSALS: Final = (
    ("permission denied", SourceFault.PERMISSION),  # FATAL: permission denied for database
    ('database "', SourceFault.MISSING_DATABASE),  # FATAL: database "x" does not exist
    ("authentication", SourceFault.AUTHENTICATION),  # password/peer/... authentication failed
    ("pg_hba.conf", SourceFault.AUTHENTICATION),  # no pg_hba.conf entry for ...
    ('role "', SourceFault.AUTHENTICATION),  # role "x" does not exist / is not permitted
    ("password", SourceFault.AUTHENTICATION),  # fe_sendauth: no password supplied
)
"""What a refused connection's message says, the first match winning; else unreachable."""
_UNREACHABLE_STATES: Final = frozenset({"57P01", "57P02", "57P03"})
"""The server shut the session (admin or crash shutdown) or cannot take one yet."""


class QueueUnavailableError(QueueError, TaskSourceUnavailableError):
    """The queue's server cannot be reached or used; ``fault`` says which way.

    Its message is fixed per fault, and names nothing of the server.
    """

    def __init__(self, fault: SourceFault | str, message: str = "") -> None:
        checked = SourceFault(fault)
        TaskSourceUnavailableError.__init__(
            self, checked, message or f"cannot use the queue database: {_SAYS[checked]}"
        )


@contextlib.contextmanager
def database_errors() -> Iterator[None]:
    """Turn a driver error into a :class:`QueueError` that says nothing of the server.

    ``from None``: the driver's message (host, socket path, user, database) must not ride
    along as the cause either, even in a debug traceback.
    """
    try:
        yield
    except psycopg.Error as error:
        raise _statement_error(error) from None


def _statement_error(error: psycopg.Error) -> QueueError:
    """The error of a statement: unavailable (and which way), or refused (its SQLSTATE)."""
    state = error.sqlstate
    if isinstance(error, psycopg.OperationalError) and (
        state is None or state.startswith("08") or state in _UNREACHABLE_STATES
    ):
        return QueueUnavailableError(SourceFault.UNREACHABLE)  # the connection is gone
    if state is not None and state.startswith("28"):
        return QueueUnavailableError(SourceFault.AUTHENTICATION)
    if state == "3D000":
        return QueueUnavailableError(SourceFault.MISSING_DATABASE)
    if state == "42501":
        return QueueUnavailableError(SourceFault.PERMISSION)
    return QueueError(f"the queue database refused a statement (SQLSTATE {state or 'unknown'})")


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
    except psycopg.Error as error:
        raise QueueUnavailableError(_refusal(str(error))) from None


def _refusal(message: str) -> SourceFault:
    """Which way a connection was refused, from libpq's message (see the module's doc).

    Only what follows the last ``failed:`` is the server's (or libpq's) reason: before it,
    libpq names the host or the socket's path, which may hold any word.
    """
    reason = message.rpartition("failed:")[2].lower()
    return next((fault for words, fault in _REFUSALS if words in reason), SourceFault.UNREACHABLE)


def notify(conn: Connection, channel: str) -> None:
    """Wake the channel's listeners at commit (called inside the writing transaction)."""
    conn.execute("SELECT pg_notify(%s, '')", (channel,))
