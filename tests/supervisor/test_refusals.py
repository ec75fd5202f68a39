"""The refusal log: a count per cause, at most one line per interval, nothing lost."""

from __future__ import annotations

from coretsia.supervisor.daemon.refusals import RefusalCause, RefusalLog


class Clock:
    """A clock the test moves by hand: the log's interval logic, not time, is tested."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _seen(lines: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(line["cause"], line["count"]) for line in lines]


def test_first_refusal_is_logged_at_once_and_a_burst_is_folded(
    lines: list[dict[str, object]],
) -> None:
    clock = Clock()
    log = RefusalLog(interval=1.0, clock=clock)
    log.refused(RefusalCause.CREDENTIAL)
    assert _seen(lines) == [("credential", 1)]
    for _ in range(500):
        log.refused(RefusalCause.CREDENTIAL)
    assert _seen(lines) == [("credential", 1)]  # within the interval: counted, not logged
    clock.now += 1.0
    log.refused(RefusalCause.CREDENTIAL)
    assert _seen(lines) == [("credential", 1), ("credential", 501)]
    assert {line["level"] for line in lines} == {"warning"}


def test_causes_have_their_own_budget(lines: list[dict[str, object]]) -> None:
    clock = Clock()
    log = RefusalLog(interval=1.0, clock=clock)
    log.refused(RefusalCause.MALFORMED)
    log.refused(RefusalCause.INCOMPLETE)
    log.refused(RefusalCause.MALFORMED)
    assert _seen(lines) == [("malformed", 1), ("incomplete", 1)]


def test_flush_logs_what_is_still_counted_and_nothing_twice(
    lines: list[dict[str, object]],
) -> None:
    clock = Clock()
    log = RefusalLog(interval=1.0, clock=clock)
    for _ in range(3):
        log.refused(RefusalCause.CREDENTIAL)
    log.flush()
    log.flush()
    assert _seen(lines) == [("credential", 1), ("credential", 2)]
