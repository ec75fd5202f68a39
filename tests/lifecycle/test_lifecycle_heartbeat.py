"""A hung worker is seen: the heartbeat with a real supervisor, guardian and workers.

``kill -STOP`` of a worker makes ``health`` fail with ``worker-slot-unresponsive`` within
``heartbeat_timeout_ms``, ``status`` unchanged, the slot named in the log; ``kill -CONT``
brings it back. A task that runs ten times the timeout does not trip it. Off (the
default), the workers run no heartbeat thread at all.
"""

from __future__ import annotations

import calendar
import json
import time
from pathlib import Path

import psutil
from pools import Supervisors, cli, wait_for, wait_gone, write_root

TIMEOUT_MS = 1000
SLACK_S = 3.0
"""Past the timeout, for a ``health`` command to start and answer on a loaded machine."""

UNRESPONSIVE = "worker-slot-unresponsive"
HEALTHY = "worker-pool-healthy"


def _health(root: Path) -> tuple[int, str]:
    result = cli(root, "health", "--json")
    reason: str = json.loads(result.stdout)["reason"]
    return result.returncode, reason


def _until_health(root: Path, reason: str, within_s: float) -> None:
    """Ask ``health`` until it answers ``reason``; fail after ``within_s``."""
    deadline = time.monotonic() + within_s
    while (answer := _health(root))[1] != reason:
        assert time.monotonic() < deadline, answer


def _slot_of(worker: psutil.Process) -> int:
    (argument,) = [a for a in worker.cmdline() if a.startswith("--coretsia-worker-slot=")]
    return int(argument.partition("=")[2])


def _logged_at(line: dict[str, object]) -> float:
    """A log line's ``ts`` (UTC, milliseconds) as seconds since the epoch."""
    ts = str(line["ts"])
    return calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) + int(ts[20:23]) / 1000


def _task_events(root: Path, name: str) -> list[str]:
    log = root / "recycle.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if line.startswith(name + " ")]


def test_a_stopped_worker_fails_health_until_it_continues(
    root: Path, supervisors: Supervisors
) -> None:
    """SIGSTOP: health fails with the slot's token within the timeout, status still says
    2/2, the log names the slot; SIGCONT: healthy again, and logged."""
    write_root(root, heartbeat_timeout_ms=TIMEOUT_MS)
    supervisor = supervisors.running(root)
    workers = supervisor.workers()
    # Main + heartbeat: the heartbeat's thread starts right after ``ready`` went, so a
    # worker may still be starting it when the pool reports running.
    wait_for(lambda: [worker.num_threads() for worker in workers] == [2, 2], SLACK_S)
    hung = workers[0]
    slot = _slot_of(hung)
    _until_health(root, HEALTHY, SLACK_S)
    stopped_at, stopped = time.time(), time.monotonic()
    hung.suspend()
    try:
        _until_health(root, UNRESPONSIVE, TIMEOUT_MS / 1000 + SLACK_S)
        seen_after = time.monotonic() - stopped
        code, reason = _health(root)
        status = cli(root, "status", "--json")
    finally:
        hung.resume()
    assert (code, reason) == (1, UNRESPONSIVE)
    summary = json.loads(status.stdout)
    assert status.returncode == 0
    assert (summary["status"], summary["ready_worker_count"], summary["worker_count"]) == (
        "running",
        2,
        2,
    )
    _until_health(root, HEALTHY, SLACK_S)
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0, supervisor.stderr
    changes = [
        line
        for line in supervisor.logs
        if line["event"] in ("worker.unresponsive", "worker.responsive")
    ]
    assert [(line["event"], line["level"], line["slot"]) for line in changes] == [
        ("worker.unresponsive", "warning", slot),
        ("worker.responsive", "info", slot),
    ]
    # Flagged within the timeout of the last beat, which went at most a third of it
    # before the stop: never early, and late only by the supervisor's own scheduling.
    flagged_after = _logged_at(changes[0]) - stopped_at
    assert TIMEOUT_MS / 1000 * 0.6 <= flagged_after <= TIMEOUT_MS / 1000 + 1.0, flagged_after
    assert seen_after <= TIMEOUT_MS / 1000 + SLACK_S


def test_a_task_ten_times_the_timeout_does_not_trip_it(
    root: Path, supervisors: Supervisors
) -> None:
    """The beats come from the worker's own thread, not from the task: a task busy in
    Python for ten timeouts leaves the pool healthy all along."""
    timeout_ms = 600
    write_root(
        root,
        workers=1,
        task_source="lifecycle_app:long_task",
        heartbeat_timeout_ms=timeout_ms,
        source_options={"task_ms": timeout_ms * 10},
    )
    supervisor = supervisors.running(root)
    wait_for(lambda: bool(_task_events(root, "task-started")))
    answers = []
    while not _task_events(root, "task-ended"):
        answers.append(_health(root))
    assert len(answers) >= 3, answers
    assert set(answers) == {(0, HEALTHY)}, answers
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0, supervisor.stderr
    assert not [line for line in supervisor.logs if line["event"] == "worker.unresponsive"]


def test_a_stopped_worker_does_not_hold_up_a_stop(root: Path, supervisors: Supervisors) -> None:
    """Nothing is done to a hung worker until the pool stops; then the stop's phases end
    it (SIGTERM stays pending on a stopped process; SIGKILL does not), within budget."""
    write_root(
        root, heartbeat_timeout_ms=TIMEOUT_MS, stop_timeout_ms=1000, force_kill_timeout_ms=500
    )
    supervisor = supervisors.running(root)
    supervisor.workers()[0].suspend()
    _until_health(root, UNRESPONSIVE, TIMEOUT_MS / 1000 + SLACK_S)
    started = time.monotonic()
    result = cli(root, "stop")
    assert (result.returncode, result.stdout.strip()) == (0, "stopped"), result.stderr
    assert time.monotonic() - started < (1000 + 2 * 500) / 1000 + SLACK_S
    assert supervisor.finish() == 8, supervisor.stderr  # forced: the hung worker was killed
    assert wait_gone(root) == []


def test_off_by_default_no_thread_in_the_workers(root: Path, supervisors: Supervisors) -> None:
    """Without heartbeat_timeout_ms, each worker is one thread, and health is the seed's."""
    write_root(root)
    supervisor = supervisors.running(root)
    assert [worker.num_threads() for worker in supervisor.workers()] == [1, 1]
    assert _health(root) == (0, HEALTHY)
