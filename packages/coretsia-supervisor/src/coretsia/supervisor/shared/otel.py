"""The OpenTelemetry adapter: a real :class:`~coretsia.supervisor.shared.telemetry.Telemetry`.

Only the composition roots import this module, and only when the generation says
``telemetry = "otel"``: the CLI's ``start`` for the supervisor, the launcher for each
worker *after* it reported ready, so that readiness never waits for OpenTelemetry's
import (measured: ``docs/performance.md#timings-the-code-refers-to``).

How data leaves a process: through the global providers of the OpenTelemetry API.
If something already installed SDK providers in this process (``opentelemetry-instrument``
in the supervisor, the application), they are used as they are. Otherwise, when
``opentelemetry-sdk`` is installed, this module installs them from the standard
environment variables, the same ones the SDK's own auto-configuration reads:

- ``OTEL_SDK_DISABLED=true``: install nothing (everything stays a no-op);
- ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER``: comma-separated exporter names
  (default ``otlp``; ``none`` for none), found in the entry-point groups
  ``opentelemetry_traces_exporter`` / ``opentelemetry_metrics_exporter`` (``console``
  ships with the SDK, ``otlp`` with ``opentelemetry-exporter-otlp``). A name that is not
  installed exports nothing; it never fails the process;
- the SDK itself reads the rest: ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
  ``OTEL_BSP_*``, ``OTEL_METRIC_EXPORT_INTERVAL``, the exporters' ``OTEL_EXPORTER_*``.

Spans go through a batch processor and metrics through a periodic reader; both are
flushed when the process exits normally (the SDK's exit handler), so a worker killed by
SIGKILL loses what it had not exported yet.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from coretsia.supervisor.shared._version import __version__
from coretsia.supervisor.shared.entry_points import entry_points
from coretsia.supervisor.shared.telemetry import Telemetry

if TYPE_CHECKING:
    from coretsia.supervisor.shared.telemetry import Meter, Tracer

TRACES_GROUP = "opentelemetry_traces_exporter"
METRICS_GROUP = "opentelemetry_metrics_exporter"


def opentelemetry_telemetry(scope: str) -> Telemetry | None:
    """A Telemetry on OpenTelemetry's global providers; None without the API (or broken).

    ``scope`` names the instrumentation scope (``coretsia.supervisor``,
    ``coretsia.worker``).
    """
    parts = opentelemetry_parts(scope)
    if parts is None:
        return None
    return Telemetry(parts[0], parts[1], time.monotonic_ns)


def opentelemetry_parts(scope: str) -> tuple[Tracer, Meter] | None:
    """The global providers' tracer and meter for ``scope``; None without the API."""
    try:
        # deferred: optional extra
        from opentelemetry import metrics, trace
    except ImportError:
        return None
    try:
        _install_sdk(os.environ)
        tracer = trace.get_tracer(scope, __version__)
        meter = metrics.get_meter(scope, __version__)
    except Exception:  # noqa: BLE001 - a broken installation means no telemetry, nothing else
        return None
    return tracer, meter


def _install_sdk(environ: Mapping[str, str]) -> None:
    """Install SDK providers from ``OTEL_*`` unless disabled, absent or already there."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return
    try:
        # deferred: optional extra
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import (
            MetricExporter,
            MetricReader,
            PeriodicExportingMetricReader,
        )
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
    except ImportError:
        return
    resource = Resource.create()
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        tracer_provider = TracerProvider(resource=resource)
        for exporter in _exporters(TRACES_GROUP, environ.get("OTEL_TRACES_EXPORTER")):
            if isinstance(exporter, SpanExporter):
                tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(tracer_provider)
    if not isinstance(metrics.get_meter_provider(), MeterProvider):
        readers: list[MetricReader] = [
            PeriodicExportingMetricReader(exporter)
            for exporter in _exporters(METRICS_GROUP, environ.get("OTEL_METRICS_EXPORTER"))
            if isinstance(exporter, MetricExporter)
        ]
        metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=readers))


def _exporters(group: str, setting: str | None) -> list[object]:
    """An instance of each exporter named in ``setting`` that ``group`` provides."""
    names = [n.strip().lower() for n in (setting or "otlp").split(",") if n.strip()]
    found: list[object] = []
    installed = entry_points(group)  # the project's reader: no importlib.metadata to load
    for name in names:
        for entry in (e for e in installed if e.name == name) if name != "none" else ():
            try:
                exporter_class = entry.load()
                if not callable(exporter_class):
                    continue
                found.append(exporter_class())
            except Exception:  # noqa: BLE001 - a broken exporter exports nothing
                continue
            break
    return found
