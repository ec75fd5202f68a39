"""The reference durable queue: one SQLite file shared by the workers of one or more pools.

Why SQLite: it is in the standard library, it is a real database (atomic, durable
transactions on a local disk), and many processes can use one file at once. WAL mode
lets readers work while one writer commits, and every state change that must be
exclusive takes the writer lock before it reads (``BEGIN IMMEDIATE``, or one ``UPDATE``
statement, which SQLite runs as a write transaction from its first step), so two workers
can never both see the same message as pending and both take it.

A message moves through four states::

    pending --lease--> leased --ack--> done
       ^                 |
       +---fail/recover--+--fail (attempts reached max_attempts)--> failed
       +------------------------retry (by an operator)-------------------+

The guarantees:

* **At least once.** A message leaves ``pending`` only by being leased, and a lease ends
  only in ``ack`` (done), ``fail`` (pending again, or failed for good) or ``recover``
  (pending again). A worker SIGKILLed mid-task loses nothing: its lease stays in the file
  and is recovered once no live worker of its generation is left.
* **Acknowledged exactly once.** Each lease carries a random token; ``ack`` and ``fail``
  change the row only while it is still leased with that token, and raise
  :class:`LeaseLostError` otherwise. A message is ``done`` once, never twice.
* **Never run twice at the same time.** There is deliberately *no* time-based lease
  expiry: a slow task is never handed to a second worker because a timer ran out.
  Leases are recovered by generation, and only those of a *dead* generation: every
  process that leases for a generation holds a shared ``flock`` on
  ``<db>.generations/<generation>.lock`` for as long as its queue is open, and
  :meth:`SqliteQueue.recover` takes back a generation's leases only while it holds that
  file's exclusive lock (no live worker of it exists, and none can start leasing
  meanwhile). So several pools (project roots) may share one database: each recovers
  only what dead workers left. The lock protocol and its races are described in
  :mod:`coretsia.sources._generation_locks`. Where ``flock`` does not exist (not POSIX),
  every other generation counts as dead: there, one pool per database.

**Durability** is chosen per operation. ``enqueue`` commits with ``synchronous=FULL``:
an ``enqueue`` that returned has reached the disk, even across a power cut. A queue
opened with ``synchronous="NORMAL"`` (what a worker uses) commits ``lease``, ``ack``,
``fail`` and ``recover`` without waiting for the disk: WAL mode stays consistent, and a
power cut (not a process crash: those lose nothing either way) can only undo the last of
those commits, so a message may run once more, or count one attempt fewer, which
at-least-once allows. Not waiting for the disk at every commit keeps the writer lock
short, and the lock is what every worker queues for.

**Sharing the writer lock fairly.** SQLite's own busy handler sleeps with a growing
back-off (1, 2, 5, 10... up to 100 ms between tries), so a process waiting for the lock
keeps losing it to one that re-takes it in a tight loop (lease, run, ack, lease...): one
worker did nearly all the work while the others starved, and a booting worker waited
seconds. Here SQLite's handler is off (``busy_timeout`` 0) and a busy statement is
retried after a short random sleep (0.05 to 0.45 ms), until the queue's busy timeout runs
out; the random length keeps waiters from retrying in lockstep. A lease is one statement
(``UPDATE ... RETURNING`` where SQLite has it, 3.35 and later; an explicit
``BEGIN IMMEDIATE`` transaction elsewhere), an ack another, and
:meth:`SqliteQueue.ack_and_lease` does both in one transaction (the next message leased
with the last one's acknowledgement: one turn at the lock per task, not two, which is
what lets more workers mean more throughput). And a booting worker takes
the writer lock only when it has something to write: WAL is set only if not set yet, the
schema is checked in a read transaction, and recovery writes only when a dead
generation's lease exists (WAL readers never wait for the writer).

**Waiting without polling.** An idle worker must not spin on the database, and must wake
at once when the pool stops. SQLite has no notification of its own, so ``enqueue`` pokes
the waiters: each waiting worker binds an ``AF_UNIX`` datagram socket in a directory next
to the database (``<db>.notify/<pid>-<random>.sock``), and after every committed
``enqueue`` (and every ``recover`` or ``retry`` that made messages pending) the queue
sends one byte to every socket there. The worker ``select``\\ s on its socket and on the
pool's stop descriptor together, so it wakes for new work or for a stop, whichever comes
first. Why this shape:

* no lost wake-up: a waiter binds its socket *before* it looks for work, and ``enqueue``
  pokes *after* its commit, so either the waiter's look sees the message or the poke
  finds the socket (and a datagram sent while the worker is busy stays queued in the
  socket until it next waits);
* it needs nothing but the standard library and the file system the database is already
  on; no daemon, no port, and pokes carry no data (a stray one only causes one extra,
  harmless look at the queue);
* a dead waiter is harmless: its socket file refuses the poke (``ECONNREFUSED``) and the
  sender removes it; the random part of the name means a new process never reuses a
  stale name, so the sender cannot delete a live socket;
* the alternatives are worse: a FIFO wakes only one reader and sees end-of-file when
  writers leave, inotify on the WAL file is Linux-only and fires on every write (acks
  included), and polling the database either burns CPU or adds latency.

Pokes are only an optimisation: correctness never depends on them. A waiter still looks
at the queue every few seconds (a poke can be missed: an enqueuing process without
permission on the directory, a directory removed by hand), and where the socket cannot
be bound at all (no ``AF_UNIX`` datagram sockets, as on Windows; a path longer than the
OS limit of about 100 bytes; a read-only directory) it falls back to a short re-check
interval, still waking at once on stop.

**Private files.** Payloads are application data: a database this module creates is
``0600`` (and so are SQLite's ``-wal`` and ``-shm`` beside it), and every directory it
creates (the database's missing parents, ``<db>.notify``, ``<db>.generations``) is
``0700``, whatever the umask. Existing files and directories are left as they are.

The database must be on a local file system (WAL needs shared memory between the
processes; SQLite's own rule). A connection must not cross a ``fork``: open the queue in
the process that uses it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import secrets
import selectors
import socket
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple, TypeVar

from coretsia.sources._generation_locks import GenerationLocks
from coretsia.sources._private_files import create_private_file, make_private_dirs

APPLICATION_ID: Final = 0x43525451
"""``PRAGMA application_id`` of a queue file ("CRTQ"): tells a queue from any other DB."""
SCHEMA_VERSION: Final = 1
"""``PRAGMA user_version`` of the schema below."""
STATES: Final = ("pending", "in_flight", "done", "failed")
"""The keys of :meth:`SqliteQueue.stats`, in display order (``in_flight`` = leased)."""
MAX_ERROR_CHARS: Final = 2000
"""How much of a failure's description is kept in ``last_error``."""
INTERRUPTED: Final = "interrupted: its worker exited before settling it"
"""``last_error`` of a lease taken back by :meth:`SqliteQueue.recover` with a limit."""

