"""Log lines: stable events, JSON that parses, and nothing unsafe in any of them."""

from __future__ import annotations

import json
from pathlib import Path

from pools import Supervisor, Supervisors, cli, wait_for, wait_gone, write_root
from ports import free_port

from coretsia.worker_protocol.internal.runtime.logs import SAFE_FIELDS

ENVELOPE = {"event", "level", "ts"}


def _assert_safe(supervisor: Supervisor, *secrets: str) -> list[str]:
    """Every log line is a JSON object of safe fields that mentions no secret."""
    events = []
    for line in supervisor.stderr.splitlines():
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        assert set(entry) <= SAFE_FIELDS | ENVELOPE, entry
        for key, value in entry.items():
            if key == "ts":
                continue
            for secret in secrets:
                assert secret not in str(value), (key, entry)
        events.append(entry["event"])
    return events


def test_full_lifecycle_logs(root: Path, supervisors: Supervisors) -> None:
    """A whole run logs its lifecycle in order, with no credential, path or port."""
    port = free_port()
    with (root / "coretsia.toml").open("a") as config:
        config.write(f'\n[worker.control]\ntransport = "tcp"\n\n[worker.tcp]\nport = {port}\n')
    supervisor = supervisors(root)
    supervisor.wait_running()
    credential = json.loads((root / "var/tmp/worker.lifecycle.json").read_text())["credential"]
    assert cli(root, "status").returncode == 0
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0
    events = _assert_safe(supervisor, credential, str(root), str(port), "127.0.0.1")
    for expected in (
        "pool.starting",
        "worker.spawned",
        "worker.ready",
        "pool.running",
        "control.served",
        "pool.stopping",
        "pool.stopped",
        "guardian.released",
    ):
        assert expected in events, (expected, events)
    order = [events.index(e) for e in ("pool.starting", "pool.running", "pool.stopped")]
    assert order == sorted(order)
    exits = [e for e in supervisor.logs if e["event"] == "worker.exited"]
    assert {e["exit_kind"] for e in exits} == {"exit-0"}
    assert sorted(e["slot"] for e in exits) == [0, 1]


def test_failed_start_logs(root: Path, supervisors: Supervisors) -> None:
    """A failed start logs pool.failed with its token, and no exception message."""
    write_root(root, task_source="lifecycle_app:not_ready")
    supervisor = supervisors(root)
    assert supervisor.finish() == 1
    _assert_safe(supervisor, "secret", "broker", str(root))
    failed = [e for e in supervisor.logs if e["event"] == "pool.failed"]
    assert failed == [
        {
            "event": "pool.failed",
            "level": "error",
            "reason": "worker-task-source-not-ready",
            "status": "CORETSIA_WORKER_START_FAILED",
            "ts": failed[0]["ts"],
        }
    ]


def test_containment_logs(root: Path, supervisors: Supervisors) -> None:
    """The guardian logs its containment of a killed supervisor's generation."""
    supervisor = supervisors(root)
    supervisor.wait_running()
    supervisor.kill()
    supervisor.finish()  # reads to the end: the guardian's lines included
    assert wait_gone(root) == []
    events = _assert_safe(supervisor, str(root))
    assert "guardian.containment" in events
    assert "guardian.released" in events
    killed = [e for e in supervisor.logs if e["event"] == "worker.exited"]
    assert killed == []  # nobody left to log worker exits: the supervisor was dead


def test_text_format_on_request(root: Path, supervisors: Supervisors) -> None:
    """--log-format text writes readable lines instead of JSON, for supervisor and guardian."""
    supervisor = supervisors(root, "--log-format", "text")
    supervisor.wait_running()
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0
    lines = supervisor.stderr.splitlines()
    assert lines
    assert [line for line in lines if not line.startswith("coretsia: ")] == [], lines
    assert any(line.startswith("coretsia: pool.running pid=") for line in lines)
    assert "coretsia: guardian.released" in lines


FAILING_HANDLER = """
def handle(payload):
    raise ValueError("the message names " + payload)
"""


def test_failed_task_is_logged_with_safe_fields_only(root: Path, supervisors: Supervisors) -> None:
    """A failing task logs task.failed: slot, attempt, retried, class name; no payload."""
    from coretsia.sources.sqlite_queue import SqliteQueue

    options = {"handler": "failing:handle", "max_attempts": 2}
    write_root(root, task_source="sqlite", workers=1, source_options=options)
    (root / "failing.py").write_text(FAILING_HANDLER)
    with SqliteQueue(root / "var/queue.sqlite3") as queue:
        queue.enqueue(["card-4111-1111"])
        supervisor = supervisors(root, "--log-format", "json")
        supervisor.wait_running()
        wait_for(lambda: queue.stats()["failed"] == 1)
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0
    _assert_safe(supervisor, "card-4111-1111", "the message names")
    failures = [e for e in supervisor.logs if e["event"] == "task.failed"]
    fields = {"event", "level", "ts", "slot", "attempt", "retried", "error_type"}
    assert all(set(e) == fields for e in failures), failures
    assert [(e["slot"], e["attempt"], e["retried"], e["error_type"]) for e in failures] == [
        (0, 1, True, "ValueError"),
        (0, 2, False, "ValueError"),
    ]
    assert {e["level"] for e in failures} == {"warning"}
