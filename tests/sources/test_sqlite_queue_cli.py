"""``coretsia-queue``: enqueue from arguments and stdin, stats, short errors for a file
that is not a queue, usage errors, and private files whatever the umask.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest
from commands import QUEUE_CLI, run_process
from queue_cli import run_cli, sqlite_url

from coretsia.sources.sqlite_queue import SqliteQueue


def _payloads(db: Path) -> list[str]:
    with SqliteQueue(db) as queue:
        return [m.payload for m in iter(lambda: queue.lease("cli-test"), None)]


def test_enqueue_from_arguments(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_cli(
        ["enqueue", "--db", sqlite_url(db), "a", "b c", ""], capsys, monkeypatch
    )
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
    code, out, _ = run_cli(
        ["enqueue", "--db", sqlite_url(db), *argv_tail], capsys, monkeypatch, stdin
    )
    assert (code, out) == (0, "enqueued 3\n")
    assert _payloads(db) == ["one", "two words", "  three  "]


def test_dash_reads_stdin_in_place(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, _ = run_cli(
        ["enqueue", "--db", sqlite_url(db), "first", "-", "last"], capsys, monkeypatch, "x\ny\n"
    )
    assert code == 0
    assert _payloads(db) == ["first", "x", "y", "last"]


def test_dash_twice_is_a_usage_error(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_cli(["enqueue", "--db", sqlite_url(db), "-", "-"], capsys, monkeypatch)
    assert (code, out) == (2, "")
    assert err == "coretsia-queue: usage error: '-' (read stdin) may be given once\n"
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
    code, out, _ = run_cli(["stats", "--db", sqlite_url(db)], capsys, monkeypatch)
    assert code == 0
    assert out == "pending    1\nin_flight  1\ndone       1\nfailed     1\n"
    code, out, _ = run_cli(["stats", "--db", sqlite_url(db), "--json"], capsys, monkeypatch)
    assert code == 0
    assert out == '{"done":1,"failed":1,"in_flight":1,"pending":1}\n'
    assert json.loads(out) == {"pending": 1, "in_flight": 1, "done": 1, "failed": 1}


def test_stats_of_a_missing_database_fails_without_creating_it(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_cli(["stats", "--db", sqlite_url(db)], capsys, monkeypatch)
    assert (code, out) == (1, "")
    assert err == "coretsia-queue: error: the queue database does not exist\n"
    assert not db.exists()


EVERY_COMMAND = [
    ["enqueue", "x"],
    ["stats"],
    ["stats", "--json"],
    ["failed"],
    ["failed", "--json"],
    ["retry", "1"],
    ["retry", "--all"],
    ["purge", "--done"],
    ["purge", "--failed"],
]


def _refused_untouched(
    path: Path,
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    error: str,
) -> None:
    """The command ``argv`` on ``path`` (a file that is not a queue) exits 1 with ``error``
    alone, refused before anything was written (not even WAL): the file is unchanged to
    the byte and nothing appeared beside it."""
    before = path.read_bytes()
    code, out, err = run_cli([argv[0], "--db", sqlite_url(path), *argv[1:]], capsys, monkeypatch)
    assert (code, out) == (1, "")
    assert err == f"coretsia-queue: error: {error}\n"
    assert path.read_bytes() == before
    assert os.listdir(path.parent) == [path.name]


@pytest.mark.parametrize("argv", EVERY_COMMAND)
def test_a_file_that_is_not_a_database_is_a_short_error(
    short_root: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
) -> None:
    path = short_root / "notes.txt"
    path.write_text("not a database\n" * 200)
    _refused_untouched(
        path, argv, capsys, monkeypatch, "cannot use the queue database: file is not a database"
    )


@pytest.mark.parametrize("argv", EVERY_COMMAND)
def test_another_applications_database_is_a_short_error(
    short_root: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
) -> None:
    path = short_root / "app.sqlite3"
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.close()
    _refused_untouched(path, argv, capsys, monkeypatch, "the file is not a Coretsia queue database")
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("notes",)]
        assert conn.execute("SELECT text FROM notes").fetchall() == [("mine",)]
    finally:
        conn.close()


@pytest.mark.parametrize(
    "argv", [[], ["stats"], ["enqueue", "a"], ["frobnicate", "--db", "x"], ["stats", "--db"]]
)
def test_usage_errors_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_cli(argv, capsys, monkeypatch)
    assert (code, out) == (2, "")
    assert "usage: coretsia-queue" in err
    assert "Traceback" not in err


def test_the_console_script_is_installed(short_root: Path) -> None:
    """The real executable, as an operator runs it: stdin in, JSON stats out."""
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    enqueued = run_process(
        [QUEUE_CLI, "enqueue", "--db", "sqlite:///var/q.sqlite3"],
        stdin="job-1\njob-2\n",
        cwd=short_root,
        env=env,
    )
    assert (enqueued.returncode, enqueued.stdout, enqueued.stderr) == (0, "enqueued 2\n", "")
    stats = run_process(
        [QUEUE_CLI, "stats", "--db", "sqlite:///var/q.sqlite3", "--json"], cwd=short_root, env=env
    )
    assert (stats.returncode, stats.stderr) == (0, "")
    assert stats.stdout == '{"done":0,"failed":0,"in_flight":0,"pending":2}\n'


@pytest.mark.parametrize("umask", [0o022, 0o000, 0o277])
def test_files_and_directories_are_private_whatever_the_umask(short_root: Path, umask: int) -> None:
    """The console script (and a worker's waiter and lock) create 0600 files and 0700 dirs.

    Under 022 and 000 a plain ``mkdir``/``open`` would give 0755/0644 or 0777/0666; 277
    takes the owner's own write bit, which only setting the mode after creating undoes
    (a ``0500`` parent could not even hold the database).
    """
    existing = short_root / "mine"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    db = existing / "a" / "b" / "q.sqlite3"
    enqueued = run_process([QUEUE_CLI, "enqueue", "--db", sqlite_url(db), "job"], umask=umask)
    assert (enqueued.returncode, enqueued.stderr) == (0, "")
    assert os.listdir(db.parent) == ["q.sqlite3"]  # the worker below makes the rest
    worker = (
        "import json, os, sys\n"
        "from coretsia.sources.sqlite_queue import SqliteQueue\n"
        "with SqliteQueue(sys.argv[1], synchronous='NORMAL') as queue:\n"
        "    waiter = queue.waiter()\n"
        "    assert queue.lease('gen') is not None\n"
        "    paths = [queue.path + '-wal', queue.path + '-shm',\n"
        "             queue.generations_dir + '/gen.lock']\n"
        "    print(json.dumps({os.path.basename(p): os.stat(p).st_mode & 0o777 for p in paths}))\n"
        "    waiter.close()\n"
    )
    leased = run_process([sys.executable, "-c", worker, str(db)], umask=umask)
    assert (leased.returncode, leased.stderr) == (0, "")
    # While open (SQLite removes -wal and -shm when the last connection closes; the lock
    # file goes with the queue object):
    assert json.loads(leased.stdout) == {
        "q.sqlite3-wal": 0o600,
        "q.sqlite3-shm": 0o600,
        "gen.lock": 0o600,
    }
    modes = {
        path.name: path.stat().st_mode & 0o777
        for path in (
            existing,
            existing / "a",
            existing / "a" / "b",
            db,
            db.with_name("q.sqlite3.notify"),
            db.with_name("q.sqlite3.generations"),
        )
    }
    assert modes == {
        "mine": 0o755,  # the user's own directory is left as it was
        "a": 0o700,
        "b": 0o700,
        "q.sqlite3": 0o600,
        "q.sqlite3.notify": 0o700,
        "q.sqlite3.generations": 0o700,
    }