Synchronous = Literal["FULL", "NORMAL"]

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
_NOTIFY_SUFFIX: Final = ".notify"
_SOCKET_SUFFIX: Final = ".sock"
_RETURNING: Final = sqlite3.sqlite_version_info >= (3, 35, 0)
"""``UPDATE ... RETURNING`` exists (SQLite 3.35, 2021); older builds use two statements."""
_RETRY_MIN_S: Final = 0.00005
_RETRY_SPAN_S: Final = 0.0004
_PURGE_BATCH: Final = 500
"""Rows deleted per transaction by :meth:`SqliteQueue.purge`: workers get the lock between."""
_LEASE_SET: Final = "state = 'leased', generation = ?, lease_token = ?, leased_at = ?"
_FAIL_SET: Final = (
    "attempts = attempts + 1, lease_token = NULL, "
    "state = CASE WHEN attempts + 1 >= ? THEN 'failed' ELSE 'pending' END, "
    "settled_at = CASE WHEN attempts + 1 >= ? THEN ? ELSE NULL END, last_error = ?"
)
"""One failed (or interrupted) attempt: the SET clause shared by ``fail`` and ``recover``."""
_ACK: Final = (
    "UPDATE messages SET state = 'done', lease_token = NULL, settled_at = ? "
    "WHERE id = ? AND state = 'leased' AND lease_token = ?"
)
_OLDEST: Final = "SELECT id FROM messages WHERE state = 'pending' ORDER BY id LIMIT 1"

