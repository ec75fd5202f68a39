"""``coretsia-queue``'s operator commands: ``failed`` lists the failures (never a
payload), ``retry`` by id or ``--all``, ``purge`` one settled state; a usage error changes
nothing, and none of them creates a database.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from commands import QUEUE_CLI, run_process
from queue_cli import run_cli, sqlite_url

from coretsia.sources.sqlite_queue import SqliteQueue

NOT_BOTH_NOT_NEITHER = (
    "coretsia-queue: usage error: give message ids or --all, not both and not neither"
)
USAGE = {
    "retry": "usage: coretsia-queue retry [-h] --db URL [--queue NAME] [--all] [ID ...]",
    "purge": "usage: coretsia-queue purge [-h] --db URL [--queue NAME] (--done | --failed)",
}


def _bad_id(text: str) -> str:
    """argparse's error line for a retry ``ID`` that is not one."""
    return (
        "coretsia-queue retry: error: argument ID: "
        f"not a message id: '{text}' (ids are 1 to 9223372036854775807)"
    )


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
        code, out, err = run_cli(["failed", "--db", sqlite_url(db)], capsys, monkeypatch)
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
        code, out, _ = run_cli(["failed", "--db", sqlite_url(db), "--json"], capsys, monkeypatch)
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
        assert run_cli(["failed", "--db", sqlite_url(db)], capsys, monkeypatch) == (
            0,
            "1\t1\t-\t\n",
            "",
        )
        assert run_cli(["failed", "--db", sqlite_url(db), "--json"], capsys, monkeypatch) == (
            0,
            '[{"attempts":1,"id":1,"last_error":null,"settled_at":null}]\n',
            "",
        )

    def test_none_failed(
        self, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        SqliteQueue(db).close()
        assert run_cli(["failed", "--db", sqlite_url(db)], capsys, monkeypatch) == (0, "", "")
        assert run_cli(["failed", "--db", sqlite_url(db), "--json"], capsys, monkeypatch) == (
            0,
            "[]\n",
            "",
        )


class TestRetry:
    def test_an_id_beyond_sqlites_integers_is_a_usage_error(self, db: Path) -> None:
        """The console script as an operator runs it: exit 2, argparse's message, nothing else."""
        _with_failures(db)
        retried = run_process([QUEUE_CLI, "retry", "--db", sqlite_url(db), "99999999999999999999"])
        assert (retried.returncode, retried.stdout) == (2, "")
        assert retried.stderr.splitlines() == [USAGE["retry"], _bad_id("99999999999999999999")]
        with SqliteQueue(db) as queue:
            assert queue.stats() == {"pending": 1, "in_flight": 0, "done": 1, "failed": 2}

    def test_the_largest_id_is_looked_up(
        self, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _with_failures(db)
        assert run_cli(
            ["retry", "--db", sqlite_url(db), "2", "9223372036854775807"], capsys, monkeypatch
        ) == (1, "retried 1\n", "coretsia-queue: error: no message 9223372036854775807\n")

    def test_ids_retry_the_failed_and_report_the_rest(
        self, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _with_failures(db)
        code, out, err = run_cli(
            ["retry", "--db", sqlite_url(db), "3", "1", "77"], capsys, monkeypatch
        )
        assert (code, out) == (1, "retried 1\n")
        assert err == (
            "coretsia-queue: error: no message 77\ncoretsia-queue: error: message 1 is not failed\n"
        )
        with SqliteQueue(db) as queue:
            assert queue.stats() == {"pending": 2, "in_flight": 0, "done": 1, "failed": 1}

    def test_all(
        self, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _with_failures(db)
        assert run_cli(["retry", "--db", sqlite_url(db), "--all"], capsys, monkeypatch) == (
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
        assert run_cli(["purge", "--db", sqlite_url(db), flag], capsys, monkeypatch) == (
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
            "coretsia-queue purge: error: one of the arguments --done --failed is required",
        ),
        (
            "purge",
            ["--done", "--failed"],
            "coretsia-queue purge: error: argument --failed: not allowed with argument --done",
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
    code, out, err = run_cli([command, "--db", sqlite_url(db), *tail], capsys, monkeypatch)
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
    code, out, err = run_cli([argv[0], "--db", sqlite_url(db), *argv[1:]], capsys, monkeypatch)
    assert (code, out) == (1, "")
    assert err == "coretsia-queue: error: the queue database does not exist\n"
    assert not db.exists()
    assert not db.parent.exists()
