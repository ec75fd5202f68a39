"""Seed 000's spans and metrics, recorded through an injected tracer, meter and clock.

The vocabulary is fixed here and nowhere else (``docs/operations.md`` lists it):

============================  =========  ===============================================
name                          kind       attributes / labels (values: constants below)
============================  =========  ===============================================
``worker.process``            span       ``operation`` (start, stop, status), ``outcome``
                                         (success, failure)
``worker.task``               span       ``operation`` (the task type), ``outcome``
``worker.process_total``      counter    ``status``: ``<operation>_<outcome>``
``worker.task_total``         counter    ``operation``, ``outcome``
``worker.task_duration_ms``   histogram  ``operation``, ``outcome``
============================  =========  ===============================================

Why so narrow: the seed forbids any label or attribute that identifies a worker, a
process, a path, an endpoint, a payload or an error (``worker_id``, ``pid``,
``exit_code``, ``exception_class``...), and every value here is a package-owned token, so
nothing an application or an operator wrote can reach a span or a metric. Spans are
started and ended explicitly (never ``start_as_current_span``), so OpenTelemetry never
records an exception, and with it an exception message, on them.

Why injected: runtime classes (the supervisor, the control server, the worker loop) never
build an adapter; the composition roots (the CLI's ``start``, the launcher after
readiness) pass a :class:`Telemetry` made by :mod:`coretsia.supervisor.shared.otel`, and
:data:`NO_TELEMETRY` (no tracer, no meter) is everyone's default.

Why every call is guarded: seed 000 says observability failures change no lifecycle or
task outcome. A tracer, meter, instrument or clock that raises is caught here, and a unit
whose clock failed (or ran backwards) records a duration of 0.

Imported on the worker boot path (through :mod:`coretsia.supervisor.worker_side.task_loop`): it
imports only :mod:`time` at load time, never OpenTelemetry.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, Literal, Protocol, TypeVar

    _I = TypeVar("_I")

    ProcessOperation = Literal["start", "stop", "status"]
    ProcessOutcome = Literal["success", "failure"]
    TaskOperation = Literal["queue", "http"]
    TaskOutcome = Literal[
        "completed", "failed", "hook-failed", "reset-failed", "settlement-failed", "aborted"
    ]

    class Span(Protocol):
        """What this module asks of an OpenTelemetry span."""

        def set_attribute(self, key: str, value: str) -> None: ...
        def end(self) -> None: ...

    class Tracer(Protocol):
        """What this module asks of an OpenTelemetry tracer."""

        def start_span(self, name: str, *, attributes: Mapping[str, str]) -> Span: ...

    class Counter(Protocol):
        def add(self, amount: int, attributes: Mapping[str, str]) -> None: ...

    class Histogram(Protocol):
        def record(self, amount: float, attributes: Mapping[str, str]) -> None: ...

    class Meter(Protocol):
        """What this module asks of an OpenTelemetry meter."""

        def create_counter(self, name: str, unit: str = ..., description: str = ...) -> Counter:
            """A monotonic counter instrument."""

        def create_histogram(self, name: str, unit: str = ..., description: str = ...) -> Histogram:
            """A histogram instrument."""


PROCESS_SPAN = "worker.process"
TASK_SPAN = "worker.task"
PROCESS_TOTAL = "worker.process_total"
TASK_TOTAL = "worker.task_total"
TASK_DURATION_MS = "worker.task_duration_ms"

PROCESS_OPERATIONS = ("start", "stop", "status")
PROCESS_OUTCOMES = ("success", "failure")
PROCESS_STATUSES = tuple(f"{op}_{out}" for op in PROCESS_OPERATIONS for out in PROCESS_OUTCOMES)
"""Seed 000's emitted ``status`` values (the reserved ``recycle_*`` ones are never emitted)."""
TASK_OPERATIONS = ("queue", "http")
"""A task's ``operation`` is the generation's task type."""
TASK_OUTCOMES = (
    "completed",
    "failed",
    "hook-failed",
    "reset-failed",
    "settlement-failed",
    "aborted",
)
"""How a unit of work ended (the rows of :mod:`coretsia.supervisor.worker_side.task_loop`'s table);
``aborted``: something other than an ``Exception`` (``SystemExit``...) escaped it."""


class Recording:
    """One span in flight and its clock reading; :meth:`finish` ends it once.

    Finishing twice is harmless (the second call does nothing), so a caller can finish
    with success where that happens and with failure in a ``finally`` that covers every
    other way out.
    """

    __slots__ = ("_attributes", "_kind", "_span", "_started", "_telemetry")

    def __init__(
        self,
        telemetry: Telemetry,
        kind: str,
        attributes: dict[str, str],
        span: Span | None,
        started: int | None,
    ) -> None:
        self._telemetry = telemetry
        self._kind = kind
        self._attributes = attributes
        self._span = span
        self._started = started

    def finish(self, outcome: str) -> None:
        """End the span with ``outcome`` and count it; only the first call counts."""
        kind, self._kind = self._kind, ""
        if kind:
            self._telemetry._finished(kind, self._span, self._attributes, outcome, self._started)


class _Nothing(Recording):
    """The recording of a telemetry that records nothing: finishing it does nothing."""

    __slots__ = ()

    def __init__(self) -> None:
        pass

    def finish(self, outcome: str) -> None:
        """Nothing to end, nothing to count."""


