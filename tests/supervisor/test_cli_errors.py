"""No traceback ever reaches the user: every command maps the unexpected to its token."""

from __future__ import annotations

from pathlib import Path

import pytest

from coretsia.supervisor import cli
from coretsia.worker_protocol.exceptions import WorkerError
from coretsia.worker_protocol.exit_codes import ExitCode


def _boom(_args: object) -> ExitCode:
    raise RuntimeError("secret detail at /srv/app with token 5f5f")


@pytest.mark.parametrize(
    ("command", "expected", "code"),
    [
        ("start", "CORETSIA_WORKER_START_FAILED: worker-start-failed", 1),
        ("stop", "CORETSIA_WORKER_COMMUNICATION_FAILED: worker-communication-failed", 4),
        ("status", "CORETSIA_WORKER_COMMUNICATION_FAILED: worker-communication-failed", 4),
        ("health", "CORETSIA_WORKER_COMMUNICATION_FAILED: worker-communication-failed", 4),
    ],
)
def test_unexpected_exception_becomes_the_catch_all(
    command: str,
    expected: str,
    code: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """An injected exception prints only the command's catch-all token and exit code."""
    _, catch_all = cli.COMMANDS[command]
    monkeypatch.setitem(cli.COMMANDS, command, (_boom, catch_all))
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    with pytest.raises(SystemExit) as info:
        cli.main([command, "--root", str(tmp_path)])
    assert info.value.code == code
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == expected + "\n"


def test_worker_error_keeps_its_own_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A WorkerError raised by a command keeps its code, reason and exit status."""
    from coretsia.worker_protocol.catalogue import Reason
    from coretsia.worker_protocol.exceptions import WorkerLifecycleFailedError

    def fail(_args: object) -> ExitCode:
        raise WorkerLifecycleFailedError(Reason.SHUTDOWN_FAILED)

    monkeypatch.setitem(cli.COMMANDS, "stop", (fail, cli.COMMANDS["stop"][1]))
    with pytest.raises(SystemExit) as info:
        cli.main(["stop", "--root", str(tmp_path)])
    assert info.value.code == 1
    assert capsys.readouterr().err == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-shutdown-failed\n"


def test_missing_root_is_a_config_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A --root that does not exist exits 6 without echoing the path."""
    with pytest.raises(SystemExit) as info:
        cli.main(["status", "--root", str(tmp_path / "nope")])
    assert info.value.code == 6
    err = capsys.readouterr().err
    assert str(tmp_path) not in err
    assert err == (
        "CORETSIA_WORKER_CONFIG_INVALID: worker-config-invalid (key --root, rule file-missing)\n"
    )


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's usage errors keep their conventional status 2."""
    with pytest.raises(SystemExit) as info:
        cli.main(["frobnicate"])
    assert info.value.code == 2


def test_every_catch_all_is_a_worker_error() -> None:
    """Each command's catch-all builds a proper WorkerError."""
    for _, catch_all in cli.COMMANDS.values():
        assert isinstance(catch_all(), WorkerError)
