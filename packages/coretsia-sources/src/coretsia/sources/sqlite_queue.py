"""The reference durable queue: one SQLite file shared by every worker of one pool.

Why SQLite: it is in the standard library, it is a real database (atomic, durable
transactions on a local disk), and many processes can use one file at once. WAL mode
lets readers work while one writer commits, ``busy_timeout`` makes a writer wait its turn
instead of failing, and every state change that must be exclusive runs in a
``BEGIN IMMEDIATE`` transaction (the writer lock is taken at ``BEGIN``, so two workers can
never both see the same message as pending and both take it). ``synchronous=FULL``: an
``enqueue`` that returned has reached the disk, even across a power cut.

A message moves through four states::

    pending --lease--> leased --ack--> done
       ^                 |
       +---fail/recover--+--fail (attempts reached max_attempts)--> failed

The guarantees:

* **At least once.** A message leaves ``pending`` only by being leased, and a lease ends
  only in ``ack`` (done), ``fail`` (pending again, or failed for good) or ``recover``
  (pending again). A worker SIGKILLed mid-task loses nothing: its lease stays in the file
  and the next generation recovers it.
* **Acknowledged exactly once.** Each lease carries a random token; ``ack`` and ``fail``
  change the row only while it is still leased with that token, and raise
  :class:`LeaseLostError` otherwise. A message is ``done`` once, never twice.
* **Never run twice at the same time.** There is deliberately *no* time-based lease
  expiry: a slow task is never handed to a second worker because a timer ran out.
  Leases are recovered only by generation. Coretsia's lifecycle lock fences generations
  (a new one starts only after every worker of the old one has exited), so when a worker
  of generation *B* starts, every lease still held by any other generation belongs to a
  dead process, and :meth:`SqliteQueue.recover` can safely put it back. This holds only
  for **one pool per database**: a second pool (another project root) sharing the file
  would recover the first pool's live leases. Other programs should ``enqueue`` and read
  ``stats``, never ``lease``.

**Waiting without polling.** An idle worker must not spin on the database, and must wake
at once when the pool stops. SQLite has no notification of its own, so ``enqueue`` pokes
the waiters: each waiting worker binds an ``AF_UNIX`` datagram socket in a directory next
to the database (``<db>.notify/<pid>-<random>.sock``), and after every committed
``enqueue`` (and every ``recover`` that freed messages) the queue sends one byte to every
socket there. The worker ``select``\\ s on its socket and on the pool's stop descriptor
together, so it wakes for new work or for a stop, whichever comes first. Why this shape:

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

The database must be on a local file system (WAL needs shared memory between the
processes; SQLite's own rule). A connection must not cross a ``fork``: open the queue in
the process that uses it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import selectors
import socket
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

APPLICATION_ID: Final = 0x43525451
"""``PRAGMA application_id`` of a queue file ("CRTQ"): tells a queue from any other DB."""
SCHEMA_VERSION: Final = 1
"""``PRAGMA user_version`` of the schema below."""
STATES: Final = ("pending", "in_flight", "done", "failed")
"""The keys of :meth:`SqliteQueue.stats`, in display order (``in_flight`` = leased)."""
MAX_ERROR_CHARS: Final = 2000
"""How much of a failure's description is kept in ``last_error``."""

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


