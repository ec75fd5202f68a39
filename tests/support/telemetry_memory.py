"""OpenTelemetry SDK pipelines that keep everything in memory (test helpers).

Imported by test modules as ``telemetry_memory`` (``tests/support`` is on pytest's
pythonpath). Nothing here touches OpenTelemetry's global providers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@dataclass
class Recorded:
    """What one in-memory pipeline received."""

    spans: InMemorySpanExporter
    reader: InMemoryMetricReader

    def span_attributes(self, name: str) -> list[dict[str, object]]:
        return [dict(s.attributes or {}) for s in self.spans.get_finished_spans() if s.name == name]

    def points(self, name: str) -> list[tuple[dict[str, object], Any]]:
        """(attributes, value or histogram) of every data point of the metric ``name``."""
        data = self.reader.get_metrics_data()
        found: list[tuple[dict[str, object], Any]] = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found.extend(
                            (dict(p.attributes or {}), getattr(p, "value", p))
                            for p in metric.data.data_points
                        )
        return found


Pipeline = tuple[TracerProvider, MeterProvider, Recorded]


def in_memory() -> Pipeline:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    return tracer_provider, meter_provider, Recorded(spans, reader)


class Raising:
    """A tracer, span, meter and instrument in one: every method raises."""

    def __getattr__(self, name: str) -> Callable[..., object]:
        def fail(*args: object, **kwargs: object) -> object:
            raise RuntimeError(f"{name} failed")

        return fail
