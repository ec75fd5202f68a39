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

import os
import sqlite3
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from coretsia.sources.sqlite_queue import Message, QueueError, SqliteQueue, Waiter
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.internal.runtime.imports import import_target
from coretsia.worker_protocol.task_source import TaskSourceOptionError

if TYPE_CHECKING:  # of the SPI, only the option error is needed at run time
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


class SourceOptionError(TaskSourceOptionError):
    """A ``[worker.source_options]`` key is missing or breaks a rule (the value is not shown).

    The SPI's :class:`TaskSourceOptionError` under the name this module always raised.
    """


class SqliteTask:
    """One leased message; settled exactly once by ``complete`` or ``fail``.

    ``message.attempts`` is the number of earlier failed (or interrupted) attempts, and
    after ``fail`` the attribute ``settled_state`` says what became of the message:
    ``"pending"`` (it will be retried) or ``"failed"`` (it will not). It stays None until
    then (``"done"`` after ``complete``). The SPI's ``fail`` returns None, hence an
    attribute. ``attempt`` and ``retried`` are the same facts in the optional form the
    worker loop reports in ``task.failed`` (docs/task-sources.md).
    """

    __slots__ = ("_source", "message", "settled_state")

    def __init__(self, source: SqliteSource, message: Message) -> None:
        self._source = source
        self.message = message
        self.settled_state: str | None = None

    @property
    def attempt(self) -> int:
        """This attempt's number, from 1."""
        return self.message.attempts + 1

    @property
    def retried(self) -> bool | None:
        """After ``fail``: whether the message will run again; None before."""
        return None if self.settled_state is None else self.settled_state == "pending"

    def run(self) -> object:
        """Call the handler with the payload; its return value is the task's result."""
        return self._source.handler(self.message.payload)

    def complete(self, result: object) -> None:
        """Acknowledge: the message is done (raises if this lease was already settled)."""
        self._source.acknowledge(self.message)
        self.settled_state = "done"

    def fail(self, error: BaseException) -> None:
        """Record the failed attempt; the message is retried or, at the limit, failed."""
        self.settled_state = self._source.record_failure(self.message, error)


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
        """Raise unless the database opens, answers, and holds the queue schema."""
        self._open()[0].check()

    @property
    def handler(self) -> Handler:
        """What a task's ``run`` calls with its payload."""
        return self._handler

    def receive(self) -> SqliteTask | None:
        """The next message as a task; None only once a cooperative stop is requested."""
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
        queue = self._open()[0]
        if self._context.stopping:
            queue.ack(message)
        elif (ahead := queue.ack_and_lease(message, self._generation)) is not None:
            self._ahead.append(ahead)

    def record_failure(self, message: Message, error: BaseException) -> str:
        """Record a failed attempt of ``message``; its new state (``pending``/``failed``)."""
        return self._open()[0].fail(
            message, self._max_attempts, error=_describe(error, with_message=self._keep_messages)
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
    if context.task_type != TASK_TYPE:
        raise ValueError(f"the sqlite source serves task_type {TASK_TYPE!r} only")
    options: Mapping[str, object] = getattr(context, "options", None) or {}
    database, target, max_attempts, keep_error_messages = _parse_options(options)
    handler = _import_handler(target)
    generation = getattr(context, "generation", UNKNOWN_GENERATION)
    if not isinstance(generation, str) or not generation:
        generation = UNKNOWN_GENERATION
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
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise SourceOptionError(str(unknown[0]), ConfigRule.UNKNOWN_KEY)
    database = options.get("database", DEFAULT_DATABASE)
    if not isinstance(database, str):
        raise SourceOptionError("database", ConfigRule.WRONG_TYPE)
    if not database or "\0" in database:
        raise SourceOptionError("database", ConfigRule.UNSAFE_PATH)
    target = _handler_target(options.get("handler"))
    max_attempts = options.get("max_attempts", DEFAULT_MAX_ATTEMPTS)
    if type(max_attempts) is not int:  # not isinstance: a TOML boolean is an int too
        raise SourceOptionError("max_attempts", ConfigRule.WRONG_TYPE)
    if max_attempts < 1:
        raise SourceOptionError("max_attempts", ConfigRule.OUT_OF_RANGE)
    keep_error_messages = options.get("keep_error_messages", False)
    if type(keep_error_messages) is not bool:
        raise SourceOptionError("keep_error_messages", ConfigRule.WRONG_TYPE)
    return database, target, max_attempts, keep_error_messages


def _handler_target(target: object) -> str:
    """``handler`` present and shaped ``module:attr.path`` (dotted identifiers)."""
    if target is None:
        raise SourceOptionError("handler", ConfigRule.REQUIRED)
    if not isinstance(target, str):
        raise SourceOptionError("handler", ConfigRule.WRONG_TYPE)
    module_name, _, attr_path = target.partition(":")
    parts = [*module_name.split("."), *attr_path.split(".")]
    if not all(part.isidentifier() for part in parts):
        raise SourceOptionError("handler", ConfigRule.INVALID_TARGET)
    return target


def _import_handler(target: str) -> Handler:
    """Follow ``module:attr.path`` (shaped by :func:`_handler_target`); it must be callable."""
    try:
        handler = import_target(target)
    except (ImportError, AttributeError) as error:
        raise SourceOptionError("handler", ConfigRule.INVALID_TARGET) from error
    if not callable(handler):
        raise SourceOptionError("handler", ConfigRule.INVALID_TARGET)
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