_T = TypeVar("_T")


class QueueError(Exception):
    """The database cannot be used as a queue (missing, foreign, newer schema...)."""


class LeaseLostError(QueueError):
    """``ack``/``fail`` of a message that is no longer leased with this lease's token."""


@dataclass(frozen=True)
class Message:
    """One leased message: what a worker needs to run it and to settle it exactly once.

    ``attempts`` counts the earlier failed (or interrupted) attempts; ``token`` is this
    lease's secret, without which the row cannot be settled.
    """

    id: int
    payload: str
    attempts: int
    generation: str
    token: str


@dataclass(frozen=True)
class FailedMessage:
    """A message that failed for good, as an operator sees it: never its payload.

    ``settled_at`` is a Unix time (seconds); ``last_error`` the recorded description.
    """

    id: int
    attempts: int
    settled_at: float | None
    last_error: str | None


class Retried(NamedTuple):
    """What :meth:`SqliteQueue.retry` did: how many went back, and what it refused."""

    retried: int
    unknown: tuple[int, ...]
    """Ids with no message."""
    not_failed: tuple[int, ...]
    """Ids of messages in another state (pending, leased or done): left as they are."""


class SqliteQueue:
    """A durable queue in one SQLite file, safe for many processes at once.

    ``create`` (the default) creates the parent directories, the file and the schema on
    first use (privately: see the module documentation); with ``create=False`` a missing
    file or a file without the schema is a :class:`QueueError` (a read-only caller such
    as ``stats`` should not leave an empty database behind a typo). ``busy_timeout`` is
    how long, in seconds, an operation waits for the writer lock before giving up: each
    transaction here is a few row changes, so waiting that long means something is
    badly wrong. ``synchronous`` is the durability of everything but ``enqueue`` (which
    is always ``FULL``): ``"NORMAL"`` for workers, see the module documentation.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        busy_timeout: float = 10.0,
        synchronous: Synchronous = "FULL",
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError("synchronous must be 'FULL' or 'NORMAL'")
        self._path = os.path.abspath(os.fspath(path))
        self._busy_timeout = busy_timeout
        self._synchronous = synchronous
        self._sender: socket.socket | None = None
        self._locks = GenerationLocks(self._path, busy_timeout)
        if create:
            make_private_dirs(os.path.dirname(self._path))
            create_private_file(self._path)
        elif not os.path.isfile(self._path):
            raise QueueError("the queue database does not exist")
        try:
            # timeout=0: no SQLite busy handler; _retrying waits instead (module docs).
            self._conn = sqlite3.connect(self._path, timeout=0, isolation_level=None)
        except sqlite3.Error as error:
            raise QueueError(f"cannot open the queue database: {error}") from error
        try:
            # The schema first: a file that is not ours is refused before anything in it
            # changes (switching to WAL rewrites its header).
            self._ensure_schema(create=create)
            self._configure()
        except BaseException:
            self._conn.close()
            raise

    @property
    def path(self) -> str:
        """The absolute path of the database file."""
        return self._path

    @property
    def notify_dir(self) -> str:
        """The directory of the waiters' notification sockets (``<db>.notify``)."""
        return self._path + _NOTIFY_SUFFIX

    @property
    def generations_dir(self) -> str:
        """The directory of the generations' lock files (``<db>.generations``)."""
        return self._locks.directory

    # -- opening -------------------------------------------------------------------------

    def _configure(self) -> None:
        """WAL (set only if it is not already: setting it takes the writer lock), durability.

        Switching a fresh file to WAL needs a moment of exclusive access; several workers
        opening a new database together can meet there: retried like any busy statement.
        """
        try:
            mode = self._retrying(lambda: self._conn.execute("PRAGMA journal_mode").fetchone())
            if str(mode[0]).lower() != "wal":
                self._retrying(lambda: self._conn.execute("PRAGMA journal_mode = WAL").fetchone())
            self._conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        except sqlite3.Error as error:
            raise QueueError(f"cannot open the queue database: {error}") from error

    def _ensure_schema(self, *, create: bool) -> None:
        """Accept our schema (read only), create it in an empty file, refuse anything else."""
        try:
            if self._retrying(lambda: self._read_schema(create=create)):
                return
            with self._transaction():  # an empty file: look again, now as the only writer
                if self._read_schema(create=create):
                    return
                # Statement by statement: executescript() would COMMIT our transaction first.
                for statement in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.Error as error:
            raise QueueError(f"cannot use the queue database: {error}") from error

    def _read_schema(self, *, create: bool) -> bool:
        """True for our schema, False for an empty file we may fill; else QueueError."""
        with self._transaction(write=False):  # nested (a no-op) inside _ensure_schema's
            application_id = self._pragma("application_id")
            if application_id == APPLICATION_ID:
                version = self._pragma("user_version")
                if version != SCHEMA_VERSION:
                    raise QueueError(
                        f"the queue database has schema version {version}, "
                        f"this package reads version {SCHEMA_VERSION}"
                    )
                return True
            tables = self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if application_id != 0 or tables != 0 or not create:
                raise QueueError("the file is not a Coretsia queue database")
            return False

    def _pragma(self, name: str) -> int:
        value = self._conn.execute(f"PRAGMA {name}").fetchone()[0]
        return int(value)

    def _retrying(self, action: Callable[[], _T]) -> _T:
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
    def _transaction(self, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction; ``BEGIN IMMEDIATE`` for writers so the lock is taken up front.

        A deferred transaction that reads and then writes can find, at its first write,
        that another process committed in between, and fail without waiting; taking the
        writer lock at ``BEGIN`` makes every read inside it current and every write safe.
        Inside an open transaction (``write=True`` from ``_ensure_schema``) it nests as a
        no-op. A read transaction's first read may still meet a busy database (WAL
        recovery): wrap the whole read in :meth:`_retrying`.
        """
        conn = self._conn  # not narrowed by the check below: in_transaction changes
        if conn.in_transaction:
            yield conn
            return
        if write:
            self._retrying(lambda: self._conn.execute("BEGIN IMMEDIATE"))
        else:
            self._conn.execute("BEGIN")
        try:
            yield self._conn
            self._conn.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (or a failed COMMIT left it open): end it
            # either way, so the connection is usable for the next transaction.
            if self._conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
            raise

    def _rows(self, sql: str, parameters: Iterable[object] = ()) -> list[tuple[object, ...]]:
        """All rows of one statement run on its own (autocommit), retried while busy.

        Fetching every row matters for ``UPDATE ... RETURNING``: the statement, and so its
        write transaction, ends only when stepped to completion.
        """
        params = tuple(parameters)
        return self._retrying(lambda: self._conn.execute(sql, params).fetchall())

    def _changed(self, sql: str, parameters: Iterable[object] = ()) -> int:
        """The number of rows one statement changed, run on its own, retried while busy."""
        params = tuple(parameters)
        return int(self._retrying(lambda: self._conn.execute(sql, params).rowcount))

    def check(self) -> None:
        """Raise :class:`QueueError` unless the database answers and holds our schema."""
        try:
            self._retrying(self._check_once)
        except sqlite3.Error as error:
            raise QueueError(f"cannot use the queue database: {error}") from error

    def _check_once(self) -> None:
        with self._transaction(write=False):
            if self._pragma("application_id") != APPLICATION_ID:
                raise QueueError("the file is not a Coretsia queue database")
            if self._pragma("user_version") != SCHEMA_VERSION:
                raise QueueError("the queue database has another schema version")
            self._conn.execute("SELECT count(*) FROM messages WHERE 0").fetchone()

    def close(self) -> None:
        """Close the connection, let go of held generations and the sender; idempotent."""
        self._conn.close()
        self._locks.release_all()
        if self._sender is not None:
            self._sender.close()
            self._sender = None

    def __enter__(self) -> SqliteQueue:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the queue -----------------------------------------------------------------------

    def enqueue(self, payloads: Iterable[str]) -> int:
        """Add messages (all or none, in order) and wake the waiting workers; the count.

        The payloads are collected *before* the transaction: a slow iterator (a pipe being
        read) must not hold the writer lock while the workers wait for it. The commit is
        always ``synchronous=FULL``: once this returns, the messages survive a power cut.
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
        with self._durable(), self._transaction() as conn:
            conn.executemany(
                "INSERT INTO messages (payload, enqueued_at) VALUES (?, ?)",
                ((payload, now) for payload in batch),
            )
        self.notify()
        return len(batch)

    @contextlib.contextmanager
    def _durable(self) -> Iterator[None]:
        """``synchronous=FULL`` for the block, on a connection opened with ``NORMAL``."""
        if self._synchronous == "FULL":
            yield
            return
        self._conn.execute("PRAGMA synchronous = FULL")
        try:
            yield
        finally:
            self._conn.execute(f"PRAGMA synchronous = {self._synchronous}")

    def hold(self, generation: str) -> None:
        """Mark this process a live worker of ``generation`` while the queue is open.

        :meth:`lease` and :meth:`recover` do it themselves before anything else; calling
        it first at boot only moves the (short) wait for the lock file earlier. Raises
        :class:`QueueError` if the lock stays taken longer than the busy timeout.
        """
        try:
            self._locks.hold(generation)
        except (OSError, TimeoutError) as error:
            raise QueueError(f"cannot lock the generation's file: {error}") from error

    def lease(self, generation: str) -> Message | None:
        """Take the oldest pending message for ``generation``, or None if there is none.

        The cheap check outside the transaction (a WAL read, which never waits) keeps
        idle workers, all woken by one poke, from queueing up for the writer lock only to
        find nothing.
        """
        if not self._locks.is_held(generation):
            self.hold(generation)  # before the first lease: recovery must see us alive
        exists = "SELECT EXISTS (SELECT 1 FROM messages WHERE state = 'pending')"
        if not self._rows(exists)[0][0]:
            return None
        token = secrets.token_hex(16)
        lease = (generation, token, time.time())
        if _RETURNING:
            rows = self._rows(
                f"UPDATE messages SET {_LEASE_SET} WHERE id = ({_OLDEST}) "
                "RETURNING id, payload, attempts",
                lease,
            )
            row = rows[0] if rows else None
        else:  # pragma: no cover - SQLite older than 3.35
            with self._transaction() as conn:
                row = _lease_locked(conn, lease)
        return None if row is None else _message(row, generation, token)

    def ack_and_lease(self, message: Message, generation: str) -> Message | None:
        """:meth:`ack` ``message`` and lease the next pending one, in one transaction.

        Half the commits of an ``ack`` then a ``lease``, and one turn at the writer lock
        instead of two: the lock is what every worker queues for, so this is what lets
        more workers mean more throughput. The acknowledgement is as final as
        :meth:`ack`'s once this returns (:class:`LeaseLostError` if the lease no longer
        holds, and then nothing is leased). None when nothing was pending.
        """
        token = secrets.token_hex(16)
        lease = (generation, token, time.time())
        with self._transaction() as conn:
            if conn.execute(_ACK, (time.time(), message.id, message.token)).rowcount != 1:
                raise LeaseLostError(f"message {message.id} is not leased with this lease")
            row = _lease_locked(conn, lease)
        return None if row is None else _message(row, generation, token)

    def release(self, message: Message) -> bool:
        """Give a leased message back, never run: ``pending`` again, no attempt counted.

        For a message leased ahead (:meth:`ack_and_lease`) that its worker will not run
        after all (it is stopping). False if the lease no longer held (nothing changed).
        Wakes the waiting workers.
        """
        changed = self._changed(
            "UPDATE messages SET state = 'pending', lease_token = NULL, generation = NULL, "
            "leased_at = NULL WHERE id = ? AND state = 'leased' AND lease_token = ?",
            (message.id, message.token),
        )
        if changed:
            self.notify()
        return changed == 1

    def ack(self, message: Message) -> None:
        """Mark a leased message done; :class:`LeaseLostError` if this lease no longer holds.

        The token check is what makes acknowledgement exactly-once: a second ``ack``, an
        ``ack`` after ``fail``, or one of a lease that was recovered all change nothing.
        """
        changed = self._changed(_ACK, (time.time(), message.id, message.token))
        if changed != 1:
            raise LeaseLostError(f"message {message.id} is not leased with this lease")

    def fail(self, message: Message, max_attempts: int, *, error: str | None = None) -> str:
        """Record a failed attempt: back to ``pending``, or ``failed`` at ``max_attempts``.

        Returns the new state (``"pending"``: it will be retried; ``"failed"``: it will
        not). ``error`` (a short description) is kept in ``last_error`` for whoever
        inspects failed messages. Same lease check as :meth:`ack`.
        """
        _check_max_attempts(max_attempts)
        params = (max_attempts, max_attempts, time.time(), _clip(error), message.id, message.token)
        where = "WHERE id = ? AND state = 'leased' AND lease_token = ?"
        if _RETURNING:
            rows = self._rows(f"UPDATE messages SET {_FAIL_SET} {where} RETURNING state", params)
        else:  # pragma: no cover - SQLite older than 3.35
            with self._transaction() as conn:
                changed = conn.execute(f"UPDATE messages SET {_FAIL_SET} {where}", params).rowcount
                rows = conn.execute(
                    "SELECT state FROM messages WHERE id = ?", (message.id,)
                ).fetchall()[:changed]
        if not rows:
            raise LeaseLostError(f"message {message.id} is not leased with this lease")
        return str(rows[0][0])

    def recover(self, current_generation: str, *, max_attempts: int | None = None) -> int:
        """Take back the leases of dead generations; the number of leases ended.

        A generation is dead when no process holds its lock file (module documentation):
        the leases of live workers, of this pool or of another pool on the same database,
        are never touched, nor ever those of ``current_generation`` (which this process
        joins first). Writes only when there is something to take back. With
        ``max_attempts``, an interrupted lease counts as an attempt, and a message whose
        attempts reach it becomes ``failed`` instead of ``pending``: a message that kills
        its worker every time (a crash in native code, the OOM killer) would otherwise
        take the pool down at every start, for ever.
        """
        if max_attempts is not None:
            _check_max_attempts(max_attempts)
        self.hold(current_generation)
        leased = self._rows(
            "SELECT DISTINCT generation FROM messages "
            "WHERE state = 'leased' AND generation IS NOT ?",
            (current_generation,),
        )
        freed = 0
        if leased:
            candidates = [None if row[0] is None else str(row[0]) for row in leased]
            with self._locks.claim_dead(candidates) as dead:
                if dead:
                    freed = self._end_leases(dead, max_attempts)
        self._locks.sweep()
        if freed:
            self.notify()
        return freed

    def _end_leases(self, generations: list[str | None], max_attempts: int | None) -> int:
        """Put the leases of ``generations`` back (one transaction); how many."""
        freed = 0
        with self._transaction() as conn:
            for generation in generations:
                if max_attempts is None:
                    sql = "UPDATE messages SET state = 'pending', lease_token = NULL"
                    params: tuple[object, ...] = (generation,)
                else:
                    sql = f"UPDATE messages SET {_FAIL_SET}"
                    params = (max_attempts, max_attempts, time.time(), INTERRUPTED, generation)
                where = " WHERE state = 'leased' AND generation IS ?"
                freed += conn.execute(sql + where, params).rowcount
        return freed

    def stats(self) -> dict[str, int]:
        """How many messages are in each state: pending, in_flight (leased), done, failed."""
        counts = dict.fromkeys(STATES, 0)
        for state, count in self._rows("SELECT state, count(*) FROM messages GROUP BY state"):
            assert isinstance(count, int)
            counts["in_flight" if state == "leased" else str(state)] = count
        return counts

    # -- an operator's tools -------------------------------------------------------------

    def failed(self) -> list[FailedMessage]:
        """The messages that failed for good, oldest id first (never their payloads)."""
        rows = self._rows(
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

    def retry(self, ids: Iterable[int] | Literal["all"]) -> Retried:
        """Put failed messages back to ``pending`` with ``attempts`` reset to 0.

        ``"all"`` retries every failed message. Given ids, each failed one is retried and
        the others are reported (unknown, or in another state) and left alone: retrying
        a pending, leased or done message would run it again. ``last_error`` is kept
        (what the last attempt died of is still worth knowing). Wakes the workers.
        """
        reset = "UPDATE messages SET state = 'pending', attempts = 0, settled_at = NULL"
        if ids == "all":
            count = self._changed(f"{reset} WHERE state = 'failed'")
            unknown: list[int] = []
            not_failed: list[int] = []
        else:
            wanted = list(dict.fromkeys(ids))  # each once, in the caller's order
            for message_id in wanted:
                _check_id(message_id)
            count, unknown, not_failed = 0, [], []
            with self._transaction() as conn:
                for message_id in wanted:
                    row = conn.execute(
                        "SELECT state FROM messages WHERE id = ?", (message_id,)
                    ).fetchone()
                    if row is None:
                        unknown.append(message_id)
                    elif row[0] != "failed":
                        not_failed.append(message_id)
                    else:
                        count += conn.execute(f"{reset} WHERE id = ?", (message_id,)).rowcount
        if count:
            self.notify()
        return Retried(count, tuple(unknown), tuple(not_failed))

    def purge(self, state: Literal["done", "failed"]) -> int:
        """Delete every settled message in ``state``; how many were deleted.

        In batches of a few hundred rows, one transaction each, so that purging a large
        queue never keeps the workers from the writer lock for long.
        """
        if state not in ("done", "failed"):
            raise ValueError("purge deletes 'done' or 'failed' messages only")
        deleted = 0
        batch = (
            "DELETE FROM messages WHERE id IN "
            f"(SELECT id FROM messages WHERE state = ? ORDER BY id LIMIT {_PURGE_BATCH})"
        )
        while True:
            changed = self._changed(batch, (state,))
            deleted += changed
            if changed < _PURGE_BATCH:
                return deleted

    # -- notification --------------------------------------------------------------------

    def notify(self) -> None:
        """Poke every waiting worker; never raises (the data is committed already).

        A socket that refuses the poke has no process behind it (its owner died without
        removing it): remove it. A full socket already has a poke waiting: skip it.
        """
        family = getattr(socket, "AF_UNIX", None)
        if family is None:
            return
        try:
            names = os.listdir(self.notify_dir)
        except OSError:
            return  # no directory: nobody has ever waited
        try:
            if self._sender is None:
                self._sender = socket.socket(family, socket.SOCK_DGRAM)
                self._sender.settimeout(0.0)  # non-blocking
        except OSError:
            return
        for name in names:
            if not name.endswith(_SOCKET_SUFFIX):
                continue
            target = os.path.join(self.notify_dir, name)
            try:
                self._sender.sendto(b"\0", target)
            except OSError as error:
                if error.errno == errno.ECONNREFUSED:
                    with contextlib.suppress(OSError):
                        os.unlink(target)

    def waiter(self, stop_fileno: int | None = None) -> Waiter:
        """A :class:`Waiter` for this database that also wakes when ``stop_fileno`` is readable."""
        return Waiter(self.notify_dir, stop_fileno)


class Waiter:
    """Sleeps until the queue is poked, ``stop_fileno`` becomes readable, or a timeout.

    Binds its socket at construction, so create it *before* the first look at the queue
    (see the module documentation for why that order loses no wake-up). ``notifying`` is
    False when no socket could be bound; :meth:`wait` then wakes only for stop or timeout,
    and the caller should use a short timeout.
    """

    def __init__(self, notify_dir: str, stop_fileno: int | None = None) -> None:
        self._dir = notify_dir
        self._stop_fileno = stop_fileno
        self._sock: socket.socket | None = None
        self._sock_path: str | None = None
        # poll(), not epoll: two descriptors, and poll accepts any kind of descriptor.
        self._selector: selectors.BaseSelector = (
            selectors.PollSelector()
            if hasattr(selectors, "PollSelector")
            else selectors.SelectSelector()
        )
        if stop_fileno is not None:
            self._selector.register(stop_fileno, selectors.EVENT_READ, "stop")
        self._bind()

    @property
    def notifying(self) -> bool:
        """True while pokes can reach this waiter."""
        return self._sock is not None

    def _bind(self) -> None:
        """Bind a fresh socket under a never-reused name; stay silent if we cannot."""
        family = getattr(socket, "AF_UNIX", None)
        if family is None:
            return
        path = os.path.join(self._dir, f"{os.getpid()}-{secrets.token_hex(4)}{_SOCKET_SUFFIX}")
        try:
            make_private_dirs(self._dir)
            sock = socket.socket(family, socket.SOCK_DGRAM)
        except OSError:
            return
        try:
            sock.bind(path)
            sock.settimeout(0.0)  # non-blocking
        except OSError:  # too long a path, read-only directory...: fall back to re-checks
            sock.close()
            return
        self._sock, self._sock_path = sock, path
        self._selector.register(sock, selectors.EVENT_READ, "poke")

    def _unbind(self) -> None:
        if self._sock is None:
            return
        self._selector.unregister(self._sock)
        self._sock.close()
        if self._sock_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._sock_path)
        self._sock = self._sock_path = None

    def wait(self, timeout: float) -> bool:
        """Sleep until poked, stop or ``timeout`` seconds; True when stop is readable."""
        if not self._selector.get_map():
            time.sleep(timeout)  # nothing to wait on: no socket and no stop descriptor
            return False
        events = self._selector.select(timeout)
        stopping = any(key.data == "stop" for key, _ in events)
        if self._sock is not None:
            self._drain(self._sock)
            if not events and self._sock_path and not os.path.exists(self._sock_path):
                self._unbind()  # our file was removed by hand: rebind so pokes reach us
                self._bind()
        elif not events:
            self._bind()  # maybe the directory is usable now
        return stopping

    @staticmethod
    def _drain(sock: socket.socket) -> None:
        """Read every queued poke: one look at the queue answers all of them."""
        while True:
            try:
                sock.recv(64)
            except OSError:  # BlockingIOError: empty
                return

    def close(self) -> None:
        """Remove the socket (so enqueuers stop poking it) and free the selector."""
        self._unbind()
        self._selector.close()


