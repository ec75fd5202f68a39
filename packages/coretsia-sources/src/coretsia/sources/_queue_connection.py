"""The queue's SQLite connection: its pragmas, its transactions and its own busy retry.

SQLite's busy handler is off (``timeout=0``): its growing back-off starves a process
waiting for the writer lock while another re-takes it in a tight loop. A busy statement
is retried here instead, after a short random sleep (the module documentation of
:mod:`coretsia.sources.sqlite_queue`, "Sharing the writer lock fairly", tells the story).
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Final, TypeVar

from coretsia.sources._queue_health import queue_error
from coretsia.sources._queue_records import Synchronous

_RETRY_MIN_S: Final = 0.00005
_RETRY_SPAN_S: Final = 0.0004

_T = TypeVar("_T")


class Connection:
    """One connection to a queue file, in autocommit mode (transactions are explicit).

    ``raw`` is the :mod:`sqlite3` connection itself, for statements run inside a
    :meth:`transaction` (which yields it too).
    """

    def __init__(self, path: str, *, busy_timeout: float, synchronous: Synchronous) -> None:
        self.path = path
        self._busy_timeout = busy_timeout
        self._synchronous = synchronous
        try:
            self.raw = sqlite3.connect(path, timeout=0, isolation_level=None)
        except sqlite3.Error as error:
            raise queue_error(error, "cannot open the queue database", path) from error

    def configure(self) -> None:
        """WAL (set only if it is not already: setting it takes the writer lock), durability.

        Switching a fresh file to WAL needs a moment of exclusive access; several workers
        opening a new database together can meet there: retried like any busy statement.
        """
        try:
            mode = self.retrying(lambda: self.raw.execute("PRAGMA journal_mode").fetchone())
            if str(mode[0]).lower() != "wal":
                self.retrying(lambda: self.raw.execute("PRAGMA journal_mode = WAL").fetchone())
            self.raw.execute(f"PRAGMA synchronous = {self._synchronous}")
        except sqlite3.Error as error:
            raise queue_error(error, "cannot open the queue database", self.path) from error

    def retrying(self, action: Callable[[], _T]) -> _T:
        """``action()``, tried again after a short random sleep while the database is busy.

        This replaces SQLite's busy handler, whose growing back-off starves the waiters
        (module documentation). Gives up, re-raising the busy error, after
        ``busy_timeout`` seconds.
        """
        deadline: float | None = None
        while True:
            try:
                return action()
            except sqlite3.OperationalError as error:
                if not _is_busy(error):
                    raise
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self._busy_timeout
                elif now > deadline:
                    raise
            time.sleep(_RETRY_MIN_S + random.random() * _RETRY_SPAN_S)

    @contextlib.contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction; ``BEGIN IMMEDIATE`` for writers so the lock is taken up front.

        A deferred transaction that reads and then writes can find, at its first write,
        that another process committed in between, and fail without waiting; taking the
        writer lock at ``BEGIN`` makes every read inside it current and every write safe.
        Inside an open transaction (a schema check inside the schema's creation) it
        nests as a no-op. A read transaction's first read may still meet a busy
        database (WAL recovery): wrap the whole read in :meth:`retrying`.
        """
        if self.raw.in_transaction:
            yield self.raw
            return
        conn = self.raw  # named after that check: in_transaction changes, mypy must not narrow
        if write:
            self.retrying(lambda: conn.execute("BEGIN IMMEDIATE"))
        else:
            conn.execute("BEGIN")
        try:
            yield conn
            # A fresh file is still in rollback-journal mode while its schema is created:
            # there the COMMIT needs every reader gone and fails busy while one reads (the
            # other workers opening it too). The transaction stays open and the COMMIT
            # may be tried again, as SQLite documents; WAL commits never wait for readers.
            self.retrying(lambda: conn.execute("COMMIT"))
        except BaseException:
            # SQLite may have rolled back already (or a failed COMMIT left it open): end it
            # either way, so the connection is usable for the next transaction.
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise

    @contextlib.contextmanager
    def durable(self) -> Iterator[None]:
        """``synchronous=FULL`` for the block, on a connection opened with ``NORMAL``."""
        if self._synchronous == "FULL":
            yield
            return
        self.raw.execute("PRAGMA synchronous = FULL")
        try:
            yield
        finally:
            self.raw.execute(f"PRAGMA synchronous = {self._synchronous}")

    def rows(self, sql: str, parameters: Iterable[object] = ()) -> list[tuple[object, ...]]:
        """All rows of one statement run on its own (autocommit), retried while busy.

        Fetching every row matters for ``UPDATE ... RETURNING``: the statement, and so its
        write transaction, ends only when stepped to completion.
        """
        params = tuple(parameters)
        return self.retrying(lambda: self.raw.execute(sql, params).fetchall())

    def changed(self, sql: str, parameters: Iterable[object] = ()) -> int:
        """The number of rows one statement changed, run on its own, retried while busy."""
        params = tuple(parameters)
        return int(self.retrying(lambda: self.raw.execute(sql, params).rowcount))

    def pragma(self, name: str) -> int:
        """An integer pragma's value (``application_id``, ``user_version``)."""
        return int(self.raw.execute(f"PRAGMA {name}").fetchone()[0])

    def close(self) -> None:
        """Close the connection; idempotent."""
        self.raw.close()


def _is_busy(error: sqlite3.OperationalError) -> bool:
    message = str(error).lower()
    return "locked" in message or "busy" in message
