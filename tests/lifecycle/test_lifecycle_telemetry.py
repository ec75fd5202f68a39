"""``telemetry = "otel"`` in a real pool: spans and metrics leave every process.

The supervisor and each worker configure the OpenTelemetry SDK from ``OTEL_*`` (see
``coretsia.supervisor.shared.otel``). The test installs a tiny exporter plugin the way any
exporter is installed, a distribution whose entry points sit in the groups
``opentelemetry_traces_exporter`` and ``opentelemetry_metrics_exporter``, on the
processes' ``PYTHONPATH`` (``tests/support/apps/file_exporter.py``); it appends what it
is given, as JSON lines, to one file. The SDK flushes at each process's normal exit, so
once the supervisor has exited the file holds the whole run.

The start and stop failures are counted too: a start whose source is never ready, and a
stop that cannot end because the guardian sees a process that survives SIGKILL (the
``survivor`` fault), each from a real pool.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Mapping
from pathlib import Path

from apps.telemetry_app import SECRET
from faults import fault_env
from fixture_dist import install, wheel
from pools import (
    Supervisors,
    app_source,
    assert_failed,
    cli,
    install_app,
    lock_held,
    wait_for,
    wait_gone,
    write_root,
)
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


def _otel_env(tmp_path: Path, base: Mapping[str, str] | None = None) -> tuple[dict[str, str], Path]:
    """The environment of a supervisor exporting into a file (``base``'s, else ours), and
    that file."""
    site = tmp_path / "site"
    _exporter_plugin(site)
    out = tmp_path / "telemetry.jsonl"
    env = {
        **pythonpath_first(site, base),
        "OTEL_TRACES_EXPORTER": "coretsia_test",
        "OTEL_METRICS_EXPORTER": "coretsia_test",
        "OTEL_METRIC_EXPORT_INTERVAL": "3600000",  # only the final export, at exit
        "CORETSIA_TEST_TELEMETRY_OUT": str(out),
    }
    return env, out


def _process_totals(out: Path) -> dict[str, int]:
    """``worker.process_total`` by ``status``, as the supervisor exported it at exit."""
    totals: collections.Counter[str] = collections.Counter()
    for line in out.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "metric" and record["name"] == "worker.process_total":
            totals[record["attributes"]["status"]] += record["value"]
    return dict(totals)


def test_spans_and_metrics_leave_the_supervisor_and_the_workers(
    root: Path, supervisors: Supervisors, tmp_path: Path
) -> None:
    """worker.process (start, status, stop) and worker.task (six units) reach the exporter."""
    env, out = _otel_env(tmp_path)
    install_app(root, "telemetry_app.py")
    write_root(root, task_source="telemetry_app:three", telemetry="otel")
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


def test_a_failed_start_counts_start_failure(
    root: Path, supervisors: Supervisors, tmp_path: Path
) -> None:
    """A source that is never ready: one ``start_failure``; the shutdown that follows
    succeeded (every worker reaped, files removed, lock released): one ``stop_success``."""
    env, out = _otel_env(tmp_path)
    write_root(root, task_source="lifecycle_app:not_ready", telemetry="otel")
    assert_failed(
        supervisors(root, env=env),
        root,
        "CORETSIA_WORKER_START_FAILED: worker-task-source-not-ready",
    )
    assert _process_totals(out) == {"start_failure": 1, "stop_success": 1}


def test_a_failed_stop_counts_stop_failure(
    root: Path, supervisors: Supervisors, tmp_path: Path
) -> None:
    """A stop that cannot reap every process (one survives SIGKILL): one ``stop_failure``
    after the run's ``start_success``."""
    survivor = root / "survivor"  # the guardian sees a live process while this exists
    survivor.touch()
    env, out = _otel_env(tmp_path, fault_env("survivor", str(survivor)))
    write_root(root, telemetry="otel", stop_timeout_ms=300, force_kill_timeout_ms=200)
    supervisor = supervisors.running(root, env=env)
    assert cli(root, "stop").returncode == 1
    # Not finish(): the guardian, still alive, holds the supervisor's output pipes.
    assert supervisor.proc.wait(timeout=30) == 1
    survivor.unlink()
    wait_for(lambda: not lock_held(root), timeout=10)
    assert supervisor.finish() == 1
    assert wait_gone(root) == []
    assert _process_totals(out) == {"start_success": 1, "stop_failure": 1}
