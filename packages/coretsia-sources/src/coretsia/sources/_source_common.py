"""What the ``sqlite`` and ``postgres`` sources share: their task, their handler and
failure rules, and the options both take.

Both are queues of text payloads handed to one ``module:attr`` handler; a message is
settled exactly once (done, or one more failed attempt), and a failed attempt is recorded
the same way. Keeping these rules in one place keeps the two backends' behaviour, and
their configuration errors, the same. Imports nothing heavier than the SPI: the
supervisor imports both sources' modules at ``start`` to check their options.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.internal.runtime.imports import import_target
from coretsia.worker_protocol.task_source import TaskSourceOptionError

if TYPE_CHECKING:
    from coretsia.sources._queue_records import Message
    from coretsia.worker_protocol.task_source import TaskSourceContext

TASK_TYPE: Final = "queue"
DEFAULT_MAX_ATTEMPTS: Final = 3
UNKNOWN_GENERATION: Final = "unknown"

Handler = Callable[[str], object]


class SourceOptionError(TaskSourceOptionError):
    """A ``[worker.source_options]`` key is missing or breaks a rule (the value is not shown).

    The SPI's :class:`TaskSourceOptionError` under the name the sources always raised.
    """


class _Settler(Protocol):
    """The source side of a task: what runs it and what settles it."""

    @property
    def handler(self) -> Handler: ...

    def acknowledge(self, message: Message) -> None: ...

    def record_failure(self, message: Message, error: BaseException) -> str | None: ...


class QueueTask:
    """One leased message; settled exactly once by ``complete`` or ``fail``.

    ``message.attempts`` is the number of earlier failed (or interrupted) attempts, and
    after ``fail`` the attribute ``settled_state`` says what became of the message:
    ``"pending"`` (it will be retried) or ``"failed"`` (it will not). It stays None until
    then (``"done"`` after ``complete``), and after a ``fail`` whose lease was lost while
    the source was away (whether it runs again is not this worker's to know). The SPI's
    ``fail`` returns None, hence an attribute. ``attempt`` and ``retried`` are the same
    facts in the optional form the worker loop reports in ``task.failed``
    (docs/task-sources.md).
    """

    __slots__ = ("_source", "message", "settled_state")

    def __init__(self, source: _Settler, message: Message) -> None:
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


def check_task_type(context: TaskSourceContext, name: str) -> None:
    """Refuse a context of another task type (the factory serves ``queue`` only)."""
    if context.task_type != TASK_TYPE:
        raise ValueError(f"the {name} source serves task_type {TASK_TYPE!r} only")


def context_options(context: TaskSourceContext) -> Mapping[str, object]:
    """``context.options``, read with ``getattr``: a context without them gets ``{}``."""
    options: Mapping[str, object] = getattr(context, "options", None) or {}
    return options


def context_generation(context: TaskSourceContext) -> str:
    """The context's generation id, or :data:`UNKNOWN_GENERATION` if it has none."""
    generation = getattr(context, "generation", UNKNOWN_GENERATION)
    if not isinstance(generation, str) or not generation:
        return UNKNOWN_GENERATION
    return generation


def import_handler(target: str) -> Handler:
    """Follow ``module:attr.path`` (shape checked with the options); it must be callable."""
    try:
        handler = import_target(target)
    except (ImportError, AttributeError) as error:
        raise SourceOptionError("handler", ConfigRule.INVALID_TARGET) from error
    if not callable(handler):
        raise SourceOptionError("handler", ConfigRule.INVALID_TARGET)
    return handler


class _Options(Protocol):
    @property
    def handler(self) -> str: ...


OptionsT = TypeVar("OptionsT", bound=_Options)


def read_context(
    context: TaskSourceContext, name: str, parse: Callable[[Mapping[str, object]], OptionsT]
) -> tuple[OptionsT, Handler, str]:
    """What a factory builds its source from: the options ``parse`` checked, the handler
    imported, the generation id (or :data:`UNKNOWN_GENERATION`)."""
    check_task_type(context, name)
    options = parse(context_options(context))
    return options, import_handler(options.handler), context_generation(context)


def describe(error: BaseException, *, with_message: bool = False) -> str:
    """``last_error``'s text: the exception's type, and its message only if asked.

    The type alone (``ValueError``, ``myapp.jobs.Refused``) is enough to triage and
    carries no payload data; the message may (the ``keep_error_messages`` option).
    ``str(error)`` is not even called without it: a broken ``__str__`` cannot turn a
    recorded failure into a settlement failure.
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
