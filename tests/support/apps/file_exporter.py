"""An OpenTelemetry span and metric exporter that appends JSON lines to one file.

Built into a fixture wheel (module ``coretsia_file_exporter``, exporters ``coretsia_test``)
by the telemetry test; the file is ``CORETSIA_TEST_TELEMETRY_OUT``.
"""

import json
import os

from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


def _write(records):
    with open(os.environ["CORETSIA_TEST_TELEMETRY_OUT"], "a") as out:
        out.write("".join(json.dumps(r) + "\n" for r in records))


class Spans(SpanExporter):
    def export(self, spans):
        _write(
            [
                {
                    "kind": "span",
                    "name": s.name,
                    "scope": s.instrumentation_scope.name,
                    "attributes": dict(s.attributes),
                    "events": len(s.events),
                }
                for s in spans
            ]
        )
        return SpanExportResult.SUCCESS


class Metrics(MetricExporter):
    def export(self, metrics_data, timeout_millis=10_000, **kwargs):
        records = []
        for resource in metrics_data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        records.append(
                            {
                                "kind": "metric",
                                "name": metric.name,
                                "scope": scope.scope.name,
                                "attributes": dict(point.attributes),
                                "value": value if value is not None else point.count,
                            }
                        )
        _write(records)
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis=10_000):
        return True

    def shutdown(self, timeout_millis=30_000, **kwargs):
        pass
