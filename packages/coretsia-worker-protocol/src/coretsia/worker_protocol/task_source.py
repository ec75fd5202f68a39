"""The task-source SPI of seed 000, as typing Protocols. Public and stable.

A task source is how work reaches a worker: a queue consumer, an HTTP listener, anything
that hands out units of work one at a time. It depends on this module only; Coretsia
discovers it through the entry-point group ``coretsia.worker.task_sources`` or the
``task_source = "module:factory"`` configuration key, resolves it once at ``start``, and
each worker imports the frozen ``module:factory`` and calls it with a
:class:`TaskSourceContext`.

The contract, in the order the worker uses it:

1. ``factory(context)`` builds the source (failure: ``worker-task-source-unresolvable``;
   an object that is not a :class:`TaskSource`: ``worker-task-source-invalid``).
2. ``source.assert_ready()`` raises if the source cannot serve (its broker is down...):
   ``worker-task-source-not-ready``. Only after it passes is the worker ready.
3. ``source.receive()`` blocks until a task is available and returns it, or returns
   ``None`` when, and only when, a cooperative stop was requested. It must wake at once
   on stop: wait on ``context.stop_fileno()`` (it becomes readable at stop) alongside the
   source's own descriptor, or call ``context.wait_for_stop(timeout)``. Returning ``None``
   for an empty queue, or a synthetic no-op task, is a contract violation
   (``worker-task-source-terminated``).
4. The worker runs ``task.run()`` as one unit of work, then settles it exactly once:
   ``task.complete(result)`` on success, ``task.fail(error)`` with the original exception
   on failure. A failing ``complete`` never triggers ``fail``.
5. A source whose backend goes away while the pool runs may ride the outage out
   itself: it calls ``context.report_unavailable(fault)`` (``health`` then fails with
   ``worker-task-source-unavailable`` and ``status`` counts the worker as reconnecting),
   keeps blocking in ``receive`` or in a settlement while it reconnects, and calls
   ``context.report_available()`` once it is back. A settlement that, after such an
   outage, finds its task's lease taken back calls ``context.report_lease_lost()`` and
   returns without settling again (another worker may run the task). A source that gives
   up raises :class:`TaskSourceUnavailableError`: the worker fails as for any other
   error of ``receive`` or of a settlement, and the error's ``fault`` travels with the
   reason token. So does one raised by ``assert_ready``.

A source whose storage is damaged or full says so: raised from ``assert_ready``,
``receive``, ``complete`` or ``fail``, a :class:`TaskSourceStorageError` ends the worker
with its own reason (``worker-task-source-corrupt``, ``worker-task-source-full``) instead
of the step's (``not-ready``, ``receive-failed``, ``settlement-failed``), so an operator
reads the cause, not the step it broke.

Before all of that, at ``start``, the supervisor may check the options. A factory may
carry an attribute ``check_options``: a callable taking the ``[worker.source_options]``
mapping (read-only) and returning ``None``, or raising :class:`TaskSourceOptionError`
with the option's ``key`` and the broken :class:`~coretsia.worker_protocol.catalogue.ConfigRule`.
For an installed source (an entry point, whose factory ``start`` imports anyway) the
supervisor calls it before any generation is published or worker spawned, and reports
``worker-config-invalid`` (exit 6) naming ``worker.source_options.<key>`` and the rule,
like any other configuration error. Any other exception from it is a broken source, not
a broken configuration: ``start`` fails with ``worker-task-source-unresolvable`` (exit 1,
the exception kept as the cause, shown only with ``CORETSIA_DEBUG=1``). The check runs in
the supervisor, which never imports application code: it must not import any (no
handler, no plugin), nor open files or connections; what needs an import stays the
factory's check, in the worker. An application's own ``module:factory`` is not imported
at ``start``, so its check is not called there: its options are checked by the factory,
in the workers, as before. A factory may call its own ``check_options`` too, so each rule
is written once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from coretsia.worker_protocol.catalogue import ConfigRule, Reason, SourceFault

__all__ = [
    "STORAGE_REASONS",
    "Task",
    "TaskSource",
    "TaskSourceContext",
    "TaskSourceFactory",
    "TaskSourceOptionError",
    "TaskSourceStorageError",
    "TaskSourceUnavailableError",
]

STORAGE_REASONS = frozenset({Reason.TASK_SOURCE_CORRUPT, Reason.TASK_SOURCE_FULL})
"""The reasons a :class:`TaskSourceStorageError` may carry."""


@runtime_checkable
class TaskSourceContext(Protocol):
    """What a worker tells its task source: safe facts and the cooperative stop signal."""

    @property
    def task_type(self) -> str:
        """``queue`` or ``http``: the task type the pool was configured for."""

    @property
    def slot(self) -> int:
        """The worker's slot index in the pool (0-based; stable across recycles)."""

    @property
    def generation(self) -> str:
        """The id of the generation this worker booted from; unique per ``start``.

        A durable source uses it to recover what a previous generation left leased.
        """

    @property
    def options(self) -> Mapping[str, object]:
        """The ``[worker.source_options]`` table (strings, integers, booleans), read-only."""

    @property
    def stopping(self) -> bool:
        """True once a cooperative stop has been requested.

        For this worker, that is the pool's stop or its own recycling: once it asked to
        retire (``max_requests``), the supervisor's go-ahead is a stop of this worker
        while it waits in ``receive`` (never while a task runs).
        """

    def stop_fileno(self) -> int:
        """A descriptor that becomes readable when a cooperative stop is requested.

        Wait on it, never read it: it stays readable, and the worker reads nothing of
        it. Poll it with ``select``/``poll`` or an event loop's reader, as a pipe.
        """

    def wait_for_stop(self, timeout: float | None) -> bool:
        """Block until stop is requested or ``timeout`` passes; True when stopping."""

    def report_unavailable(self, fault: SourceFault) -> None:
        """Tell the supervisor the source lost its backend and is reconnecting.

        Again with another ``fault`` if the reason changes; a no-op before readiness.
        """

    def report_available(self) -> None:
        """Tell the supervisor the source is back (after :meth:`report_unavailable`)."""

    def report_lease_lost(self) -> None:
        """A task ran, but after an outage its settlement found the lease taken back: it
        is logged (``task.lease_lost``) and not settled again."""


