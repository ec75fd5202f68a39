"""``[[process]]`` and ``process_modules`` through ``coretsia-supervisor start``, for real.

Mixed pools (task workers beside process entries) start, report and stop as one: an
entry that returns is replaced, a task worker that dies fails the pool (seed 000 and seed
003 side by side). Registration errors are configuration errors (exit 6) naming the
table's key and the rule. The shipped example (docs/examples/process_pool) runs by both
routes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pools
import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "process_pool"


def write(root: Path, worker: dict[str, Any], tables: str) -> None:
    """A pool of ``worker`` settings, ``tables`` (TOML text) and ``apps/entries.py``."""
    pools.write_root(root, **worker)
    with (root / "coretsia.toml").open("a") as config:
        config.write(textwrap.dedent(tables))
    pools.install_app(root, "entries.py")


def test_a_mixed_pool_starts_reports_and_stops_as_one(
    root: Path, supervisors: pools.Supervisors
) -> None:
    write(
        root,
        {"workers": 2},
        """
        [[process]]
        name = "steady"
        target = "entries:steady"
        workers = 2

        [[process]]
        target = "entries:Typed"

        [[process]]
        target = "entries:returner"

        [[process]]
        target = "entries:Off"
        """,
    )
    supervisor = supervisors(root)
    assert supervisor.wait_running().startswith("running:")
    status = json.loads(pools.cli(root, "status", "--json").stdout)
    assert status["worker_count"] == 6  # 2 task workers + 4 entries (Off takes none)
    pools.wait_for(lambda: len(pools.events(root, "returner")) >= 3)
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0, supervisor.stderr
    assert sorted(words[2] for words in pools.events(root, "steady")) == ["steady:0", "steady:1"]
    assert pools.events(root, "typed") == [["typed", "2", "2"]]  # unnamed: its worker id
    assert {words[1] for words in pools.events(root, "returner")} == {"3"}
    replaced = [line for line in supervisor.logs if line["event"] == "worker.replaced"]
    assert {line["slot"] for line in replaced} == {5}  # slots: 2 task workers, then entries


def test_a_task_worker_exit_fails_the_pool_while_an_entry_exit_is_replaced(
    root: Path, supervisors: pools.Supervisors
) -> None:
    write(
        root,
        {"workers": 1},
        """
        [[process]]
        target = "entries:steady"
        """,
    )
    supervisor = supervisors(root)
    supervisor.wait_running()
    pools.wait_for(lambda: len(pools.events(root, "steady")) == 1)
    entry_pid = int(
        next(p.pid for p in supervisor.workers() if "--coretsia-worker-slot=1" in p.cmdline())
    )
    os.kill(entry_pid, signal.SIGKILL)
    pools.wait_for(lambda: len(pools.events(root, "steady")) == 2)  # replaced, pool still up
    assert json.loads(pools.cli(root, "status", "--json").stdout)["pool_status"] == "running"
    task_pid = next(
        p.pid for p in supervisor.workers() if "--coretsia-worker-slot=0" in p.cmdline()
    )
    os.kill(task_pid, signal.SIGKILL)
    assert supervisor.finish() == 1
    assert supervisor.error == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-child-exited"
    kinds = [
        line.get("exit_kind") for line in supervisor.logs if line["event"] == "worker.replaced"
    ]
    assert kinds == ["signal-kill"]


def test_a_pool_of_entries_alone_needs_no_task_source(
    root: Path, supervisors: pools.Supervisors
) -> None:
    write(
        root,
        {"workers": 0, "task_source": None},
        """
        [[process]]
        target = "entries:steady"
        """,
    )
    supervisor = supervisors(root)
    supervisor.wait_running()
    health = json.loads(pools.cli(root, "health", "--json").stdout)
    assert (health["healthy"], health["worker_count"]) == (True, 1)
    supervisor.signal(signal.SIGTERM)
    assert supervisor.finish() == 0


def test_a_plain_entry_worker_boots_without_the_supervisor_runtime(
    root: Path, supervisors: pools.Supervisors
) -> None:
    """No trio, attrs, cattrs, psutil, inspect or entry-point discovery in the worker."""
    write(root, {"workers": 0}, '[[process]]\ntarget = "entries:light"\n')
    supervisor = supervisors(root)
    assert supervisor.finish() == 0, supervisor.stderr
    assert pools.events(root, "light") == [["light"]]


def test_a_task_worker_cannot_start_a_pool_either(
    root: Path, supervisors: pools.Supervisors
) -> None:
    write(root, {"workers": 1, "task_source": "entries:nesting_source"}, "")
    supervisor = supervisors(root)
    supervisor.wait_running()
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0, supervisor.stderr
    assert pools.events(root, "nesting") == [["nesting", "NestedPoolError"]]


def test_process_modules_are_discovered_at_start(
    root: Path, supervisors: pools.Supervisors
) -> None:
    write(root, {"workers": 0, "process_modules": ["entries"]}, "")
    supervisor = supervisors(root)
    supervisor.wait_running()
    pools.wait_for(lambda: len(pools.events(root, "typed")) == 2)
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0
    # Beat: two workers named beat:0 and beat:1; Quiet is disabled; Never has no worker.
    assert sorted(words[2] for words in pools.events(root, "typed")) == ["beat:0", "beat:1"]


@pytest.mark.parametrize(
    ("tables", "key", "rule"),
    [
        (
            '[[process]]\nname = "a"\ntarget = "entries:steady"\n'
            '[[process]]\nname = "a"\ntarget = "entries:returner"\n',
            "process[1].name",
            "duplicate",
        ),
        ('[[process]]\ntarget = "entries:missing"\n', "process[0].target", "invalid-target"),
        ('[[process]]\ntarget = "nowhere:steady"\n', "process[0].target", "invalid-target"),
        (
            '[[process]]\ntarget = "entries:not_async"\nenable_async = false\n',
            "process[0].enable_async",
            "not-one-of",
        ),
        ('[[process]]\ntarget = "entries:Off"\n', "worker.workers", "out-of-range"),
        (
            '[[process]]\ntarget = "entries:steady"\nworkers = 1024\n'
            '[[process]]\ntarget = "entries:returner"\n',
            "process[1].workers",
            "out-of-range",
        ),
    ],
)
def test_registration_errors_are_config_errors(
    root: Path, tables: str, key: str, rule: str
) -> None:
    write(root, {"workers": 0}, tables)
    pools.assert_start_refused(root, key, rule)


def test_task_workers_and_entries_together_are_at_most_1024(root: Path) -> None:
    """State and status carry one worker count: every slot of either kind counts."""
    write(root, {"workers": 1}, '[[process]]\ntarget = "entries:steady"\nworkers = 1024\n')
    pools.assert_start_refused(root, "worker.workers", "out-of-range")


@pytest.mark.parametrize("route", ["api", "config"])
def test_the_shipped_example_runs_and_stops_itself(tmp_path: Path, route: str) -> None:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("var", "__pycache__"))
    command = (
        [sys.executable, "pool.py"]
        if route == "api"
        else [*pools.SUPERVISOR, "start", "--root", str(root)]
    )
    result = subprocess.run(
        command,
        cwd=root,
        env={**os.environ, "EXAMPLE_TICKS": "3"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "scheduler: done, asking the pool to shut down" in out
    assert "consumer consumer:0 stopping" in out
    assert "consumer consumer:1 stopping" in out
    assert "returns: it will be replaced" in out
    assert "heartbeat" not in out + result.stderr  # disabled by default
    if route == "api":
        assert out.splitlines()[0] == "registered: consumer:0, consumer:1, scheduler, flaky"
        assert out.splitlines()[-1] == "pool stopped"
    pools.assert_none_left(root)


def test_the_heartbeat_example_runs_once_enabled(
    root: Path, supervisors: pools.Supervisors
) -> None:
    shutil.copy(EXAMPLE / "heartbeat.py", root / "heartbeat.py")
    (root / "enabled_heartbeat.py").write_text(
        textwrap.dedent(
            """
            from heartbeat import Heartbeat

            class On(Heartbeat):
                @property
                def enabled(self):
                    return True
            """
        )
    )
    write(root, {"workers": 0}, '[[process]]\ntarget = "enabled_heartbeat:On"\n')
    supervisor = supervisors(root)
    supervisor.wait_running()
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0, supervisor.stderr
    # It logs a first heartbeat at once, then waits 30 s or for the stop, in asyncio.
    assert "heartbeat from worker 0" in supervisor.stderr.splitlines()
