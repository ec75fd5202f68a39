"""``coretsia-queue``: one command for the SQLite and the PostgreSQL queue, same output; and
``coretsia-sqlite-queue``, its deprecated alias."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from commands import QUEUE_CLI, SQLITE_QUEUE_CLI, run_process
from pg_server import PgServer

from coretsia.sources.cli import DEPRECATED_ALIAS, build_parser


def queue(*args: str, stdin: str | None = None, cwd: Path | None = None) -> tuple[int, str, str]:
    done = run_process([QUEUE_CLI, *args], stdin=stdin, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, short_root: Path) -> str:
    """A queue URL of each backend: an SQLite file, or a fresh database on the server."""
    if request.param == "sqlite":
        return f"sqlite:///{short_root}/var/q.sqlite3"  # absolute: four slashes in all
    server: PgServer = request.getfixturevalue("pg_server")
    return server.url(request.getfixturevalue("pg_db"))


def test_every_command_works_the_same_on_both_backends(url: str) -> None:
    assert queue("stats", "--db", url)[0] == 1  # nothing is created but by enqueue
    code, out, err = queue("check", "--db", url)
    missing = "unavailable" if url.startswith("sqlite") else "schema-invalid"  # no schema
    assert (code, out, err.split(" (")[0]) == (1, "", f"coretsia-queue: check: queue-{missing}")
    assert queue("enqueue", "--db", url, "a", "-", stdin="b\n\nc\n") == (0, "enqueued 3\n", "")
    code, out, err = queue("stats", "--db", url, "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {"pending": 3, "in_flight": 0, "done": 0, "failed": 0}
    assert queue("failed", "--db", url, "--json") == (0, "[]\n", "")
    assert queue("retry", "--db", url, "1", "99") == (
        1,
        "retried 0\n",
        "coretsia-queue: error: no message 99\ncoretsia-queue: error: message 1 is not failed\n",
    )
    assert queue("purge", "--db", url, "--done") == (0, "purged 0\n", "")
    assert queue("check", "--db", url) == (0, "ok\n", "")


def test_a_relative_sqlite_url_is_from_the_working_directory(short_root: Path) -> None:
    assert queue("enqueue", "--db", "sqlite:///var/q.sqlite3", "x", cwd=short_root)[0] == 0
    assert (short_root / "var" / "q.sqlite3").is_file()
    done = run_process(
        [SQLITE_QUEUE_CLI, "stats", "--db", "var/q.sqlite3", "--json"], cwd=short_root
    )
    assert json.loads(done.stdout)["pending"] == 1  # the old command reads the same file


def test_the_sqlite_alias_runs_the_same_commands_after_a_one_line_note(short_root: Path) -> None:
    """``coretsia-sqlite-queue`` (``--db PATH``) answers as ``coretsia-queue`` does, under its
    own name, after its deprecation note: the one line it adds, on stderr."""
    note = DEPRECATED_ALIAS + "\n"
    assert note.startswith("coretsia-sqlite-queue: deprecated: use coretsia-queue --db sqlite:///")
    db = str(short_root / "q.sqlite3")

    def alias(*args: str) -> tuple[int, str, str]:
        done = run_process([SQLITE_QUEUE_CLI, *args])
        return done.returncode, done.stdout, done.stderr

    assert alias("stats", "--db", db) == (
        1,
        "",
        note + "coretsia-sqlite-queue: error: the queue database does not exist\n",
    )
    assert alias("enqueue", "--db", db, "a", "b") == (0, "enqueued 2\n", note)
    assert alias("retry", "--db", db, "1") == (
        1,
        "retried 0\n",
        note + "coretsia-sqlite-queue: error: message 1 is not failed\n",
    )
    assert alias("check", "--db", db) == (0, "ok\n", note)
    assert queue("stats", "--db", f"sqlite:///{db}") == (*alias("stats", "--db", db)[:2], "")
    code, out, err = alias("stats", "--queue", "mail", "--db", db)
    assert (code, out) == (2, "")
    assert err == (
        note + "usage: coretsia-sqlite-queue [-h] [--version] COMMAND ...\n"
        "coretsia-sqlite-queue: error: unrecognized arguments: --queue mail\n"
    )


def test_named_queues_share_a_postgresql_database(pg_server: PgServer, pg_db: str) -> None:
    url = pg_server.url(pg_db)
    assert queue("enqueue", "--db", url, "--queue", "mail", "m1", "m2")[0] == 0
    assert queue("enqueue", "--db", url, "s1")[0] == 0
    mail = json.loads(queue("stats", "--db", url, "--queue", "mail", "--json")[1])
    default = json.loads(queue("stats", "--db", url, "--json")[1])
    assert (mail["pending"], default["pending"]) == (2, 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["stats", "--db", "mysql://user:pw@host/db"],
            "argument --db: not a queue URL: give sqlite:///PATH, sqlite:////ABSOLUTE/PATH "
            "or postgresql://...",
        ),
        (["stats", "--db", "sqlite:///q", "--queue", "a b"], "argument --queue: a queue name"),
    ],
)
def test_a_bad_url_or_queue_is_a_usage_error_that_echoes_nothing(
    args: list[str], message: str
) -> None:
    code, out, err = queue(*args)
    assert (code, out) == (2, "")
    assert message in err
    assert "pw@host" not in err


def test_sqlite_holds_one_queue(short_root: Path) -> None:
    url = f"sqlite:///{short_root}/q.sqlite3"
    assert queue("enqueue", "--db", url, "--queue", "mail", "x") == (
        2,
        "",
        "coretsia-queue: usage error: an SQLite file holds one queue: --queue is for PostgreSQL\n",
    )


def test_the_parser_is_the_one_the_man_page_is_made_from() -> None:
    parser = build_parser()
    assert parser.prog == "coretsia-queue"
    code, out, _ = queue("stats", "--help")
    assert code == 0
    assert out.startswith("usage: coretsia-queue stats [-h] --db URL [--queue NAME] [--json]\n")
