"""``coretsia-queue`` run in the test's own interpreter, as its console script would run
it: argv in, exit status and captured output back.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from coretsia.sources import cli


def run_cli(
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: str = "",
) -> tuple[int, str, str]:
    """Run the command line ``argv`` with ``stdin`` as its standard input; its exit status
    (argparse's own exits included), stdout and stderr."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    try:
        code = cli.main(argv)
    except SystemExit as exit_:  # argparse's own usage errors and --version
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def sqlite_url(path: Path | str) -> str:
    """``--db`` for the SQLite file ``path`` (absolute: ``sqlite:////...``)."""
    return f"sqlite:///{path}"
