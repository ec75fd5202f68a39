"""A damaged SQLite queue and a full disk are named: ``check``, ``recover``, and the pool.

Damage is real: a page in the middle of a real queue file overwritten with random bytes
(seeded, so each run damages the same way). A full disk is real too: a small tmpfs
mounted for the test (root only; skipped where mounting is not permitted) and filled.
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from commands import QUEUE_CLI, run_process
from fake_context import FakeContext
from pools import Supervisors, assert_failed, install_app, wait_for, write_root

from coretsia.sources._queue_health import fault
from coretsia.sources.sqlite_queue import QueueFullError, SqliteQueue
from coretsia.sources.sqlite_source import SqliteSource
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.task_source import TaskSourceStorageError

PAGE = 4096


def damage(path: Path) -> None:
    """Overwrite the page in the middle of the file with random bytes (seeded)."""
    middle = os.path.getsize(path) // 2 // PAGE * PAGE
    with open(path, "r+b") as file:
        file.seek(middle)
        file.write(random.Random(24).randbytes(PAGE))


def filled_queue(path: Path, count: int) -> list[str]:
    payloads = [f'{{"job": {n}}}' for n in range(count)]
    with SqliteQueue(path) as queue:
        queue.enqueue(payloads)
    return payloads


def cli(*args: str) -> tuple[int, str, str]:
    done = run_process([QUEUE_CLI, *args])
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def tiny_disk() -> Iterator[Path]:
    """A 1 MiB tmpfs of its own, unmounted at teardown; skipped if mounting is refused."""
    where = Path(tempfile.mkdtemp(prefix="cq-full-", dir="/tmp"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        where.rmdir()
        pytest.skip("cannot mount a tmpfs here (root and CAP_SYS_ADMIN are needed)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)
        where.rmdir()


def fill(directory: Path) -> Path:
    """Write a file until the file system is full; the file (remove it to free space)."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as file:
        for size in (65536, 512, 1):
            with pytest.raises(OSError) as raised:  # noqa: PT012 - until the disk says full
                while True:
                    file.write(b"\0" * size)
            assert raised.value.errno == errno.ENOSPC
    return filler


class TestCheck:
    def test_a_damaged_queue_is_named_where_stats_sees_nothing(self, short_root: Path) -> None:
        """The reported case: stats still counts every message; check says corrupt."""
        path = short_root / "q.sqlite3"
        filled_queue(path, 20_000)
        url = f"sqlite:///{path}"
        assert cli("check", "--db", url) == (0, "ok\n", "")
        damage(path)
        assert cli("stats", "--db", url) == (
            0,
            "pending    20000\nin_flight  0\ndone       0\nfailed     0\n",
            "",
        )
        code, out, err = cli("check", "--db", url)
        assert (code, out) == (1, "")
        assert err.split(" (")[0] == "coretsia-queue: check: queue-corrupt"

    def test_a_file_of_another_kind_is_named(self, short_root: Path) -> None:
        other = short_root / "other.sqlite3"
        sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
        code, _, err = cli("check", "--db", f"sqlite:///{other}")
        assert (code, err.split(" (")[0]) == (1, "coretsia-queue: check: queue-schema-invalid")
        (short_root / "text").write_text("not a database\n" * 100)
        code, _, err = cli("check", "--db", f"sqlite:///{short_root / 'text'}")
        assert (code, err.split(" (")[0]) == (1, "coretsia-queue: check: queue-corrupt")

    def test_a_full_disk_is_named_and_enqueue_stays_all_or_nothing(self, tiny_disk: Path) -> None:
        path = tiny_disk / "q.sqlite3"
        filled_queue(path, 100)
        filler = fill(tiny_disk)
        url = f"sqlite:///{path}"
        code, _, err = cli("check", "--db", url)
        assert (code, err.split(" (")[0]) == (1, "coretsia-queue: check: queue-full")
        filler.unlink()
        with SqliteQueue(path) as queue:  # open (WAL and -shm made) before the disk fills
            fill(tiny_disk)
            with pytest.raises(sqlite3.OperationalError) as raised:
                queue.enqueue(["x" * 1000] * 200)
            assert fault(raised.value, str(path)) == "full"
            assert queue.stats()["pending"] == 100
            with pytest.raises(QueueFullError):
                queue.check_space()