class SqliteQueue:
    """A durable queue in one SQLite file, safe for many processes at once.

    ``create`` (the default) creates the parent directory, the file and the schema on
    first use; with ``create=False`` a missing file or a file without the schema is a
    :class:`QueueError` (a read-only caller such as ``stats`` should not leave an empty
    database behind a typo). ``busy_timeout`` is how long, in seconds, a writer waits for
    another one before giving up: each transaction here is a few row changes, so waiting
    that long means something is badly wrong.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = True, busy_timeout: float = 10.0
    ) -> None:
        self._path = os.path.abspath(os.fspath(path))
        self._busy_timeout = busy_timeout
        self._sender: socket.socket | None = None
        if create:
            os.makedirs(os.path.dirname(self._path), exist_ok=True)
        elif not os.path.isfile(self._path):
            raise QueueError("the queue database does not exist")
        try:
            self._conn = sqlite3.connect(self._path, timeout=busy_timeout, isolation_level=None)
        except sqlite3.Error as error:
            raise QueueError(f"cannot open the queue database: {error}") from error
        try:
            self._configure()
            self._ensure_schema(create=create)
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

    # -- opening -------------------------------------------------------------------------

    def _configure(self) -> None:
        """WAL, a busy timeout and full durability, retried while another opener holds it.

        Switching a fresh file to WAL needs a moment of exclusive access; several workers
        opening a new database together can meet there, and SQLite does not always run the
        busy handler for it, so the switch is retried within the busy timeout.
        """
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            deadline = time.monotonic() + self._busy_timeout
            while True:
                try:
                    self._conn.execute("PRAGMA journal_mode = WAL").fetchone()
                    break
                except sqlite3.OperationalError as error:
                    if not _is_busy(error) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.01)
            self._conn.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as error:
            raise QueueError(f"cannot open the queue database: {error}") from error

    def _ensure_schema(self, *, create: bool) -> None:
        """Create the schema in an empty file, accept ours, refuse anything else."""
        try:
            with self._transaction(write=create):
                application_id = self._pragma("application_id")
                if application_id == APPLICATION_ID:
                    version = self._pragma("user_version")
                    if version != SCHEMA_VERSION:
                        raise QueueError(
                            f"the queue database has schema version {version}, "
                            f"this package reads version {SCHEMA_VERSION}"
                        )
                    return
                tables = self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                if application_id != 0 or tables != 0 or not create:
                    raise QueueError("the file is not a Coretsia queue database")
                # Statement by statement: executescript() would COMMIT our transaction first.
                for statement in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.Error as error:
            raise QueueError(f"cannot use the queue database: {error}") from error

    def _pragma(self, name: str) -> int:
        value = self._conn.execute(f"PRAGMA {name}").fetchone()[0]
        return int(value)

    @contextlib.contextmanager
    def _transaction(self, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction; ``BEGIN IMMEDIATE`` for writers so the lock is taken up front.

        A deferred transaction that reads and then writes can find, at its first write,
        that another process committed in between, and fail without waiting; taking the
        writer lock at ``BEGIN`` makes every read inside it current and every write safe.
        """
        self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
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

    def check(self) -> None:
        """Raise :class:`QueueError` unless the database answers and holds our schema."""
        try:
            with self._transaction(write=False):
                if self._pragma("application_id") != APPLICATION_ID:
                    raise QueueError("the file is not a Coretsia queue database")
                if self._pragma("user_version") != SCHEMA_VERSION:
                    raise QueueError("the queue database has another schema version")
                self._conn.execute("SELECT count(*) FROM messages WHERE 0").fetchone()
        except sqlite3.Error as error:
            raise QueueError(f"cannot use the queue database: {error}") from error

    def close(self) -> None:
        """Close the connection (and the notification sender); idempotent."""
        self._conn.close()
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
        with self._transaction() as conn:
            conn.executemany(
                "INSERT INTO messages (payload, enqueued_at) VALUES (?, ?)",
                ((payload, now) for payload in batch),
            )
        self.notify()
        return len(batch)

    def lease(self, generation: str) -> Message | None:
        """Take the oldest pending message for ``generation``, or None if there is none.

        The cheap check outside the transaction keeps idle workers, all woken by one
        poke, from queueing up for the writer lock only to find nothing.
        """
        exists = "SELECT EXISTS (SELECT 1 FROM messages WHERE state = 'pending')"
        if not self._conn.execute(exists).fetchone()[0]:
            return None
        token = secrets.token_hex(16)
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT id, payload, attempts FROM messages WHERE state = 'pending' "
                "ORDER BY id LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            conn.execute(
                "UPDATE messages SET state = 'leased', generation = ?, lease_token = ?, "
                "leased_at = ? WHERE id = ?",
                (generation, token, time.time(), row[0]),
            )
        return Message(
            id=row[0], payload=row[1], attempts=row[2], generation=generation, token=token
        )

    def ack(self, message: Message) -> None:
        """Mark a leased message done; :class:`LeaseLostError` if this lease no longer holds.

        The token check is what makes acknowledgement exactly-once: a second ``ack``, an
        ``ack`` after ``fail``, or one of a lease that was recovered all change nothing.
        """
        with self._transaction() as conn:
            changed = conn.execute(
                "UPDATE messages SET state = 'done', lease_token = NULL, settled_at = ? "
                "WHERE id = ? AND state = 'leased' AND lease_token = ?",
                (time.time(), message.id, message.token),
            ).rowcount
        if changed != 1:
            raise LeaseLostError(f"message {message.id} is not leased with this lease")

    def fail(self, message: Message, max_attempts: int, *, error: str | None = None) -> str:
        """Record a failed attempt: back to ``pending``, or ``failed`` at ``max_attempts``.

        Returns the new state. ``error`` (a short description) is kept in ``last_error``
        for whoever inspects failed messages. Same lease check as :meth:`ack`.
        """
        _check_max_attempts(max_attempts)
        with self._transaction() as conn:
            changed = conn.execute(
                "UPDATE messages SET attempts = attempts + 1, lease_token = NULL, "
                "state = CASE WHEN attempts + 1 >= ? THEN 'failed' ELSE 'pending' END, "
                "settled_at = CASE WHEN attempts + 1 >= ? THEN ? ELSE NULL END, "
                "last_error = ? WHERE id = ? AND state = 'leased' AND lease_token = ?",
                (
                    max_attempts,
                    max_attempts,
                    time.time(),
                    _clip(error),
                    message.id,
                    message.token,
                ),
            ).rowcount
            if changed != 1:
                raise LeaseLostError(f"message {message.id} is not leased with this lease")
            state: str = conn.execute(
                "SELECT state FROM messages WHERE id = ?", (message.id,)
            ).fetchone()[0]
        return state

    def recover(self, current_generation: str, *, max_attempts: int | None = None) -> int:
        """End every lease held by another generation; the number of leases ended.

        Safe only because the lifecycle lock fenced the other generations (every one of
        their workers has exited) and only one pool uses this database: see the module
        documentation. With ``max_attempts``, an interrupted lease counts as an attempt,
        and a message whose attempts reach it becomes ``failed`` instead of ``pending``:
        a message that kills its worker every time (a crash in native code, the OOM
        killer) would otherwise take the pool down at every start, for ever.
        """
        now = time.time()
        with self._transaction() as conn:
            if max_attempts is None:
                freed = conn.execute(
                    "UPDATE messages SET state = 'pending', lease_token = NULL "
                    "WHERE state = 'leased' AND generation IS NOT ?",
                    (current_generation,),
                ).rowcount
            else:
                _check_max_attempts(max_attempts)
                freed = conn.execute(
                    "UPDATE messages SET attempts = attempts + 1, lease_token = NULL, "
                    "state = CASE WHEN attempts + 1 >= ? THEN 'failed' ELSE 'pending' END, "
                    "settled_at = CASE WHEN attempts + 1 >= ? THEN ? ELSE NULL END, "
                    "last_error = 'interrupted: its worker exited before settling it' "
                    "WHERE state = 'leased' AND generation IS NOT ?",
                    (max_attempts, max_attempts, now, current_generation),
                ).rowcount
        if freed:
            self.notify()
        return int(freed)

    def stats(self) -> dict[str, int]:
        """How many messages are in each state: pending, in_flight (leased), done, failed."""
        counts = dict.fromkeys(STATES, 0)
        rows = self._conn.execute("SELECT state, count(*) FROM messages GROUP BY state")
        for state, count in rows:
            counts["in_flight" if state == "leased" else state] = count
        return counts

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
            os.makedirs(self._dir, exist_ok=True)
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


def _is_busy(error: sqlite3.OperationalError) -> bool:
    message = str(error).lower()
    return "locked" in message or "busy" in message


def _check_max_attempts(max_attempts: int) -> None:
    if type(max_attempts) is not int or max_attempts < 1:
        raise ValueError("max_attempts must be an integer of at least 1")


def _clip(error: str | None) -> str | None:
    return None if error is None else error[:MAX_ERROR_CHARS]
