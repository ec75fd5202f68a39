"""coretsia.supervisor.shared.telemetry against the real OpenTelemetry SDK, in memory.

Spans go to the SDK's ``InMemorySpanExporter``, metrics to its ``InMemoryMetricReader``;
nothing touches OpenTelemetry's global providers. The failing tracer, meter and clock are
real objects that raise, injected exactly where the real ones would be.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, cast

import pytest
from telemetry_memory import Pipeline, Raising, Recorded

from coretsia.supervisor.shared.telemetry import (
    NO_TELEMETRY,
    PROCESS_STATUSES,
    TASK_OPERATIONS,
    TASK_OUTCOMES,
    Telemetry,
)

if TYPE_CHECKING:
    from coretsia.supervisor.shared.telemetry import ProcessOperation

SEED_STATUSES = {
    "start_success",
    "start_failure",
    "stop_success",
    "stop_failure",
    "status_success",
    "status_failure",
}
ALLOWED_LABELS = {"status", "operation", "outcome"}


def make(
    pipeline: Pipeline,
    clock: Callable[[], int] | None = None,
) -> tuple[Telemetry, Recorded]:
    tracer_provider, meter_provider, _ = pipeline
    telemetry = Telemetry(
        tracer_provider.get_tracer("test"),
        meter_provider.get_meter("test"),
        clock or ticking([1_000_000, 4_500_000]),
    )
    return telemetry, pipeline[2]


def ticking(readings: list[int]) -> Callable[[], int]:
    """A clock that returns ``readings`` in order."""
    values = iter(readings)
    return lambda: next(values)


def broken_clock() -> int:
    raise OSError("clock unavailable")


class RaisingSpans:
    """A tracer whose spans raise when they are given attributes or ended."""

    def start_span(self, name: str, *, attributes: Mapping[str, str]) -> Raising:
        return Raising()


class TestProcess:
    """``worker.process`` spans and ``worker.process_total``."""

    @pytest.mark.parametrize("status", sorted(SEED_STATUSES))
    def test_each_seed_status_is_one_span_and_one_count(
        self, pipeline: Pipeline, status: str
    ) -> None:
        """start/stop/status x success/failure: the span says both, the counter the status."""
        telemetry, recorded = make(pipeline)
        operation, outcome = status.split("_")
        telemetry.process(cast("ProcessOperation", operation)).finish(outcome)
        assert recorded.span_attributes("worker.process") == [
            {"operation": operation, "outcome": outcome}
        ]
        assert recorded.points("worker.process_total") == [({"status": status}, 1)]

    def test_finishing_twice_counts_once(self, pipeline: Pipeline) -> None:
        """The first outcome wins: a ``finally`` can safely finish with failure."""
        telemetry, recorded = make(pipeline)
        starting = telemetry.process("start")
        starting.finish("success")
        starting.finish("failure")
        assert recorded.points("worker.process_total") == [({"status": "start_success"}, 1)]
        assert len(recorded.span_attributes("worker.process")) == 1

    def test_emitted_statuses_are_exactly_the_seeds(self) -> None:
        """No reserved recycle_* value and nothing outside the seed's list."""
        assert set(PROCESS_STATUSES) == SEED_STATUSES


