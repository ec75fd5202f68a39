"""coretsia.supervisor.shared.otel: the SDK set up from OTEL_*, each case in a fresh interpreter.

OpenTelemetry's global providers can be set once per process, so every case that installs
them runs in its own ``python -c`` child; only the "API missing" case runs here.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from coretsia.supervisor.shared.otel import opentelemetry_telemetry

PROBE = """
from opentelemetry import metrics, trace
from coretsia.supervisor.shared.otel import opentelemetry_telemetry
telemetry = opentelemetry_telemetry("probe")
telemetry.task("queue").finish("completed")
print(type(trace.get_tracer_provider()).__name__, type(metrics.get_meter_provider()).__name__)
"""


def _probe(**otel: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**env, **otel},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stderr == ""
    return result.stdout.strip()


def test_without_the_api_there_is_no_telemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    """``opentelemetry`` not importable: None, and the caller falls back to the no-op."""
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    assert opentelemetry_telemetry("coretsia.supervisor") is None


@pytest.mark.parametrize("exporter", ["none", "not-installed", "console"])
def test_sdk_providers_are_installed_from_the_environment(exporter: str) -> None:
    """SDK providers whatever the setting; only an installed exporter name exports."""
    settings = {"OTEL_TRACES_EXPORTER": exporter, "OTEL_METRICS_EXPORTER": exporter}
    if exporter == "console":
        settings["OTEL_METRIC_EXPORT_INTERVAL"] = "3600000"
    out = _probe(**settings)
    assert out.splitlines()[0] == "TracerProvider MeterProvider"
    # The console exporters (entry points of the SDK) print at exit, after our line.
    assert ('"name": "worker.task"' in out) is (exporter == "console")
    assert ('"name": "worker.task_total"' in out) is (exporter == "console")


def test_sdk_disabled_leaves_the_api_no_op() -> None:
    """``OTEL_SDK_DISABLED=true``: nothing is installed."""
    assert _probe(OTEL_SDK_DISABLED="true") == "ProxyTracerProvider _ProxyMeterProvider"
