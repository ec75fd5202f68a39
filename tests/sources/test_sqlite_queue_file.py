"""The SQLite queue's file: created with its schema in WAL mode (by many processes at once),
reopened with its messages, a missing, foreign, non-SQLite or newer file refused, and the
synchronous level per use.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from queue_counts import counts

from coretsia.sources.sqlite_queue import QueueError, SqliteQueue


class TestOpening:
    def test_creates_parent_directory_schema_and_wal(self, short_root: Path) -> None:
        """First use creates var/ and the schema; the file is in WAL mode."""
        path = short_root / "a" / "b" / "q.sqlite3"
        with SqliteQueue(path) as q:
            q.check()
            assert q.stats() == counts()
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            conn.close()

    def test_many_processes_create_one_file_together(self, short_root: Path) -> None:
        """A pool's workers open a queue nobody created yet all at once (a fresh container).

        Round after round, eight forked processes released together open one new file:
        every one of them must get the queue. The creator's COMMIT, still in rollback-journal
        mode, used to fail busy while another opener read the schema (one round in seven).
        """
        script = f"""
import multiprocessing as mp, os, sys
from coretsia.sources.sqlite_queue import SqliteQueue

def open_queue(path, barrier, failures):
    barrier.wait(timeout=30)
    try:
        SqliteQueue(path, synchronous="NORMAL").close()
    except Exception:
        with failures.get_lock():
            failures.value += 1

mp.set_start_method("fork")
failures = mp.Value("i", 0)
for round in range(30):
    path = os.path.join({str(short_root)!r}, str(round), "var", "q.sqlite3")
    barrier = mp.Barrier(8)
    openers = [mp.Process(target=open_queue, args=(path, barrier, failures)) for _ in range(8)]
    for p in openers:
        p.start()
    for p in openers:
        p.join(timeout=30)
        assert p.exitcode == 0, p.exitcode
print(failures.value)
"""
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
        )
        assert done.stdout.strip() == "0", done.stdout + done.stderr

    def test_reopening_keeps_the_messages(self, short_root: Path) -> None:
        path = short_root / "q.sqlite3"
        with SqliteQueue(path) as q:
            q.enqueue(["a", "b"])
        with SqliteQueue(path, create=False) as q:
            assert q.stats() == counts(pending=2)

    def test_create_false_refuses_a_missing_file(self, short_root: Path) -> None:
        """A read-only caller (stats) must not leave an empty database behind a typo."""
        path = short_root / "missing.sqlite3"
        with pytest.raises(QueueError, match="does not exist"):
            SqliteQueue(path, create=False)
        assert not path.exists()

    def test_a_foreign_database_is_refused(self, short_root: Path) -> None:
        """A SQLite file with other tables is never turned into a queue."""
        path = short_root / "other.sqlite3"
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
        with pytest.raises(QueueError, match="not a Coretsia queue"):
            SqliteQueue(path)

    def test_a_file_that_is_not_sqlite_is_refused(self, short_root: Path) -> None:
        path = short_root / "text.sqlite3"
        path.write_text("hello, I am not a database\n" * 100)
        with pytest.raises(QueueError):
            SqliteQueue(path)

    def test_a_newer_schema_is_refused(self, short_root: Path) -> None:
        path = short_root / "q.sqlite3"
        SqliteQueue(path).close()
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA user_version = 99")
        conn.close()
        with pytest.raises(QueueError, match="schema version 99"):
            SqliteQueue(path)

    def test_check_notices_a_broken_schema(self, queue: SqliteQueue) -> None:
        queue.check()
        conn = sqlite3.connect(queue.path)
        conn.execute("PRAGMA user_version = 2")
        conn.close()
        with pytest.raises(QueueError):
            queue.check()


class TestDurability:
    def test_a_worker_connection_is_normal_and_enqueue_stays_full(self, short_root: Path) -> None:
        """NORMAL for lease/ack; enqueue switches to FULL for its commit and back."""
        with SqliteQueue(short_root / "q.sqlite3", synchronous="NORMAL") as queue:
            level = "PRAGMA synchronous"
            assert queue._conn.raw.execute(level).fetchone() == (1,)
            queue.enqueue(["a"])
            assert queue._conn.raw.execute(level).fetchone() == (1,)
        with SqliteQueue(short_root / "q.sqlite3") as queue:
            assert queue._conn.raw.execute(level).fetchone() == (2,)

    def test_an_unknown_level_is_refused(self, short_root: Path) -> None:
        with pytest.raises(ValueError, match="synchronous"):
            SqliteQueue(short_root / "q.sqlite3", synchronous="OFF")  # type: ignore[arg-type]
