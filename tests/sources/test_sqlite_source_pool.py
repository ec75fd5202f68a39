"""The ``sqlite`` source in a real pool: discovered by name, fed by the CLI, stopped at once.

These run a real ``coretsia-supervisor start`` (guardian and worker interpreters), so the
source meets the real context: ``options``, ``generation``, the inherited stop descriptor.
"""

from __future__ import annotations

import json
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from commands import QUEUE_CLI, run_process
from pools import Supervisor, assert_none_left, cli, lock_held, wait_for

APP = """
import os
import time


def handle(payload):
    with open("handled.log", "a") as log:
        log.write(f"{os.getpid()} {payload}\\n")
    if payload == "bad":
        raise ValueError("bad payload")
    if payload == "slow" and os.path.exists("hang"):
        time.sleep(60)
    return payload
"""

CONFIG = """
[worker]
task_type = "queue"
task_source = "sqlite"
workers = 2
start_timeout_ms = 20000
stop_timeout_ms = 3000
force_kill_timeout_ms = 1000

[worker.source_options]
handler = "sqlite_pool_app:handle"
max_attempts = 2
"""


def make_root(tmp: str, driver: str | None = None) -> Path:
    """A root for the sqlite source; ``driver`` set, or left to ``auto``."""
    path = Path(tmp).resolve()
    config = textwrap.dedent(CONFIG)
    if driver is not None:
        config = config.replace("[worker]\n", f'[worker]\ndriver = "{driver}"\n', 1)
    (path / "coretsia.toml").write_text(config)
    (path / "sqlite_pool_app.py").write_text(textwrap.dedent(APP))
    return path


@pytest.fixture
def root(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A project root configured for the sqlite source; nothing may be left running in it.

    Parametrized indirectly by a driver name where a test runs once per driver.
    """
    with tempfile.TemporaryDirectory(prefix="cq-", dir="/tmp") as tmp:
        path = make_root(tmp, getattr(request, "param", None))
        yield path
        assert_none_left(path)


@pytest.fixture
def next_root(root: Path) -> Iterator[Path]:
    """Another root with the same configuration, taking over ``root``'s database."""
    with tempfile.TemporaryDirectory(prefix="cq-", dir="/tmp") as tmp:
        path = make_root(tmp)
        config = path / "coretsia.toml"
        database = root / "var" / "queue.sqlite3"
        config.write_text(config.read_text() + f'database = "{database}"\n')
        yield path
        assert_none_left(path)


@pytest.fixture
def start() -> Iterator[Callable[[Path], Supervisor]]:
    started: list[Supervisor] = []

    def start_one(root: Path) -> Supervisor:
        supervisor = Supervisor(root)
        started.append(supervisor)
        supervisor.wait_running()
        return supervisor

    yield start_one
    for supervisor in started:
        supervisor.close()


def queue_cli(root: Path, *args: str, stdin: str | None = None) -> str:
    done = run_process([QUEUE_CLI, *args, "--db", "var/queue.sqlite3"], stdin=stdin, cwd=root)
    assert (done.returncode, done.stderr) == (0, ""), done
    return done.stdout


def stats(root: Path) -> dict[str, int]:
    counts: dict[str, int] = json.loads(queue_cli(root, "stats", "--json"))
    return counts


def handled(root: Path) -> list[str]:
    path = root / "handled.log"
    return [line.split()[1] for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
@pytest.mark.parametrize("root", ["fork", "proc"], indirect=True)
def test_a_pool_drains_the_queue_and_stops_at_once(
    root: Path, start: Callable[[Path], Supervisor]
) -> None:
    supervisor = start(root)
    driver = json.loads(cli(root, "status", "--json").stdout)["driver"]
    assert f'driver = "{driver}"' in (root / "coretsia.toml").read_text()  # the one asked for
    payloads = [f"job-{i}" for i in range(30)] + ["bad"]
    assert queue_cli(root, "enqueue", stdin="\n".join(payloads) + "\n") == "enqueued 31\n"
    wait_for(lambda: stats(root) == {"pending": 0, "in_flight": 0, "done": 30, "failed": 1}, 15)
    assert sorted(handled(root)) == sorted([*payloads, "bad"])  # bad: tried max_attempts times
    started = time.monotonic()
    stopped = cli(root, "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert time.monotonic() - started < 2.5  # idle receives woke at once: no 3 s stop budget
    assert supervisor.finish(30) == 0
    assert list((root / "var" / "queue.sqlite3.notify").iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("successor", ["same root", "next root"])
def test_the_next_generation_recovers_a_killed_pools_lease(
    root: Path, start: Callable[[Path], Supervisor], request: pytest.FixtureRequest, successor: str
) -> None:
    """A killed pool's lease is recovered by the next pool on the database.

    The next root (a release directory taking over an absolute database path) has the
    same configuration, so its generation counter matches the killed one's: only the
    random part of the id tells the dead lease from its own.
    """
    config = root / "coretsia.toml"  # the stuck task need not hold the cleanup for 3 s
    config.write_text(config.read_text().replace("stop_timeout_ms = 3000", "stop_timeout_ms = 200"))
    (root / "hang").touch()
    first = start(root)
    queue_cli(root, "enqueue", "slow")
    wait_for(lambda: handled(root) == ["slow"], 15)
    first.kill()  # SIGKILL: the guardian kills the workers, the lease stays in the file
    wait_for(lambda: not lock_held(root), 15)
    assert stats(root) == {"pending": 0, "in_flight": 1, "done": 0, "failed": 0}

    (root / "hang").unlink()
    after: Path = root if successor == "same root" else request.getfixturevalue("next_root")
    second = start(after)  # its workers recover the dead generation's lease at construction
    wait_for(lambda: stats(root)["done"] == 1, 15)
    assert handled(root) + (handled(after) if after != root else []) == ["slow", "slow"]
    assert cli(after, "stop").returncode == 0
    assert second.finish(30) == 0
