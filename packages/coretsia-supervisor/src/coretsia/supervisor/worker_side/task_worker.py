"""A task worker's boot: check the runtime entrypoint, resolve the hooks and the task
source, report ready, hand over to the loop.

The hooks and the source are the generation's frozen ``module:attr`` targets (resolved
at ``start``: a worker never discovers anything); the source's factory is called with a
:class:`SourceContext`; only a source that passed ``assert_ready`` makes the worker send
``ready`` (seed 000's real readiness). Each step that fails has its own reason token, sent
in the ``failed`` frame before the exit. OpenTelemetry, when the generation asks for it,
is imported after ``ready``, so readiness never waits for it.
"""

from __future__ import annotations

import types

from coretsia.supervisor.generation.spec import TelemetryMode
from coretsia.supervisor.shared.telemetry import NO_TELEMETRY
from coretsia.supervisor.worker_side.channel import Retirement
from coretsia.supervisor.worker_side.exits import failure, source_failure
from coretsia.supervisor.worker_side.runtime_guard import check_runtime_entrypoint
from coretsia.supervisor.worker_side.task_loop import Hooks, work
from coretsia.worker_protocol.catalogue import Reason, SourceFault
from coretsia.worker_protocol.internal.runtime.imports import import_target
from coretsia.worker_protocol.worker_channel import (
    SourceAvailable,
    SourceUnavailable,
    TaskLeaseLost,
)

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from coretsia.supervisor.generation.spec import GenerationSpec, HookTargets
    from coretsia.supervisor.shared.telemetry import Telemetry
    from coretsia.supervisor.worker_side.channel import Reporter
    from coretsia.supervisor.worker_side.memory import MemoryLimit
    from coretsia.supervisor.worker_side.stop_signal import StopSignal
    from coretsia.worker_protocol.task_source import TaskSource


class SourceContext:
    """The :class:`~coretsia.worker_protocol.task_source.TaskSourceContext` a source gets.

    ``stopping`` and ``wait_for_stop`` look at the stop descriptor through a
    :class:`~coretsia.supervisor.worker_side.stop_signal.StopSignal`, which never reads it; the
    reports of an outage become frames on the worker's channel (after ``ready`` only).
    """

    __slots__ = ("_generation", "_options", "_reporter", "_slot", "_stop", "_task_type")

    def __init__(
        self,
        task_type: str,
        slot: int,
        stop: StopSignal,
        generation: str,
        options: Mapping[str, object],
        reporter: Reporter,
    ) -> None:
        self._reporter = reporter
        self._task_type = task_type
        self._slot = slot
        self._generation = generation
        self._options = types.MappingProxyType(dict(options))
        self._stop = stop

    @property
    def task_type(self) -> str:
        return self._task_type

    @property
    def slot(self) -> int:
        return self._slot

    @property
    def generation(self) -> str:
        return self._generation

    @property
    def options(self) -> Mapping[str, object]:
        return self._options

    @property
    def stopping(self) -> bool:
        return self._stop.stopping

    def stop_fileno(self) -> int:
        return self._stop.fileno()

    def wait_for_stop(self, timeout: float | None) -> bool:
        return self._stop.wait(timeout)

    def report_unavailable(self, fault: SourceFault) -> None:
        if self._reporter.ready:
            self._reporter.send(SourceUnavailable(SourceFault(fault)))

    def report_available(self) -> None:
        if self._reporter.ready:
            self._reporter.send(SourceAvailable())

    def report_lease_lost(self) -> None:
        self._reporter.send(TaskLeaseLost())


def serve_tasks(
    reporter: Reporter, spec: GenerationSpec, slot: int, stop: StopSignal, generation: str
) -> int:
    """Resolve the task source, report ready, run the sequential loop."""
    task_type = spec.task_type.value
    check_runtime_entrypoint(task_type, spec.runtime_entrypoint)  # seed 000's order
    options = dict(spec.source_options)
    context = SourceContext(task_type, slot, stop, generation, options, reporter)
    hooks = resolve_hooks(spec.hooks)
    source = resolve_source(spec.task_source, context)
    reporter.report_ready()
    return work(
        source,
        context,
        spec.max_requests,
        hooks,
        Retirement(reporter, stop.listen),
        _telemetry(spec.telemetry),
        reporter.task_failed,
        _memory_limit(spec.max_memory_mb),
    )


def _memory_limit(max_memory_mb: int) -> MemoryLimit | None:
    """The limit, with its module imported only when it is on."""
    if not max_memory_mb:
        return None
    # start-up budget: docs/performance.md#start-up-import-rules
    from coretsia.supervisor.worker_side.memory import MemoryLimit

    return MemoryLimit(max_memory_mb)


def _telemetry(mode: TelemetryMode) -> Telemetry:
    """The worker's telemetry: OpenTelemetry for ``otel``, imported only now, after ready."""
    if mode is not TelemetryMode.OTEL:
        return NO_TELEMETRY
    # start-up budget: docs/performance.md#start-up-import-rules
    from coretsia.supervisor.shared.otel import opentelemetry_telemetry

    return opentelemetry_telemetry("coretsia.worker") or NO_TELEMETRY


def resolve_hooks(targets: HookTargets) -> Hooks:
    """Import the generation's frozen hook targets (``module:attr``), in order."""
    return Hooks(
        *(
            [_import_callable(target, Reason.CHILD_START_FAILED) for target in kind]
            for kind in (targets.before, targets.after, targets.reset)
        )
    )


def resolve_source(target: str | None, context: SourceContext) -> TaskSource:
    """Import the frozen ``module:attr``, build the source, check it is ready to serve."""
    factory = _import_callable(target, Reason.TASK_SOURCE_UNRESOLVABLE)
    declared = getattr(factory, "task_type", context.task_type)
    if declared != context.task_type:
        # The application's own factory is imported here first; one that declares
        # another task type is refused like one that is not a source at all.
        raise failure(Reason.TASK_SOURCE_INVALID)
    try:
        source = factory(context)
    except Exception as error:
        raise failure(Reason.TASK_SOURCE_UNRESOLVABLE) from error
    try:
        valid = callable(getattr(source, "assert_ready", None)) and callable(
            getattr(source, "receive", None)
        )
    except Exception as error:
        raise failure(Reason.TASK_SOURCE_INVALID) from error
    if not valid:
        raise failure(Reason.TASK_SOURCE_INVALID)
    try:
        source.assert_ready()
    except Exception as error:
        raise source_failure(error, Reason.TASK_SOURCE_NOT_READY) from error
    return source  # type: ignore[no-any-return]


def _import_callable(target: str | None, reason: Reason) -> Callable[..., Any]:
    """Follow a frozen ``module:attr`` to a callable; anything else is ``failure(reason)``."""
    if target is None or not all(target.partition(":")[::2]):
        raise failure(reason)  # no module, or no attr
    try:
        value = import_target(target)
    except Exception as error:
        raise failure(reason) from error
    if not callable(value):
        raise failure(reason)
    return value
