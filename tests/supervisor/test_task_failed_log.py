"""``task.failed``: what the supervisor logs of a worker's ``task-failed`` frame."""

from __future__ import annotations

from coretsia.supervisor.daemon.slots import log_task_failure
from coretsia.worker_protocol.worker_channel import TaskFailed


def test_attempt_and_retried_are_left_out_when_the_source_does_not_say(
    lines: list[dict[str, object]],
) -> None:
    log_task_failure(3, TaskFailed("ValueError"))
    assert [{k: v for k, v in line.items() if k != "ts"} for line in lines] == [
        {"event": "task.failed", "level": "warning", "slot": 3, "error_type": "ValueError"}
    ]


def test_every_field_the_source_gives_is_logged(lines: list[dict[str, object]]) -> None:
    log_task_failure(0, TaskFailed("app.Declined", 3, retried=False))
    assert [{k: v for k, v in line.items() if k != "ts"} for line in lines] == [
        {
            "event": "task.failed",
            "level": "warning",
            "slot": 0,
            "error_type": "app.Declined",
            "attempt": 3,
            "retried": False,
        }
    ]
