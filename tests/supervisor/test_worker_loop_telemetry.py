"""One ``worker.task`` per unit of work (coretsia.supervisor.worker_side.task_loop), row by row.

Each row of the worker loop's precedence table is run with an in-memory OpenTelemetry
pipeline, then again with a tracer, meter, clock or exporter that raises: the calls, the
settlement and the worker's fate must be the same either way.
"""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from telemetry_memory import Pipeline, Raising
from unit_recorder import Recorder, run_recorded

from coretsia.supervisor.shared.telemetry import Telemetry
from coretsia.supervisor.worker_side.task_loop import Hooks, run_unit


def _broken_clock() -> int:
    raise OSError("no clock")


ROWS = [
    ("", "completed"),
    ("before", "failed"),
    ("run", "failed"),
    ("after", "hook-failed"),
    ("reset", "reset-failed"),
    ("complete 42", "settlement-failed"),
]


@pytest.mark.parametrize(("fail_at", "outcome"), ROWS, ids=[r[0] or "success" for r in ROWS])
def test_each_row_is_one_task_span_and_count(
    pipeline: Pipeline, fail_at: str, outcome: str
) -> None:
    """The outcome label names the row; the error's message and type never appear."""
    tracer_provider, meter_provider, recorded = pipeline
    readings = iter([2_000_000, 9_000_000])
    telemetry = Telemetry(
        tracer_provider.get_tracer("t"), meter_provider.get_meter("t"), lambda: next(readings)
    )
    with_telemetry = run_recorded(fail_at, telemetry)
    assert with_telemetry == run_recorded(fail_at, Telemetry())
    labels = {"operation": "queue", "outcome": outcome}
    assert recorded.span_attributes("worker.task") == [labels]
    assert recorded.points("worker.task_total") == [(labels, 1)]
    ((attributes, histogram),) = recorded.points("worker.task_duration_ms")
    assert attributes == labels
    assert (histogram.count, histogram.sum) == (1, 7.0)
    assert recorded.spans.get_finished_spans()[0].events == ()  # no exception recorded


@pytest.mark.parametrize("fail_at", [r[0] for r in ROWS], ids=[r[0] or "success" for r in ROWS])
def test_failing_observability_changes_no_outcome(fail_at: str) -> None:
    """A raising tracer, meter and clock leave calls, settlement and exit reason as they were."""
    broken = Telemetry(Raising(), Raising(), _broken_clock)  # type: ignore[arg-type]
    assert run_recorded(fail_at, broken) == run_recorded(fail_at, Telemetry())


@pytest.mark.parametrize("fail_at", ["", "run"])
def test_a_failing_clock_records_duration_zero(pipeline: Pipeline, fail_at: str) -> None:
    """Timing unavailable: the task still counts, with its outcome, and lasts 0 ms."""
    tracer_provider, meter_provider, recorded = pipeline
    telemetry = Telemetry(
        tracer_provider.get_tracer("t"), meter_provider.get_meter("t"), _broken_clock
    )
    assert run_recorded(fail_at, telemetry) == run_recorded(fail_at, Telemetry())
    ((_, histogram),) = recorded.points("worker.task_duration_ms")
    assert (histogram.count, histogram.sum) == (1, 0)


def test_an_escaping_base_exception_is_recorded_as_aborted(pipeline: Pipeline) -> None:
    """SystemExit from a task still ends its span (outcome ``aborted``) and propagates."""
    tracer_provider, meter_provider, recorded = pipeline
    telemetry = Telemetry(tracer_provider.get_tracer("t"), meter_provider.get_meter("t"))

    class Exiting(Recorder):
        def run(self) -> object:
            raise SystemExit(3)

    task = Exiting()
    with pytest.raises(SystemExit):
        run_unit(task, Hooks(), telemetry, "http")
    assert recorded.span_attributes("worker.task") == [{"operation": "http", "outcome": "aborted"}]


class _DownProcessor(SpanProcessor):
    """A span pipeline that raises as each span ends (the SDK's own processors catch
    their exporters' errors, so only a processor that raises tests Coretsia's guard)."""

    def on_end(self, span: ReadableSpan) -> None:
        raise ConnectionError("collector down")


@pytest.mark.parametrize("fail_at", [r[0] for r in ROWS], ids=[r[0] or "success" for r in ROWS])
def test_a_failing_exporter_changes_no_outcome(fail_at: str) -> None:
    """Spans ended into a raising pipeline: the unit ends exactly as without telemetry."""
    provider = TracerProvider()
    provider.add_span_processor(_DownProcessor())
    try:
        exporting = Telemetry(provider.get_tracer("t"))
        assert run_recorded(fail_at, exporting) == run_recorded(fail_at, Telemetry())
    finally:
        provider.shutdown()
