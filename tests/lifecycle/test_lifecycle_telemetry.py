"""``telemetry = "otel"`` in a real pool: spans and metrics leave every process.

The supervisor and each worker configure the OpenTelemetry SDK from ``OTEL_*`` (see
``coretsia.supervisor.otel``). The test installs a tiny exporter plugin the way any
exporter is installed, a distribution whose entry points sit in the groups
``opentelemetry_traces_exporter`` and ``opentelemetry_metrics_exporter``, on the
processes' ``PYTHONPATH`` (``tests/support/apps/file_exporter.py``); it appends what it
is given, as JSON lines, to one file. The SDK flushes at each process's normal exit, so
once the supervisor has exited the file holds the whole run.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

from apps.telemetry_app import SECRET
from fixture_dist import install, wheel
from pools import Supervisors, app_source, cli, install_app, wait_for, write_root
from site_hooks import pythonpath_first


def _exporter_plugin(site: Path) -> None:
    """A distribution installed on ``site`` that provides the ``coretsia_test`` exporters."""
    exporters = wheel(
        site.parent / "wheels",
        "coretsia_test_telemetry",
        {"coretsia_file_exporter": app_source("file_exporter.py")},
        {
            "opentelemetry_traces_exporter": {"coretsia_test": "coretsia_file_exporter:Spans"},
            "opentelemetry_metrics_exporter": {"coretsia_test": "coretsia_file_exporter:Metrics"},
        },
        requires=(),
    )
    install(exporters, site)


def test_spans_and_metrics_leave_the_supervisor_and_the_workers(
    root: Path, supervisors: Supervisors, tmp_path: Path
) -> None:
    """worker.process (start, status, stop) and worker.task (six units) reach the exporter."""
    site = tmp_path / "site"
    _exporter_plugin(site)
    out = tmp_path / "telemetry.jsonl"
    install_app(root, "telemetry_app.py")
    write_root(root, task_source="telemetry_app:three", telemetry="otel")
    env = {
        **pythonpath_first(site),
        "OTEL_TRACES_EXPORTER": "coretsia_test",
        "OTEL_METRICS_EXPORTER": "coretsia_test",
        "OTEL_METRIC_EXPORT_INTERVAL": "3600000",  # only the final export, at exit
        "CORETSIA_TEST_TELEMETRY_OUT": str(out),
    }
    supervisor = supervisors(root, env=env)
    supervisor.wait_running()
    wait_for(lambda: (root / "done-0").exists() and (root / "done-1").exists())
    assert cli(root, "status").returncode == 0
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0

    raw = out.read_text()
    assert SECRET not in raw
    assert str(root) not in raw
    assert "/srv/private" not in raw
    records = [json.loads(line) for line in raw.splitlines()]
    spans = collections.Counter(
        (r["scope"], r["name"], r["attributes"].get("operation"), r["attributes"]["outcome"])
        for r in records
        if r["kind"] == "span"
    )
    assert spans == {
        ("coretsia.supervisor", "worker.process", "start", "success"): 1,
        ("coretsia.supervisor", "worker.process", "status", "success"): 1,
        ("coretsia.supervisor", "worker.process", "stop", "success"): 1,
        ("coretsia.worker", "worker.task", "queue", "completed"): 4,
        ("coretsia.worker", "worker.task", "queue", "failed"): 2,
    }
    assert all(r["events"] == 0 for r in records if r["kind"] == "span")  # no exceptions
    metrics: collections.Counter[tuple[str, str]] = collections.Counter()
    for r in records:
        if r["kind"] == "metric":
            metrics[r["name"], json.dumps(r["attributes"], sort_keys=True)] += r["value"]
    assert metrics == {
        ("worker.process_total", '{"status": "start_success"}'): 1,
        ("worker.process_total", '{"status": "status_success"}'): 1,
        ("worker.process_total", '{"status": "stop_success"}'): 1,
        ("worker.task_total", '{"operation": "queue", "outcome": "completed"}'): 4,
        ("worker.task_total", '{"operation": "queue", "outcome": "failed"}'): 2,
        ("worker.task_duration_ms", '{"operation": "queue", "outcome": "completed"}'): 4,
        ("worker.task_duration_ms", '{"operation": "queue", "outcome": "failed"}'): 2,
    }
    keys = {key for r in records for key in r["attributes"]}
    assert keys <= {"operation", "outcome", "status"}