_NOTHING = _Nothing()


class Telemetry:
    """The tracer, the meter's three instruments and the clock of one process.

    ``tracer`` and ``meter`` are OpenTelemetry's (or anything with the same methods);
    None records nothing. ``clock`` returns monotonic nanoseconds.
    """

    __slots__ = ("_clock", "_process_total", "_task_duration", "_task_total", "_tracer")

    def __init__(
        self,
        tracer: Tracer | None = None,
        meter: Meter | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._tracer = tracer
        self._clock = clock
        self._process_total: Counter | None = None
        self._task_total: Counter | None = None
        self._task_duration: Histogram | None = None
        if meter is not None:
            try:
                self._process_total = meter.create_counter(
                    PROCESS_TOTAL, unit="1", description="Pool lifecycle operations"
                )
                self._task_total = meter.create_counter(
                    TASK_TOTAL, unit="1", description="Units of work run by the workers"
                )
                self._task_duration = meter.create_histogram(
                    TASK_DURATION_MS, unit="ms", description="Duration of a unit of work"
                )
            except Exception:  # noqa: BLE001 - a broken meter means no metrics, nothing else
                self._process_total = self._task_total = None
                self._task_duration = None

    def process(self, operation: ProcessOperation) -> Recording:
        """Begin a ``worker.process`` span (start, stop, or one status/health answer)."""
        return self._begin(PROCESS_SPAN, operation, timed=False)

    def task(self, operation: TaskOperation | str) -> Recording:
        """Begin a ``worker.task`` span and its stopwatch (one unit of work)."""
        if operation not in TASK_OPERATIONS:
            operation = "queue"  # unreachable from the launcher, which checks the task type
        return self._begin(TASK_SPAN, operation, timed=True)

    def _begin(self, kind: str, operation: str, *, timed: bool) -> Recording:
        if self._tracer is None and self._process_total is None and self._task_total is None:
            # Records nothing (telemetry off, every worker's default): the unit of work,
            # which runs per task, pays for no span, dict or clock reading.
            return _NOTHING
        attributes = {"operation": operation}
        span = None
        if self._tracer is not None:
            try:
                span = self._tracer.start_span(kind, attributes=attributes)
            except Exception:  # noqa: BLE001 - observability never changes an outcome
                span = None
        timed = timed and self._task_duration is not None
        return Recording(self, kind, attributes, span, self._now() if timed else None)

    def _now(self) -> int | None:
        try:
            reading = self._clock()
        except Exception:  # noqa: BLE001 - an unavailable clock means duration 0
            return None
        return reading if type(reading) is int else None

    def _finished(
        self,
        kind: str,
        span: Span | None,
        attributes: Mapping[str, str],
        outcome: str,
        started: int | None,
    ) -> None:
        labels = {**attributes, "outcome": outcome}
        if span is not None:
            try:
                span.set_attribute("outcome", outcome)
                span.end()
            except Exception:  # noqa: BLE001 - observability never changes an outcome
                pass
        if kind == PROCESS_SPAN:
            _add_one(self._process_total, {"status": f"{labels['operation']}_{outcome}"})
            return
        _add_one(self._task_total, labels)
        if self._task_duration is None:
            return
        ended = self._now()
        duration_ms = 0.0
        if started is not None and ended is not None and ended >= started:
            duration_ms = (ended - started) / 1_000_000
        try:
            self._task_duration.record(duration_ms, labels)
        except Exception:  # noqa: BLE001 - observability never changes an outcome
            pass


def _add_one(counter: Counter | None, labels: Mapping[str, str]) -> None:
    if counter is None:
        return
    try:
        counter.add(1, labels)
    except Exception:  # noqa: BLE001 - observability never changes an outcome
        pass


class FanoutMeter:
    """One meter that creates each instrument on several (OpenTelemetry and Prometheus)."""

    def __init__(self, meters: list[Meter]) -> None:
        self._meters = meters

    def create_counter(self, name: str, unit: str = "", description: str = "") -> Counter:
        counters = [_created(m.create_counter, name, unit, description) for m in self._meters]
        return _Fanout([c.add for c in counters if c is not None])

    def create_histogram(self, name: str, unit: str = "", description: str = "") -> Histogram:
        histograms = [_created(m.create_histogram, name, unit, description) for m in self._meters]
        return _Fanout([h.record for h in histograms if h is not None])


class _Fanout:
    """Several instruments' measuring methods acting as one counter or histogram."""

    def __init__(self, sinks: list[Callable[[Any, Mapping[str, str]], None]]) -> None:
        self._sinks = sinks

    def add(self, amount: float, attributes: Mapping[str, str]) -> None:
        """Measure on every sink; one sink failing must not keep the others from it."""
        for sink in self._sinks:
            try:
                sink(amount, attributes)
            except Exception:  # noqa: BLE001 - observability failures change nothing
                pass

    record = add


def _created(
    create: Callable[[str, str, str], _I], name: str, unit: str, description: str
) -> _I | None:
    """One meter that cannot create an instrument leaves the others theirs."""
    try:
        return create(name, unit, description)
    except Exception:  # noqa: BLE001 - observability failures change nothing
        return None


NO_TELEMETRY = Telemetry()
"""Records nothing: the default of every runtime class, and the result of ``off``."""