class TestRecover:
    def test_the_readable_messages_are_saved_and_the_lost_ones_named(
        self, short_root: Path
    ) -> None:
        path = short_root / "q.sqlite3"
        payloads = filled_queue(path, 20_000)
        damage(path)
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        saved = short_root / "saved.sqlite3"
        done = run_process([QUEUE_CLI, "recover", "--db", f"sqlite:///{path}", "--to", str(saved)])
        assert done.returncode == 1
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # only read
        count = int(done.stdout.split()[1])
        assert done.stdout == f"saved {count} (pending {count}, in_flight 0, done 0, failed 0)\n"
        prefix = "coretsia-queue: error: "
        assert done.stderr.startswith(prefix)
        lost_text = done.stderr[len(prefix) :].split(": ids ")
        lost = [
            n
            for part in lost_text[1].strip().split(",")
            for a, _, b in [part.partition("-")]
            for n in range(int(a), int(b or a) + 1)
        ]
        assert lost_text[0] == f"{len(lost)} messages could not be read"
        assert 0 < len(lost) < 1000
        assert count + len(lost) == 20_000  # each message saved or named: none vanished
        assert cli("check", "--db", f"sqlite:///{saved}") == (0, "ok\n", "")
        conn = sqlite3.connect(saved)
        rows = conn.execute("SELECT id, payload FROM messages ORDER BY id").fetchall()
        conn.close()
        assert rows == [(n + 1, p) for n, p in enumerate(payloads) if n + 1 not in lost]
        again = run_process([QUEUE_CLI, "recover", "--db", f"sqlite:///{path}", "--to", str(saved)])
        assert (again.returncode, again.stdout) == (1, "")
        assert "exists already" in again.stderr

    def test_a_sound_queue_is_copied_whole_and_postgresql_is_refused(
        self, short_root: Path
    ) -> None:
        path = short_root / "q.sqlite3"
        filled_queue(path, 3)
        url = f"sqlite:///{path}"
        assert cli("recover", "--db", url, "--to", str(short_root / "copy.sqlite3")) == (
            0,
            "saved 3 (pending 3, in_flight 0, done 0, failed 0)\n",
            "",
        )
        code, _, err = cli("recover", "--db", "postgresql:///x", "--to", "y")
        assert (code, err.split(":")[1]) == (2, " usage error")


class SecondSlot(FakeContext):
    @property
    def slot(self) -> int:
        return 1


class TestSource:
    def test_damage_met_by_a_running_worker_is_named(self, short_root: Path, handlers: str) -> None:
        """A worker (not slot 0: no quick_check) leases until it meets the damaged page."""
        path = short_root / "q.sqlite3"
        filled_queue(path, 2_000)
        damage(path)
        context = SecondSlot({"handler": f"{handlers}:record"})
        source = SqliteSource(context, str(path), lambda payload: None, generation="g1")
        try:
            source.assert_ready()  # the schema reads: only slot 0 reads the whole file
            with pytest.raises(TaskSourceStorageError) as raised:  # noqa: PT012 - until met
                for _ in range(2_001):
                    task = source.receive()
                    assert task is not None
                    task.complete(None)
            assert raised.value.reason is Reason.TASK_SOURCE_CORRUPT
        finally:
            source.close()
            context.close()

    def test_a_storage_error_carries_a_storage_reason_only(self) -> None:
        with pytest.raises(ValueError):
            TaskSourceStorageError(Reason.TASK_SOURCE_RECEIVE_FAILED)

    @pytest.mark.parametrize(
        ("text", "named"),
        [
            ("database disk image is malformed", "corrupt"),
            ("file is not a database", "corrupt"),
            ("database or disk is full", "full"),
            ("disk I/O error", None),  # only where the disk really is full
            ("database is locked", None),
        ],
    )
    def test_without_an_error_code_sqlite_s_own_text_names_it(
        self, short_root: Path, text: str, named: str | None
    ) -> None:
        """Python 3.10 sets no sqlite_errorcode; an error built here has none either."""
        error = sqlite3.OperationalError(text)
        assert not hasattr(error, "sqlite_errorcode")
        assert fault(error, str(short_root / "q.sqlite3")) == named


def _pool(root: Path, database: Path, handler: str = "handle") -> None:
    write_root(
        root,
        task_source="sqlite",
        workers=2,
        source_options={"handler": f"queue_app:{handler}", "database": str(database)},
    )
    install_app(root, "queue_app.py")


class TestPool:
    @pytest.mark.parametrize("kind", ["corrupt", "full"])
    def test_a_damaged_queue_or_a_full_disk_fails_the_start_before_running(
        self, root: Path, supervisors: Supervisors, request: pytest.FixtureRequest, kind: str
    ) -> None:
        """The reported cases: 20,000 messages with a damaged page in the middle; a queue
        on a file system filled up."""
        if kind == "corrupt":
            database = root / "var/queue.sqlite3"
            filled_queue(database, 20_000)
            damage(database)
        else:
            disk: Path = request.getfixturevalue("tiny_disk")
            database = disk / "queue.sqlite3"
            filled_queue(database, 10)
            fill(disk)
        _pool(root, database)
        pool = supervisors(root)
        assert_failed(pool, root, f"CORETSIA_WORKER_LIFECYCLE_FAILED: worker-task-source-{kind}")
        assert "running" not in pool.stdout

    def test_a_disk_filled_under_a_running_pool_is_named_and_nothing_is_lost(
        self, root: Path, supervisors: Supervisors, tiny_disk: Path
    ) -> None:
        """The acknowledgement finds no space: the worker says full; freed, it runs again."""
        database = tiny_disk / "queue.sqlite3"
        filled_queue(database, 1)
        _pool(root, database, handler="until_go")
        pool = supervisors.running(root)
        wait_for(lambda: (root / "handled.log").exists(), 15)
        filler = fill(tiny_disk)
        (root / "go").touch()
        assert_failed(pool, root, "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-task-source-full")
        filler.unlink()
        again = supervisors.running(root)
        with SqliteQueue(database) as queue:
            wait_for(lambda: queue.stats()["done"] == 1, 15)
        again.signal(signal.SIGTERM)
        assert again.finish(30) == 0