def _lease_locked(
    conn: sqlite3.Connection, lease: tuple[str, str, float]
) -> tuple[object, ...] | None:
    """Lease the oldest pending message inside a write transaction already begun."""
    row: tuple[object, ...] | None = conn.execute(
        f"SELECT id, payload, attempts FROM messages WHERE id = ({_OLDEST})"
    ).fetchone()
    if row is not None:
        conn.execute(f"UPDATE messages SET {_LEASE_SET} WHERE id = ?", (*lease, row[0]))
    return row


def _message(row: tuple[object, ...], generation: str, token: str) -> Message:
    message_id, payload, attempts = row
    assert isinstance(message_id, int)
    assert isinstance(payload, str)
    assert isinstance(attempts, int)
    return Message(
        id=message_id, payload=payload, attempts=attempts, generation=generation, token=token
    )


def _is_busy(error: sqlite3.OperationalError) -> bool:
    message = str(error).lower()
    return "locked" in message or "busy" in message


def _check_max_attempts(max_attempts: int) -> None:
    if type(max_attempts) is not int or max_attempts < 1:
        raise ValueError("max_attempts must be an integer of at least 1")


def _check_id(value: object) -> None:
    if type(value) is not int:
        raise TypeError("a message id must be an int")


def _clip(error: str | None) -> str | None:
    return None if error is None else error[:MAX_ERROR_CHARS]
