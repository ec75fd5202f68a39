"""The ``sqlite`` task source: a pool of queue workers fed by :mod:`.sqlite_queue`.

Installed as the entry point ``sqlite`` of the group ``coretsia.worker.task_sources``; it
serves the task type ``queue``. Configure it in ``coretsia.toml``::

    [worker]
    task_type = "queue"

    [worker.source_options]
    database = "var/queue.sqlite3"   # relative to the project root; the default
    handler = "myapp.jobs:handle"    # required: called with each payload (a str)
    max_attempts = 3                 # failed attempts before a message is `failed`
    keep_error_messages = false      # true: last_error keeps "Type: message", not "Type"

and add work with ``coretsia-sqlite-queue enqueue --db var/queue.sqlite3 PAYLOAD...`` or
:meth:`SqliteQueue.enqueue <coretsia.sources.sqlite_queue.SqliteQueue.enqueue>` from the
application. A handler that returns settles the message ``done``; one that raises
records a failed attempt (retried at once by the next free worker, until
``max_attempts``). The handler's return value is passed to ``complete`` and not stored.

A failed attempt is recorded in the message's ``last_error`` as the exception's type only
(``ValueError``, ``myapp.jobs.Refused``): an exception's message often quotes the data
it choked on, that is payload data, and ``last_error`` is shown to whoever runs
``coretsia-sqlite-queue failed``. ``keep_error_messages = true`` keeps ``Type: message``
(clipped) instead: easier triage, at the price of that privacy.

Workers open the queue with ``synchronous=NORMAL``: a power cut can undo a recent lease
or acknowledgement, so a message may run once more (at least once still holds); see
:mod:`coretsia.sources.sqlite_queue`.

**Leasing ahead.** ``complete`` acknowledges its message and leases the next pending one
in the same transaction (:meth:`SqliteQueue.ack_and_lease`), which the worker's next
``receive`` returns at once: one turn at the writer lock per task instead of two. The
acknowledgement is as final as before when ``complete`` returns. A worker holds at most
one message ahead; it gives it back (``pending`` again, no attempt counted) when it sees a
stop in ``receive`` or closes the source, at a clean exit too, and leases none once a stop
is requested. A worker SIGKILLed while holding one leaves it leased, as it leaves its
running task: recovered once its generation is gone, counted as an interrupted attempt.
A worker waiting for its turn to retire keeps its message ahead until it leaves.

Each worker builds its own source (``make_source`` runs in the worker process, after the
application's import path is set up), so the handler is imported there, once. The rest of
the options are checked earlier too: ``make_source.check_options`` (the SPI's optional
check) runs in the supervisor at ``start`` and imports nothing, so a missing handler, a
wrong type or an unknown key is ``worker-config-invalid`` before any worker spawns; only
whether the handler imports and is callable is left to the worker.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import weakref
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Final

from coretsia.sources._queue_health import fault
from coretsia.sources._source_common import (
    COMMON_OPTIONS,
    DEFAULT_MAX_ATTEMPTS,
    TASK_TYPE,
    UNKNOWN_GENERATION,
    Handler,
    QueueTask,
    SourceOptionError,
    check_task_type,
    check_unknown,
    common_options,
    context_generation,
    context_options,
    describe,
    import_handler,
)
from coretsia.sources.sqlite_queue import Message, QueueError, SqliteQueue, Waiter
from coretsia.worker_protocol.catalogue import ConfigRule, Reason
from coretsia.worker_protocol.task_source import TaskSourceStorageError

if TYPE_CHECKING:
    from coretsia.worker_protocol.task_source import TaskSourceContext

DEFAULT_DATABASE: Final = "var/queue.sqlite3"
RECHECK_SECONDS: Final = 5.0
"""With notifications: how often an idle worker looks anyway, in case a poke was missed."""
FALLBACK_RECHECK_SECONDS: Final = 1.0
"""Without notifications (no socket could be bound): how often an idle worker looks."""
_OPTIONS: Final = COMMON_OPTIONS | {"database"}
_STORAGE_REASONS: Final = {"corrupt": Reason.TASK_SOURCE_CORRUPT, "full": Reason.TASK_SOURCE_FULL}


class SqliteTask(QueueTask):
    """One leased message of the SQLite queue (:class:`QueueTask`'s settlement rules)."""

    __slots__ = ()


class SqliteSource:
    """The task source of one worker: leases messages for its generation, one at a time.

    On construction it opens the queue and recovers the leases left by earlier
    generations (the lifecycle lock guarantees their workers are gone), counting each as
    an interrupted attempt. If the database cannot be opened then, the error is kept and
    :meth:`assert_ready` tries once more and raises: the worker reports
    ``worker-task-source-not-ready`` (the backend is unusable), not a resolution failure;
    ``worker-task-source-corrupt`` or ``worker-task-source-full`` when the file is damaged
    or the disk is full, which is reported so from ``receive`` and the settlements too.
    While idle it waits on the queue's poke socket and the pool's stop descriptor
    together: new work and a cooperative stop both wake it at once.
    """

    def __init__(
        self,
        context: TaskSourceContext,
        database: str,
        handler: Handler,
        *,
        generation: str,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        keep_error_messages: bool = False,
    ) -> None:
        self._context = context
        self._database = database
        self._handler = handler
        self._generation = generation
        self._max_attempts = max_attempts
        self._keep_messages = keep_error_messages
        self._queue: SqliteQueue | None = None
        self._waiter: Waiter | None = None
        # The message leased with the last acknowledgement (at most one), shared with the
        # finalizer: a worker that leaves without another receive() gives it back.
        self._ahead: list[Message] = []
        # Closed at interpreter exit too, so a cleanly exiting worker leaves no socket.
        self._resources: list[Waiter | SqliteQueue] = []
        self._finalizer = weakref.finalize(self, _close_all, self._resources, self._ahead)
        try:
            self._open()
        except (QueueError, sqlite3.Error, OSError):
            pass  # assert_ready tries again and reports it

    def _open(self) -> tuple[SqliteQueue, Waiter]:
        """The queue and the waiter, opened (and leases recovered) on first success."""
        if self._queue is None or self._waiter is None:
            queue = SqliteQueue(self._database, synchronous="NORMAL")
            try:
                # Alive before anything else: no recoverer may take what we will lease.
                queue.hold(self._generation)
                if self._generation != UNKNOWN_GENERATION:
                    # Without a generation id a dead lease cannot be told from a live one
                    # of a sibling worker: recover nothing rather than risk a double run.
                    queue.recover(self._generation, max_attempts=self._max_attempts)
                # Bound before the first look at the queue: no poke can fall in between.
                waiter = queue.waiter(self._context.stop_fileno())
            except BaseException:
                queue.close()
                raise
            self._queue, self._waiter = queue, waiter
            self._resources += [waiter, queue]
        return self._queue, self._waiter

    @property
    def queue(self) -> SqliteQueue:
        """The queue this source leases from (opened if it is not yet)."""
        return self._open()[0]

    @property
    def notifying(self) -> bool:
        """True when enqueues wake this worker at once (False: it re-checks every second)."""
        return self._open()[1].notifying

    def assert_ready(self) -> None:
        """Raise unless the database opens, answers, holds the queue schema and has room.

        The worker of slot 0 also runs SQLite's ``quick_check`` (a read of the whole
        file: about 30 ms for 20,000 messages), so a damaged file fails the start
        (``worker-task-source-corrupt``) instead of the first task that meets the damage;
        one worker checking is enough for that, and keeps the others' boot short.
        """
        with self._storage_named():
            queue = self._open()[0]
            if getattr(self._context, "slot", 0) == 0:
                queue.verify(thorough=False)
            else:
                queue.check()
            queue.check_space()

    @contextlib.contextmanager
    def _storage_named(self) -> Iterator[None]:
        """A damaged file or a full disk raised as the SPI's TaskSourceStorageError, so
        the worker reports ``worker-task-source-corrupt`` or ``-full``, not the step."""
        try:
            yield
        except (QueueError, sqlite3.Error, OSError) as error:
            kind = fault(error, self._database)
            if kind is None:
                raise
            raise TaskSourceStorageError(_STORAGE_REASONS[kind]) from error

    @property
    def handler(self) -> Handler:
        """What a task's ``run`` calls with its payload."""
        return self._handler

    def receive(self) -> SqliteTask | None:
        """The next message as a task; None only once a cooperative stop is requested."""
        with self._storage_named():
            return self._receive()

    def _receive(self) -> SqliteTask | None:
        queue, waiter = self._open()
        while True:
            if self._context.stopping:
                self._release_ahead()
                return None
            message = self._ahead.pop() if self._ahead else queue.lease(self._generation)
            if message is not None:
                return SqliteTask(self, message)
            if waiter.notifying:
                stopping = waiter.wait(RECHECK_SECONDS)
            else:
                stopping = self._context.wait_for_stop(FALLBACK_RECHECK_SECONDS)
            if stopping:
                return None

    def acknowledge(self, message: Message) -> None:
        """Settle ``message`` done, and lease the next one ahead in the same transaction.

        The worker asks for its next task right after this, so leasing it now costs no
        turn at the writer lock of its own (module documentation). Not while stopping:
        the message would only be given back.
        """
        with self._storage_named():
            queue = self._open()[0]
            if self._context.stopping:
                queue.ack(message)
            elif (ahead := queue.ack_and_lease(message, self._generation)) is not None:
                self._ahead.append(ahead)

    def record_failure(self, message: Message, error: BaseException) -> str:
        """Record a failed attempt of ``message``; its new state (``pending``/``failed``)."""
        with self._storage_named():
            return self._open()[0].fail(
                message, self._max_attempts, error=describe(error, with_message=self._keep_messages)
            )

    def _release_ahead(self) -> None:
        """Give back the message leased ahead, if any: this worker will not run it."""
        if self._ahead and self._queue is not None:
            self._queue.release(self._ahead.pop())

    def close(self) -> None:
        """Give back a message leased ahead, remove the poke socket, close; idempotent."""
        self._finalizer()


def make_source(context: TaskSourceContext) -> SqliteSource:
    """The factory named by the entry point: check the options, import the handler, build.

    Options come from ``context.options`` (``[worker.source_options]``) and the generation
    id from ``context.generation``; both are read with ``getattr`` so that a context
    without them still gets a clear error (no handler) or a safe default (no recovery).
    """
    check_task_type(context, "sqlite")
    database, target, max_attempts, keep_error_messages = _parse_options(context_options(context))
    handler = import_handler(target)
    generation = context_generation(context)
    # Relative to the project root, the worker's working directory. An absolute path is
    # kept as it is: a database that outlives a project root, such as one handed from
    # each release directory to the next, or one shared by several pools. Generation ids
    # are unique across roots, and a lease is recovered only once no live worker holds
    # its generation's lock file, so the next root recovers what a dead one left leased
    # and never what a running one holds (where ``flock`` is missing, not POSIX, the
    # roots must never run at the same time).
    path = os.path.join(os.getcwd(), database)
    return SqliteSource(
        context,
        path,
        handler,
        generation=generation,
        max_attempts=max_attempts,
        keep_error_messages=keep_error_messages,
    )


def check_options(options: Mapping[str, object]) -> None:
    """Raise :class:`SourceOptionError` for the first option that breaks a rule.

    The SPI's ``check_options``: the supervisor calls it at ``start``, where application
    code is never imported, so it imports nothing and touches no file. ``make_source``
    runs the same checks, then imports the handler.
    """
    _parse_options(options)


make_source.task_type = TASK_TYPE  # type: ignore[attr-defined]
"""Read by the supervisor at ``start``: the task type this factory serves."""
make_source.check_options = check_options  # type: ignore[attr-defined]
"""Called by the supervisor at ``start`` with ``[worker.source_options]``."""


def _parse_options(options: Mapping[str, object]) -> tuple[str, str, int, bool]:
    """The database path, the handler's ``module:attr``, ``max_attempts`` and
    ``keep_error_messages``, checked.

    Checks in a fixed order (unknown keys first), so one file always reports the same
    error. Imports nothing: whether the handler imports is the worker's check.
    """
    check_unknown(options, _OPTIONS)
    database = options.get("database", DEFAULT_DATABASE)
    if not isinstance(database, str):
        raise SourceOptionError("database", ConfigRule.WRONG_TYPE)
    if not database or "\0" in database:
        raise SourceOptionError("database", ConfigRule.UNSAFE_PATH)
    return (database, *common_options(options))


def _close_all(resources: list[Waiter | SqliteQueue], ahead: list[Message]) -> None:
    """Give back a message leased ahead (at a clean exit too), then close everything."""
    try:
        for resource in resources:
            if ahead and isinstance(resource, SqliteQueue):
                resource.release(ahead.pop())
    except (QueueError, sqlite3.Error, OSError):
        pass  # still leased: recovered, as a worker's lease is, once its generation is gone
    finally:
        for resource in resources:
            resource.close()
        resources.clear()


__all__ = [
    "QueueError",
    "SourceOptionError",
    "SqliteSource",
    "SqliteTask",
    "check_options",
    "make_source",
]