class TestTask:
    """``worker.task`` spans, ``worker.task_total`` and ``worker.task_duration_ms``."""

    def test_a_unit_is_a_span_a_count_and_a_duration(self, pipeline: Pipeline) -> None:
        """The duration comes from the injected clock: 4.5 ms - 1 ms."""
        telemetry, recorded = make(pipeline)
        telemetry.task("queue").finish("completed")
        labels = {"operation": "queue", "outcome": "completed"}
        assert recorded.span_attributes("worker.task") == [labels]
        assert recorded.points("worker.task_total") == [(labels, 1)]
        ((attributes, histogram),) = recorded.points("worker.task_duration_ms")
        assert attributes == labels
        assert (histogram.count, histogram.sum) == (1, 3.5)

    @pytest.mark.parametrize(
        "clock",
        [broken_clock, ticking([5_000_000]), ticking([5_000_000, 1_000_000])],
        ids=["raises", "fails-at-the-end", "runs-backwards"],
    )
    def test_failed_timing_records_duration_zero(
        self, pipeline: Pipeline, clock: Callable[[], int]
    ) -> None:
        """A clock that raises (or goes backwards) changes nothing but the duration: 0."""
        telemetry, recorded = make(pipeline, clock)
        telemetry.task("http").finish("failed")
        labels = {"operation": "http", "outcome": "failed"}
        assert recorded.span_attributes("worker.task") == [labels]
        assert recorded.points("worker.task_total") == [(labels, 1)]
        ((_, histogram),) = recorded.points("worker.task_duration_ms")
        assert (histogram.count, histogram.sum) == (1, 0)

    def test_an_unknown_operation_never_becomes_a_label(self, pipeline: Pipeline) -> None:
        """Only the task types are operations; anything else is recorded as ``queue``."""
        telemetry, recorded = make(pipeline)
        telemetry.task("/srv/app/secret").finish("completed")
        assert recorded.span_attributes("worker.task") == [
            {"operation": "queue", "outcome": "completed"}
        ]


class TestFailuresChangeNothing:
    """A tracer, meter, instrument or clock that raises is contained in the module."""

    def test_raising_tracer_and_meter(self) -> None:
        """Construction, begin and finish all return normally."""
        telemetry = Telemetry(Raising(), Raising(), broken_clock)  # type: ignore[arg-type]
        telemetry.process("start").finish("success")
        telemetry.task("queue").finish("completed")

    def test_raising_spans_still_count(self, pipeline: Pipeline) -> None:
        """A span that fails to end does not cost the metrics."""
        _, meter_provider, recorded = pipeline
        telemetry = Telemetry(RaisingSpans(), meter_provider.get_meter("test"))  # type: ignore[arg-type]
        telemetry.task("queue").finish("completed")
        assert recorded.points("worker.task_total") == [
            ({"operation": "queue", "outcome": "completed"}, 1)
        ]

    def test_raising_meter_still_traces(self, pipeline: Pipeline) -> None:
        """A meter that cannot make instruments does not cost the spans."""
        tracer_provider, _, recorded = pipeline
        telemetry = Telemetry(tracer_provider.get_tracer("test"), Raising())  # type: ignore[arg-type]
        telemetry.process("stop").finish("failure")
        assert recorded.span_attributes("worker.process") == [
            {"operation": "stop", "outcome": "failure"}
        ]

    def test_no_telemetry_costs_a_task_nothing(self) -> None:
        """The default of every runtime class (and of every worker with telemetry off):
        one shared do-nothing recording, and not even a clock reading per unit of work."""
        readings: list[int] = []

        def clock() -> int:
            readings.append(1)
            return 0

        off = Telemetry(clock=clock)
        recording = off.task("queue")
        recording.finish("completed")
        assert recording is off.process("status") is NO_TELEMETRY.task("http")
        assert readings == []


def test_every_label_and_attribute_is_allowed(pipeline: Pipeline) -> None:
    """Across every vocabulary value, only operation, outcome and status ever appear."""
    telemetry, recorded = make(pipeline, clock=lambda: 0)
    for status in PROCESS_STATUSES:
        operation, outcome = status.split("_")
        telemetry.process(cast("ProcessOperation", operation)).finish(outcome)
    for operation in TASK_OPERATIONS:
        for outcome in TASK_OUTCOMES:
            telemetry.task(operation).finish(outcome)
    keys: set[str] = set()
    for span in recorded.spans.get_finished_spans():
        keys |= set(span.attributes or {})
    for name in ("worker.process_total", "worker.task_total", "worker.task_duration_ms"):
        for attributes, _ in recorded.points(name):
            keys |= set(attributes)
    assert keys == ALLOWED_LABELS
