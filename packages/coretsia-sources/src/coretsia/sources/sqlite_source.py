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

and add work with ``coretsia-queue enqueue --db sqlite:///var/queue.sqlite3 PAYLOAD...`` or
:meth:`SqliteQueue.enqueue <coretsia.sources.sqlite_queue.SqliteQueue.enqueue>` from the
application. A handler that returns settles the message ``done``; one that raises
records a failed attempt (retried at once by the next free worker, until
``max_attempts``). The handler's return value is passed to ``complete`` and not stored.

A failed attempt is recorded in the message's ``last_error`` as the exception's type only
(``ValueError``, ``myapp.jobs.Refused``): an exception's message often quotes the data
it choked on, that is payload data, and ``last_error`` is shown to whoever runs
``coretsia-queue failed``. ``keep_error_messages = true`` keeps ``Type: message``
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
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Final, NamedTuple, TypeVar

from coretsia.sources._queue_health import fault
from coretsia.sources._queue_source import STORE_ERRORS, QueueSource
from coretsia.sources._source_common import (
    DEFAULT_MAX_ATTEMPTS,
    TASK_TYPE,
    UNKNOWN_GENERATION,
    Handler,
    QueueTask,
    SourceOptionError,
    read_context,
)
from coretsia.sources._source_options import COMMON_OPTIONS, Option, Text, parse
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
_OPTIONS: Final = {
    "database": Option(
        Text(lambda path: bool(path) and "\0" not in path),
        DEFAULT_DATABASE,
        ConfigRule.UNSAFE_PATH,
    ),
    **COMMON_OPTIONS,
}
_STORAGE_REASONS: Final = {"corrupt": Reason.TASK_SOURCE_CORRUPT, "full": Reason.TASK_SOURCE_FULL}
T = TypeVar("T")


class SqliteTask(QueueTask):
    """One leased message of the SQLite queue (:class:`QueueTask`'s settlement rules)."""

    __slots__ = ()


class SqliteSource(QueueSource[SqliteQueue, SqliteTask]):
    """The task source of one worker: leases messages for its generation, one at a time.

    On construction it opens the queue and recovers the leases left by earlier
    generations (the lifecycle lock guarantees their workers are gone), counting each as
    an interrupted attempt. If the database cannot be opened then, the error is kept and
    :meth:`assert_ready` tries once more and raises: the worker reports
    ``worker-task-source-not-ready`` (the backend is unusable), not a resolution failure;
    ``worker-task-source-corrupt`` or ``worker-task-source-full`` when the file is damaged
    or the disk is full, which is reported so from ``receive`` and the settlements too.
    While idle it waits on the queue's poke socket and the pool's stop descriptor
    together: new work and a cooperative stop both wake it at once. The loop itself is
    :class:`~coretsia.sources._queue_source.QueueSource`'s.
    """

    task_class = SqliteTask

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
        self._database = database
        self._waiter: Waiter | None = None
        super().__init__(
            context,
            handler,
            generation=generation,
            max_attempts=max_attempts,
            keep_error_messages=keep_error_messages,
        )

    def _connect(self) -> SqliteQueue:
        queue = SqliteQueue(self._database, synchronous="NORMAL")
        try:
            # Alive before anything else: no recoverer may take what we will lease.
            queue.hold(self._generation)
            if self._generation != UNKNOWN_GENERATION:
                # Without a generation id a dead lease cannot be told from a live one
                # of a sibling worker: recover nothing rather than risk a double run.
                queue.recover(self._generation, max_attempts=self._max_attempts)
            # Bound before the first look at the queue: no poke can fall in between.
            self._waiter = queue.waiter(self._context.stop_fileno())
        except BaseException:
            queue.close()
            raise
        self._held.extras.append(self._waiter)
        return queue

    @property
    def queue(self) -> SqliteQueue:
        """The queue this source leases from (opened if it is not yet)."""
        return self._open()

    @property
    def notifying(self) -> bool:
        """True when enqueues wake this worker at once (False: it re-checks every second)."""
        self._open()
        return self._waiter is not None and self._waiter.notifying

    def assert_ready(self) -> None:
        """Raise unless the database opens, answers, holds the queue schema and has room.

        The worker of slot 0 also runs SQLite's ``quick_check`` (a read of the whole
        file, measured in ``docs/performance.md#timings-the-code-refers-to``), so a
        damaged file fails the start (``worker-task-source-corrupt``) instead of the first
        task that meets the damage; one worker checking is enough for that, and keeps the
        others' boot short.
        """
        self._call(self._check, waiting=False)

    def _check(self, queue: SqliteQueue) -> None:
        if getattr(self._context, "slot", 0) == 0:
            queue.verify(thorough=False)
        else:
            queue.check()
        queue.check_space()

    def _lease(self, queue: SqliteQueue) -> Message | None:
        return queue.lease(self._generation)

    def _ack_and_lease(self, queue: SqliteQueue, message: Message) -> Message | None:
        return queue.ack_and_lease(message, self._generation)

    def _wait(self, queue: SqliteQueue) -> None:
        if self._waiter is not None and self._waiter.notifying:
            self._waiter.wait(RECHECK_SECONDS)
        else:
            self._context.wait_for_stop(FALLBACK_RECHECK_SECONDS)

    def _call(self, operation: Callable[[SqliteQueue], T], *, waiting: bool) -> T:
        with self._storage_named():
            return operation(self._open())

    def _giving_back(self) -> contextlib.AbstractContextManager[None]:
        return self._storage_named()

    @contextlib.contextmanager
    def _storage_named(self) -> Iterator[None]:
        """A damaged file or a full disk raised as the SPI's TaskSourceStorageError, so
        the worker reports ``worker-task-source-corrupt`` or ``-full``, not the step."""
        try:
            yield
        except STORE_ERRORS as error:
            kind = fault(error, self._database)
            if kind is None:
                raise
            raise TaskSourceStorageError(_STORAGE_REASONS[kind]) from error


def make_source(context: TaskSourceContext) -> SqliteSource:
    """The factory named by the entry point: check the options, import the handler, build.

    Options come from ``context.options`` (``[worker.source_options]``) and the generation
    id from ``context.generation``; both are read with ``getattr`` so that a context
    without them still gets a clear error (no handler) or a safe default (no recovery).
    """
    options, handler, generation = read_context(context, "sqlite", _parse_options)
    # Relative to the project root, the worker's working directory. An absolute path is
    # kept as it is: a database that outlives a project root, such as one handed from
    # each release directory to the next, or one shared by several pools. Generation ids
    # are unique across roots, and a lease is recovered only once no live worker holds
    # its generation's lock file, so the next root recovers what a dead one left leased
    # and never what a running one holds (where ``flock`` is missing, not POSIX, the
    # roots must never run at the same time).
    path = os.path.join(os.getcwd(), options.database)
    return SqliteSource(
        context,
        path,
        handler,
        generation=generation,
        max_attempts=options.max_attempts,
        keep_error_messages=options.keep_error_messages,
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


class SqliteOptions(NamedTuple):
    """``[worker.source_options]`` of the ``sqlite`` source, checked."""

    database: str
    handler: str
    max_attempts: int
    keep_error_messages: bool


def _parse_options(options: Mapping[str, object]) -> SqliteOptions:
    """Every option checked (:mod:`coretsia.sources._source_options`); imports nothing."""
    return SqliteOptions(**parse(options, _OPTIONS))


__all__ = [
    "QueueError",
    "SourceOptionError",
    "SqliteSource",
    "SqliteTask",
    "check_options",
    "make_source",
]
