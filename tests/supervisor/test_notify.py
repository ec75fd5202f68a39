"""Notifier's reading of the environment, and its one warning on failure."""

from __future__ import annotations

import os

import pytest

from coretsia.supervisor.daemon.notify import Notifier


@pytest.mark.parametrize("value", ["", "relative.sock", "tcp://x"])
def test_unusable_notify_socket_is_disabled(value: str) -> None:
    """Only /path and @abstract are addresses; anything else means no service manager."""
    assert not Notifier({"NOTIFY_SOCKET": value}).enabled


@pytest.mark.parametrize(
    ("env", "interval"),
    [
        ({"WATCHDOG_USEC": "2000000"}, 1.0),
        ({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}, 1.0),
        ({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval(env: dict[str, str], interval: float | None) -> None:
    """Half the interval, and only when the watchdog is meant for this process."""
    assert Notifier(env).watchdog_interval_s == interval


def test_failure_is_reported_once(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    """A socket nobody listens on is one warning on stderr, not an exception."""
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "nobody.sock")})
    notifier.ready("running")
    notifier.stopping()
    assert capsys.readouterr().err == "coretsia-supervisor: warning: sd_notify failed\n"