@runtime_checkable
class Task(Protocol):
    """One unit of work handed out by a source, settled exactly once."""

    def run(self) -> object:
        """Do the work; the return value is passed to :meth:`complete`."""

    def complete(self, result: object) -> None:
        """Settle success (acknowledge the message, send the response...)."""

    def fail(self, error: BaseException) -> None:
        """Settle failure with the original exception (retry, dead-letter...)."""


@runtime_checkable
class TaskSource(Protocol):
    """Hands out tasks one at a time to one worker process."""

    def assert_ready(self) -> None:
        """Raise if the source cannot serve; called once, before readiness."""

    def receive(self) -> Task | None:
        """Block for the next task; ``None`` only on cooperative stop (see module doc)."""


TaskSourceFactory = Callable[[TaskSourceContext], TaskSource]
"""The shape of ``module:factory`` named by an entry point or ``task_source``."""


class TaskSourceOptionError(ValueError):
    """Raised by a factory's ``check_options`` (or the factory) when an option breaks a rule.

    ``key`` is the option's key inside ``[worker.source_options]`` (``handler``, not
    ``worker.source_options.handler``); ``rule`` is a :class:`ConfigRule` (a ``str``:
    ``required``, ``unknown-key``, ``wrong-type``, ``out-of-range``, ``invalid-target``...),
    the same closed vocabulary as every other configuration error, so what reaches the
    operator is a token of ours and never a value. A ``rule`` that is no rule's token is
    the source's programming error and raises :class:`ValueError` at once.
    """

    def __init__(self, key: str, rule: ConfigRule | str) -> None:
        checked = ConfigRule(rule)
        super().__init__(f"worker.source_options.{key}: {checked.value}")
        self.key: str = key
        self.rule: ConfigRule = checked

    def __reduce__(self) -> tuple[type[TaskSourceOptionError], tuple[str, ConfigRule]]:
        return (type(self), (self.key, self.rule))


class TaskSourceStorageError(Exception):
    """The source's storage is damaged or full: the worker reports ``reason``, not the step.

    ``reason`` is one of :data:`STORAGE_REASONS` (``worker-task-source-corrupt`` or
    ``worker-task-source-full``); raise it ``from`` the backend's error, which debug mode
    shows. Any other reason is the source's programming error: :class:`ValueError` at once.
    """

    def __init__(self, reason: Reason | str) -> None:
        checked = Reason(reason)
        if checked not in STORAGE_REASONS:
            raise ValueError(f"not a storage reason: {checked.value}")
        super().__init__(checked.value)
        self.reason: Reason = checked

    def __reduce__(self) -> tuple[type[TaskSourceStorageError], tuple[Reason]]:
        return (type(self), (self.reason,))


class TaskSourceUnavailableError(ConnectionError):
    """Raised by a source whose backend cannot be used; ``fault`` says which way.

    The worker reports ``fault`` (a :class:`SourceFault`, a closed vocabulary) beside the
    reason token; the message stays in the debug traceback only, and a source must keep
    its backend's own message out of it too (it may name hosts, users or hold a secret).
    """

    def __init__(self, fault: SourceFault | str, message: str = "") -> None:
        checked = SourceFault(fault)
        super().__init__(message or f"the task source is unavailable: {checked.value}")
        self.fault: SourceFault = checked

    def __reduce__(self) -> tuple[type[TaskSourceUnavailableError], tuple[SourceFault, str]]:
        return (type(self), (self.fault, str(self)))
