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

**Layout.** This module is the queue's public face (:class:`SqliteQueue`, and every name
users import) and keeps the generation locks and the wake-ups; the rest has a module of
its own: the connection and its busy retry (``_queue_connection``), the schema
(``_queue_schema``), the message moves (``_queue_messages``), an operator's tools
(``_queue_maintenance``), the pokes and the :class:`Waiter` (``_queue_notify``), the
errors and records (``_queue_records``), private files and generation locks
(``_private_files``, ``_generation_locks``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Literal

from coretsia.sources import _queue_maintenance as maintenance
from coretsia.sources import _queue_messages as messages
from coretsia.sources import _queue_schema as schema
from coretsia.sources._generation_locks import GenerationLocks
from coretsia.sources._private_files import create_private_file, make_private_dirs
from coretsia.sources._queue_connection import Connection
from coretsia.sources._queue_health import check_space
from coretsia.sources._queue_maintenance import STATES
from coretsia.sources._queue_messages import INTERRUPTED, MAX_ERROR_CHARS
from coretsia.sources._queue_notify import NOTIFY_SUFFIX, Notifier, Waiter
from coretsia.sources._queue_records import (
    FailedMessage,
    LeaseLostError,
    Message,
    QueueCorruptError,
    QueueError,
    QueueFullError,
    QueueSchemaError,
    Retried,
    Synchronous,
)
from coretsia.sources._queue_schema import APPLICATION_ID, SCHEMA_VERSION

__all__ = [
    "APPLICATION_ID",
    "INTERRUPTED",
    "MAX_ERROR_CHARS",
    "SCHEMA_VERSION",
    "STATES",
    "FailedMessage",
    "LeaseLostError",
    "Message",
    "QueueCorruptError",
    "QueueError",
    "QueueFullError",
    "QueueSchemaError",
    "Retried",
    "SqliteQueue",
    "Synchronous",
    "Waiter",
]

# Defined in private modules, these are public here, and say so: a qualified name is
# data, not decoration (the ``sqlite`` source records a failure as ``<module>.<type>`` in
# ``last_error``), so where a class is written must not change what a database holds.
for _public in (
    QueueError,
    QueueSchemaError,
    QueueCorruptError,
    QueueFullError,
    LeaseLostError,
    Message,
    FailedMessage,
    Retried,
    Waiter,
):
    _public.__module__ = __name__
del _public


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
        self._locks = GenerationLocks(self._path, busy_timeout)
        self._notifier = Notifier(self._path + NOTIFY_SUFFIX)
        if create:
            make_private_dirs(os.path.dirname(self._path))
            create_private_file(self._path)
        elif not os.path.isfile(self._path):
            raise QueueError("the queue database does not exist")
        self._conn = Connection(self._path, busy_timeout=busy_timeout, synchronous=synchronous)
        try:
            # The schema first: a file that is not ours is refused before anything in it
            # changes (switching to WAL rewrites its header).
            schema.ensure_schema(self._conn, create=create)
            self._conn.configure()
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
        return self._notifier.directory

    @property
    def generations_dir(self) -> str:
        """The directory of the generations' lock files (``<db>.generations``)."""
        return self._locks.directory

    def check(self) -> None:
        """Raise :class:`QueueError` unless the database answers and holds our schema."""
        schema.check(self._conn)

    def verify(self, *, thorough: bool = True) -> None:
        """Raise :class:`QueueCorruptError` unless the file is sound, then :meth:`check`.

        ``thorough``: SQLite's ``integrity_check`` (``coretsia-queue check``); otherwise
        its ``quick_check``, which skips comparing the index with the table (what a
        worker runs at start). Both read the whole file: see
        :func:`coretsia.sources._queue_schema.check_integrity` for their cost.
        """
        schema.check_integrity(self._conn, thorough=thorough)
        self.check()

    def check_space(self) -> None:
        """Raise :class:`QueueFullError` if the file system of the database is full."""
        check_space(self._path)

    def close(self) -> None:
        """Close the connection, let go of held generations and the sender; idempotent."""
        self._conn.close()
        self._locks.release_all()
        self._notifier.close()

    def __enter__(self) -> SqliteQueue:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the queue -----------------------------------------------------------------------

    def enqueue(self, payloads: Iterable[str]) -> int:
        """Add messages (all or none, in order) and wake the waiting workers; the count.

        The payloads are all read before the writer lock is taken. The commit is always
        ``synchronous=FULL``: once this returns, the messages survive a power cut.
        """
        count = messages.enqueue(self._conn, payloads)
        if count:
            self.notify()
        return count

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

        Idle workers woken together by one poke do not queue for the writer lock only to
        find nothing: whether anything is pending is asked first, with a read.
        """
        if not self._locks.is_held(generation):
            self.hold(generation)  # before the first lease: recovery must see us alive
        return messages.lease(self._conn, generation)

    def ack_and_lease(self, message: Message, generation: str) -> Message | None:
        """:meth:`ack` ``message`` and lease the next pending one, in one transaction.

        Half the commits of an ``ack`` then a ``lease``, and one turn at the writer lock
        instead of two: the lock is what every worker queues for, so this is what lets
        more workers mean more throughput. The acknowledgement is as final as
        :meth:`ack`'s once this returns (:class:`LeaseLostError` if the lease no longer
        holds, and then nothing is leased). None when nothing was pending.
        """
        return messages.ack_and_lease(self._conn, message, generation)

    def release(self, message: Message) -> bool:
        """Give a leased message back, never run: ``pending`` again, no attempt counted.

        For a message leased ahead (:meth:`ack_and_lease`) that its worker will not run
        after all (it is stopping). False if the lease no longer held (nothing changed).
        Wakes the waiting workers.
        """
        released = messages.release(self._conn, message)
        if released:
            self.notify()
        return released

    def ack(self, message: Message) -> None:
        """Mark a leased message done; :class:`LeaseLostError` if this lease no longer holds.

        The token check is what makes acknowledgement exactly-once: a second ``ack``, an
        ``ack`` after ``fail``, or one of a lease that was recovered all change nothing.
        """
        messages.ack(self._conn, message)

    def fail(self, message: Message, max_attempts: int, *, error: str | None = None) -> str:
        """Record a failed attempt: back to ``pending``, or ``failed`` at ``max_attempts``.

        Returns the new state (``"pending"``: it will be retried; ``"failed"``: it will
        not). ``error`` (a short description) is kept in ``last_error`` for whoever
        inspects failed messages. Same lease check as :meth:`ack`.
        """
        return messages.fail(self._conn, message, max_attempts, error)

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
            messages.check_max_attempts(max_attempts)
        self.hold(current_generation)
        candidates = messages.leased_generations(self._conn, current_generation)
        freed = 0
        if candidates:
            with self._locks.claim_dead(candidates) as dead:
                if dead:
                    freed = messages.end_leases(self._conn, dead, max_attempts)
        self._locks.sweep()
        if freed:
            self.notify()
        return freed

    def stats(self) -> dict[str, int]:
        """How many messages are in each state: pending, in_flight (leased), done, failed."""
        return maintenance.stats(self._conn)

    # -- an operator's tools -------------------------------------------------------------

    def failed(self) -> list[FailedMessage]:
        """The messages that failed for good, oldest id first (never their payloads)."""
        return maintenance.failed(self._conn)

    def retry(self, ids: Iterable[int] | Literal["all"]) -> Retried:
        """Put failed messages back to ``pending`` with ``attempts`` reset to 0.

        ``"all"`` retries every failed message. Given ids, each failed one is retried and
        the others are reported (unknown, or in another state) and left alone: retrying
        a pending, leased or done message would run it again. ``last_error`` is kept
        (what the last attempt died of is still worth knowing). Wakes the workers.
        """
        result = maintenance.retry(self._conn, ids)
        if result.retried:
            self.notify()
        return result

    def purge(self, state: Literal["done", "failed"]) -> int:
        """Delete every settled message in ``state``; how many were deleted.

        In batches of a few hundred rows, one transaction each, so that purging a large
        queue never keeps the workers from the writer lock for long.
        """
        return maintenance.purge(self._conn, state)

    # -- notification --------------------------------------------------------------------

    def notify(self) -> None:
        """Poke every waiting worker; never raises (the data is committed already)."""
        self._notifier.notify()

    def waiter(self, stop_fileno: int | None = None) -> Waiter:
        """A :class:`Waiter` for this database that also wakes when ``stop_fileno`` is readable."""
        return Waiter(self.notify_dir, stop_fileno)
