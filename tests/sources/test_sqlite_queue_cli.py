"""``coretsia-sqlite-queue``: enqueue from arguments and stdin, stats, short errors."""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
import sys
from pathlib import Path

import pytest
from commands import QUEUE_CLI, run_process

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


NOT_BOTH_NOT_NEITHER = (
    "coretsia-sqlite-queue: usage error: give message ids or --all, not both and not neither"
)
USAGE = {
    "retry": "usage: coretsia-sqlite-queue retry [-h] --db PATH [--all] [ID ...]",
    "purge": "usage: coretsia-sqlite-queue purge [-h] --db PATH (--done | --failed)",
}


def _bad_id(text: str) -> str:
    """argparse's error line for a retry ``ID`` that is not one."""
    return (
        "coretsia-sqlite-queue retry: error: argument ID: "
        f"not a message id: '{text}' (ids are 1 to 9223372036854775807)"
    )


def _payloads(db: Path) -> list[str]:
    with SqliteQueue(db) as queue:
        return [m.payload for m in iter(lambda: queue.lease("cli-test"), None)]


@pytest.fixture
def db(short_root: Path) -> Path:
    return short_root / "var" / "q.sqlite3"


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
    code, out, err = _run([argv[0], "--db", str(path), *argv[1:]], capsys, monkeypatch)
    assert (code, out) == (1, "")
    assert err == f"coretsia-sqlite-queue: error: {error}\n"
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
    code, out, err = _run(argv, capsys, monkeypatch)
    assert (code, out) == (2, "")
    assert "usage: coretsia-sqlite-queue" in err
    assert "Traceback" not in err


def test_the_console_script_is_installed(short_root: Path) -> None:
    """The real executable, as an operator runs it: stdin in, JSON stats out."""
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    enqueued = run_process(
        [QUEUE_CLI, "enqueue", "--db", "var/q.sqlite3"],
        stdin="job-1\njob-2\n",
        cwd=short_root,
        env=env,
    )
    assert (enqueued.returncode, enqueued.stdout, enqueued.stderr) == (0, "enqueued 2\n", "")
    stats = run_process(
        [QUEUE_CLI, "stats", "--db", "var/q.sqlite3", "--json"], cwd=short_root, env=env
    )
    assert (stats.returncode, stats.stderr) == (0, "")
    assert stats.stdout == '{"done":0,"failed":0,"in_flight":0,"pending":2}\n'


def _with_failures(db: Path) -> None:
    """Messages 1..4: 1 done, 2 and 3 failed (one with a message that needs escaping), 4 pending."""
    with SqliteQueue(db) as queue:
        queue.enqueue(["secret-1", "secret-2", "secret-3", "secret-4"])
        done = queue.lease("g")
        assert done is not None
        queue.ack(done)
        for error in ("ValueError", "mymod.Refused: bad\n\x1b[31mred"):
            message = queue.lease("g")
            assert message is not None
            queue.fail(message, 1, error=error)


