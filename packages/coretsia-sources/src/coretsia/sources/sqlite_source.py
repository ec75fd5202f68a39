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

Each worker builds its own source (``make_source`` runs in the worker process, after the
application's import path is set up), so the handler is imported there, once.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from coretsia.sources.sqlite_queue import Message, QueueError, SqliteQueue, Waiter

if TYPE_CHECKING:  # the SPI is typing only: nothing of it is needed at run time
    from coretsia.worker_protocol.task_source import TaskSourceContext

TASK_TYPE: Final = "queue"
DEFAULT_DATABASE: Final = "var/queue.sqlite3"
DEFAULT_MAX_ATTEMPTS: Final = 3
RECHECK_SECONDS: Final = 5.0
"""With notifications: how often an idle worker looks anyway, in case a poke was missed."""
FALLBACK_RECHECK_SECONDS: Final = 1.0
"""Without notifications (no socket could be bound): how often an idle worker looks."""
UNKNOWN_GENERATION: Final = "unknown"
_OPTIONS: Final = frozenset({"database", "handler", "max_attempts", "keep_error_messages"})

Handler = Callable[[str], object]


class SourceOptionError(ValueError):
    """A ``[worker.source_options]`` key is missing or breaks a rule (the value is not shown)."""

    def __init__(self, key: str, rule: str) -> None:
        super().__init__(f"worker.source_options.{key}: {rule}")
        self.key = key
        self.rule = rule


class SqliteTask:
    """One leased message; settled exactly once by ``complete`` or ``fail``.

    ``message.attempts`` is the number of earlier failed (or interrupted) attempts, and
    after ``fail`` the attribute ``settled_state`` says what became of the message:
    ``"pending"`` (it will be retried) or ``"failed"`` (it will not). It stays None until
    then (``"done"`` after ``complete``). The SPI's ``fail`` returns None, hence an
    attribute.
    """

    __slots__ = (
        "_handler",
        "_keep_messages",
        "_max_attempts",
        "_queue",
        "message",
        "settled_state",
    )

    def __init__(
        self,
        queue: SqliteQueue,
        message: Message,
        handler: Handler,
        max_attempts: int,
        *,
        keep_error_messages: bool = False,
    ) -> None:
        self._queue = queue
        self._handler = handler
        self._max_attempts = max_attempts
        self._keep_messages = keep_error_messages
        self.message = message
        self.settled_state: str | None = None

    def run(self) -> object:
        """Call the handler with the payload; its return value is the task's result."""
        return self._handler(self.message.payload)

    def complete(self, result: object) -> None:
        """Acknowledge: the message is done (raises if this lease was already settled)."""
        self._queue.ack(self.message)
        self.settled_state = "done"

    def fail(self, error: BaseException) -> None:
        """Record the failed attempt; the message is retried or, at the limit, failed."""
        self.settled_state = self._queue.fail(
            self.message,
            self._max_attempts,
            error=_describe(error, with_message=self._keep_messages),
        )


class SqliteSource:
    """The task source of one worker: leases messages for its generation, one at a time.

    On construction it opens the queue and recovers the leases left by earlier
    generations (the lifecycle lock guarantees their workers are gone), counting each as
    an interrupted attempt. If the database cannot be opened then, the error is kept and
    :meth:`assert_ready` tries once more and raises: the worker reports
    ``worker-task-source-not-ready`` (the backend is unusable), not a resolution failure.
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
        # Closed at interpreter exit too, so a cleanly exiting worker leaves no socket.
        self._resources: list[Waiter | SqliteQueue] = []
        self._finalizer = weakref.finalize(self, _close_all, self._resources)
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
        """Raise unless the database opens, answers, and holds the queue schema."""
        self._open()[0].check()

    def receive(self) -> SqliteTask | None:
        """The next message as a task; None only once a cooperative stop is requested."""
        queue, waiter = self._open()
        while True:
            if self._context.stopping:
                return None
            message = queue.lease(self._generation)
            if message is not None:
                return SqliteTask(
                    queue,
                    message,
                    self._handler,
                    self._max_attempts,
                    keep_error_messages=self._keep_messages,
                )
            if waiter.notifying:
                stopping = waiter.wait(RECHECK_SECONDS)
            else:
                stopping = self._context.wait_for_stop(FALLBACK_RECHECK_SECONDS)
            if stopping:
                return None

    def close(self) -> None:
        """Remove the poke socket and close the database; idempotent."""
        self._finalizer()


def make_source(context: TaskSourceContext) -> SqliteSource:
    """The factory named by the entry point: read and check the options, build the source.

    Options come from ``context.options`` (``[worker.source_options]``) and the generation
    id from ``context.generation``; both are read with ``getattr`` so that a context
    without them still gets a clear error (no handler) or a safe default (no recovery).
    """
    if context.task_type != TASK_TYPE:
        raise ValueError(f"the sqlite source serves task_type {TASK_TYPE!r} only")
    options: Mapping[str, object] = getattr(context, "options", None) or {}
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise SourceOptionError(str(unknown[0]), "unknown option")
    database = _database(options.get("database", DEFAULT_DATABASE))
    handler = _resolve_handler(options.get("handler"))
    max_attempts = options.get("max_attempts", DEFAULT_MAX_ATTEMPTS)
    if type(max_attempts) is not int or max_attempts < 1:
        raise SourceOptionError("max_attempts", "must be an integer of at least 1")
    keep_error_messages = options.get("keep_error_messages", False)
    if type(keep_error_messages) is not bool:
        raise SourceOptionError("keep_error_messages", "must be true or false")
    generation = getattr(context, "generation", UNKNOWN_GENERATION)
    if not isinstance(generation, str) or not generation:
        generation = UNKNOWN_GENERATION
    return SqliteSource(
        context,
        database,
        handler,
        generation=generation,
        max_attempts=max_attempts,
        keep_error_messages=keep_error_messages,
    )


make_source.task_type = TASK_TYPE  # type: ignore[attr-defined]
"""Read by the supervisor at ``start``: the task type this factory serves."""


def _database(value: object) -> str:
    """The database path: relative to the project root (the worker's working directory).

    An absolute path is kept as it is: a database that outlives a project root, such as
    one handed from each release directory to the next, or one shared by several pools.
    Generation ids are unique across roots, and a lease is recovered only once no live
    worker holds its generation's lock file, so the next root recovers what a dead one
    left leased and never what a running one holds (where ``flock`` is missing, not
    POSIX, the roots must never run at the same time).
    """
    if not isinstance(value, str) or not value or "\0" in value:
        raise SourceOptionError("database", "must be a non-empty path")
    return os.path.join(os.getcwd(), value)


def _resolve_handler(target: object) -> Handler:
    """Import ``module:attr.path`` and check it is callable."""
    if target is None:
        raise SourceOptionError("handler", "is required (module:callable)")
    if not isinstance(target, str):
        raise SourceOptionError("handler", "must be a string module:callable")
    module_name, _, attr_path = target.partition(":")
    if not module_name or not attr_path:
        raise SourceOptionError("handler", "must be a string module:callable")
    try:
        handler: object = importlib.import_module(module_name)
        for part in attr_path.split("."):
            handler = getattr(handler, part)
    except (ImportError, AttributeError) as error:
        raise SourceOptionError("handler", "cannot be imported") from error
    if not callable(handler):
        raise SourceOptionError("handler", "is not callable")
    return handler


def _describe(error: BaseException, *, with_message: bool = False) -> str:
    """``last_error``'s text: the exception's type, and its message only if asked.

    The type alone (``ValueError``, ``myapp.jobs.Refused``) is enough to triage and
    carries no payload data; the message may (the module documentation explains the
    ``keep_error_messages`` option). ``str(error)`` is not even called without it: a
    broken ``__str__`` cannot turn a recorded failure into a settlement failure.
    """
    kind = type(error)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    if not with_message:
        return name
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 - a __str__ that raises: the type is still worth keeping
        return name
    return f"{name}: {text}" if text else name


def _close_all(resources: list[Waiter | SqliteQueue]) -> None:
    for resource in resources:
        resource.close()
    resources.clear()


__all__ = [
    "QueueError",
    "SourceOptionError",
    "SqliteSource",
    "SqliteTask",
    "make_source",
]
