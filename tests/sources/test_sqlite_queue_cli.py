"""``coretsia-sqlite-queue``: enqueue from arguments and stdin, stats, short errors."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coretsia.sources import cli
from coretsia.sources.sqlite_queue import SqliteQueue


def _run(
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: str = "",
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    try:
        code = cli.main(argv)
    except SystemExit as exit_:  # argparse's own usage errors and --version
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def _payloads(db: Path) -> list[str]:
    with SqliteQueue(db) as queue:
        return [m.payload for m in iter(lambda: queue.lease("cli-test"), None)]


@pytest.fixture
def db(short_dir: Path) -> Path:
    return short_dir / "var" / "q.sqlite3"


def test_enqueue_from_arguments(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = _run(["enqueue", "--db", str(db), "a", "b c", ""], capsys, monkeypatch)
    assert (code, out, err) == (0, "enqueued 3\n", "")
    assert _payloads(db) == ["a", "b c", ""]


@pytest.mark.parametrize("argv_tail", [[], ["-"]])
def test_enqueue_from_stdin_one_per_line(
    db: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv_tail: list[str],
) -> None:
    """Line ends (\\n or \\r\\n) are stripped and blank lines skipped."""
    stdin = "one\n\ntwo words\r\n  three  \n"
    code, out, _ = _run(["enqueue", "--db", str(db), *argv_tail], capsys, monkeypatch, stdin)
    assert (code, out) == (0, "enqueued 3\n")
    assert _payloads(db) == ["one", "two words", "  three  "]


def test_dash_reads_stdin_in_place(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, _ = _run(
        ["enqueue", "--db", str(db), "first", "-", "last"], capsys, monkeypatch, "x\ny\n"
    )
    assert code == 0
    assert _payloads(db) == ["first", "x", "y", "last"]


def test_dash_twice_is_a_usage_error(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = _run(["enqueue", "--db", str(db), "-", "-"], capsys, monkeypatch)
    assert (code, out) == (2, "")
    assert err == "coretsia-sqlite-queue: usage error: '-' (read stdin) may be given once\n"
    assert not db.exists()


def test_stats_text_and_json(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with SqliteQueue(db) as queue:
        queue.enqueue(["a", "b", "c", "d"])
        done, failed, _ = (queue.lease("g") for _ in range(3))
        assert done is not None
        assert failed is not None
        queue.ack(done)
        queue.fail(failed, 1)
    code, out, _ = _run(["stats", "--db", str(db)], capsys, monkeypatch)
    assert code == 0
    assert out == "pending    1\nin_flight  1\ndone       1\nfailed     1\n"
    code, out, _ = _run(["stats", "--db", str(db), "--json"], capsys, monkeypatch)
    assert code == 0
    assert out == '{"done":1,"failed":1,"in_flight":1,"pending":1}\n'
    assert json.loads(out) == {"pending": 1, "in_flight": 1, "done": 1, "failed": 1}


def test_stats_of_a_missing_database_fails_without_creating_it(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = _run(["stats", "--db", str(db)], capsys, monkeypatch)
    assert (code, out) == (1, "")
    assert err == "coretsia-sqlite-queue: error: the queue database does not exist\n"
    assert not db.exists()


def test_a_foreign_file_is_a_short_error(
    short_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = short_dir / "notes.txt"
    path.write_text("not a database\n" * 200)
    for argv in (["stats", "--db", str(path)], ["enqueue", "--db", str(path), "x"]):
        code, out, err = _run(argv, capsys, monkeypatch)
        assert (code, out) == (1, "")
        assert err.startswith("coretsia-sqlite-queue: error: ")
        assert err.count("\n") == 1
        assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv", [[], ["stats"], ["enqueue", "a"], ["frobnicate", "--db", "x"], ["stats", "--db"]]
)
def test_usage_errors_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = _run(argv, capsys, monkeypatch)
    assert (code, out) == (2, "")
    assert "usage: coretsia-sqlite-queue" in err
    assert "Traceback" not in err


def test_the_console_script_is_installed(short_dir: Path) -> None:
    """The real executable, as an operator runs it: stdin in, JSON stats out."""
    script = Path(sys.executable).with_name("coretsia-sqlite-queue")
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    enqueued = subprocess.run(
        [str(script), "enqueue", "--db", "var/q.sqlite3"],
        input="job-1\njob-2\n",
        capture_output=True,
        text=True,
        cwd=short_dir,
        env=env,
        timeout=30,
        check=False,
    )
    assert (enqueued.returncode, enqueued.stdout, enqueued.stderr) == (0, "enqueued 2\n", "")
    stats = subprocess.run(
        [str(script), "stats", "--db", "var/q.sqlite3", "--json"],
        capture_output=True,
        text=True,
        cwd=short_dir,
        env=env,
        timeout=30,
        check=False,
    )
    assert (stats.returncode, stats.stderr) == (0, "")
    assert stats.stdout == '{"done":0,"failed":0,"in_flight":0,"pending":2}\n'