class TestFailed:
    def test_text_lists_id_attempts_utc_time_and_error_never_the_payload(
        self, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _with_failures(db)
        code, out, err = _run(["failed", "--db", str(db)], capsys, monkeypatch)
        assert (code, err) == (0, "")
        lines = out.splitlines()
        assert len(lines) == 2
        first, second = (line.split("\t") for line in lines)
        assert first[:2] == ["2", "1"]
        assert first[3] == "ValueError"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", first[2])
        assert second[3] == "mymod.Refused: bad\\n\\x1b[31mred"  # no control characters
        assert "secret" not in out

    def test_json(
        self, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _with_failures(db)
        code, out, _ = _run(["failed", "--db", str(db), "--json"], capsys, monkeypatch)
        assert code == 0
        rows = json.loads(out)
        assert [(r["id"], r["attempts"], r["last_error"]) for r in rows] == [
            (2, 1, "ValueError"),
            (3, 1, "mymod.Refused: bad\n\x1b[31mred"),
        ]
        assert all(sorted(r) == ["attempts", "id", "last_error", "settled_at"] for r in rows)
        assert rows[0]["settled_at"].endswith("Z")
        assert "secret" not in out

    def test_no_failure_time_and_no_error_are_shown_as_such(
        self, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``fail`` without an error; a failure time missing (a row written by hand)."""
        with SqliteQueue(db) as queue:
            queue.enqueue(["secret"])
            message = queue.lease("g")
            assert message is not None
            assert queue.fail(message, 1) == "failed"
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("UPDATE messages SET settled_at = NULL WHERE id = 1")
        conn.close()
        assert _run(["failed", "--db", str(db)], capsys, monkeypatch) == (0, "1\t1\t-\t\n", "")
        assert _run(["failed", "--db", str(db), "--json"], capsys, monkeypatch) == (
            0,
            '[{"attempts":1,"id":1,"last_error":null,"settled_at":null}]\n',
            "",
        )

    def test_none_failed(
        self, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        SqliteQueue(db).close()
        assert _run(["failed", "--db", str(db)], capsys, monkeypatch) == (0, "", "")
        assert _run(["failed", "--db", str(db), "--json"], capsys, monkeypatch) == (0, "[]\n", "")


class TestRetry:
    def test_an_id_beyond_sqlites_integers_is_a_usage_error(self, db: Path) -> None:
        """The console script as an operator runs it: exit 2, argparse's message, nothing else."""
        _with_failures(db)
        retried = run_process([QUEUE_CLI, "retry", "--db", str(db), "99999999999999999999"])
        assert (retried.returncode, retried.stdout) == (2, "")
        assert retried.stderr.splitlines() == [USAGE["retry"], _bad_id("99999999999999999999")]
        with SqliteQueue(db) as queue:
            assert queue.stats() == {"pending": 1, "in_flight": 0, "done": 1, "failed": 2}

    def test_the_largest_id_is_looked_up(
        self, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _with_failures(db)
        assert _run(
            ["retry", "--db", str(db), "2", "9223372036854775807"], capsys, monkeypatch
        ) == (1, "retried 1\n", "coretsia-sqlite-queue: error: no message 9223372036854775807\n")

    def test_ids_retry_the_failed_and_report_the_rest(
        self, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _with_failures(db)
        code, out, err = _run(["retry", "--db", str(db), "3", "1", "77"], capsys, monkeypatch)
        assert (code, out) == (1, "retried 1\n")
        assert err == (
            "coretsia-sqlite-queue: error: no message 77\n"
            "coretsia-sqlite-queue: error: message 1 is not failed\n"
        )
        with SqliteQueue(db) as queue:
            assert queue.stats() == {"pending": 2, "in_flight": 0, "done": 1, "failed": 1}

    def test_all(
        self, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _with_failures(db)
        assert _run(["retry", "--db", str(db), "--all"], capsys, monkeypatch) == (
            0,
            "retried 2\n",
            "",
        )
        with SqliteQueue(db) as queue:
            assert queue.stats() == {"pending": 3, "in_flight": 0, "done": 1, "failed": 0}
            assert {m.attempts for m in iter(lambda: queue.lease("g"), None)} == {0}


class TestPurge:
    @pytest.mark.parametrize(
        ("flag", "count", "left"),
        [("--done", 1, {"done": 0, "failed": 2}), ("--failed", 2, {"done": 1, "failed": 0})],
    )
    def test_deletes_one_state_and_prints_the_count(
        self,
        db: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
        flag: str,
        count: int,
        left: dict[str, int],
    ) -> None:
        _with_failures(db)
        assert _run(["purge", "--db", str(db), flag], capsys, monkeypatch) == (
            0,
            f"purged {count}\n",
            "",
        )
        with SqliteQueue(db) as queue:
            assert queue.stats() == {"pending": 1, "in_flight": 0, **left}


@pytest.mark.parametrize(
    ("command", "tail", "message"),
    [
        ("retry", [], NOT_BOTH_NOT_NEITHER),
        ("retry", ["--all", "2"], NOT_BOTH_NOT_NEITHER),
        ("retry", ["0"], _bad_id("0")),
        ("retry", ["-1"], _bad_id("-1")),
        ("retry", ["x"], _bad_id("x")),
        ("retry", ["9223372036854775808"], _bad_id("9223372036854775808")),  # 2**63
        ("retry", ["99999999999999999999"], _bad_id("99999999999999999999")),
        ("retry", ["1", "99999999999999999999"], _bad_id("99999999999999999999")),
        (
            "purge",
            [],
            "coretsia-sqlite-queue purge: error: one of the arguments --done --failed is required",
        ),
        (
            "purge",
            ["--done", "--failed"],
            "coretsia-sqlite-queue purge: error: "
            "argument --failed: not allowed with argument --done",
        ),
    ],
)
def test_retry_and_purge_usage_errors_change_nothing(
    db: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    tail: list[str],
    message: str,
) -> None:
    """Ids (1 to SQLite's largest integer) or --all for retry; exactly one state for purge.

    argparse's own errors print the command's usage line first; ours (a command line that
    parses but makes no sense) only the one line.
    """
    _with_failures(db)
    code, out, err = _run([command, "--db", str(db), *tail], capsys, monkeypatch)
    assert (code, out) == (2, "")
    ours = message == NOT_BOTH_NOT_NEITHER
    assert err.splitlines() == ([message] if ours else [USAGE[command], message])
    with SqliteQueue(db) as queue:
        assert queue.stats() == {"pending": 1, "in_flight": 0, "done": 1, "failed": 2}


@pytest.mark.parametrize(
    "argv",
    [["failed"], ["failed", "--json"], ["retry", "--all"], ["retry", "1"], ["purge", "--done"]],
)
def test_the_operator_commands_never_create_a_database(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    code, out, err = _run([argv[0], "--db", str(db), *argv[1:]], capsys, monkeypatch)
    assert (code, out) == (1, "")
    assert err == "coretsia-sqlite-queue: error: the queue database does not exist\n"
    assert not db.exists()
    assert not db.parent.exists()


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
    enqueued = run_process([QUEUE_CLI, "enqueue", "--db", str(db), "job"], umask=umask)
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
