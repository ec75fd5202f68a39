"""ProcessManager pools run for real: a script per scenario, real workers, real signals.

Each test copies ``tests/support/apps/process_app.py`` into a fresh project root and runs one of
its scenarios with the test interpreter; the entries append what they saw to
``events.log``. Waits are on the script's exit, its output lines, or the log (bounded);
the shared fixture fails any test that leaves a process behind, and every test also
checks that nothing still runs in its root.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import faults
import pools
import psutil
import pytest
from shared_fixtures import MODES

WAIT = 60.0


@pytest.fixture
def root(root: Path) -> Path:
    """The shared root (its driver an indirect parameter, or ``auto``) with the scenarios."""
    pools.install_app(root, "process_app.py")
    pools.write_root(root, workers=1, stop_timeout_ms=3000)  # only [worker] is read
    return root


def configure(root: Path, **worker: Any) -> None:
    pools.write_root(root, **worker)


class Script:
    """``python process_app.py <scenario>`` in ``root``: the pool's parent process."""

    def __init__(self, root: Path, scenario: str, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.proc = subprocess.Popen(
            [sys.executable, "process_app.py", scenario],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stdout = ""
        self.stderr = ""

    def wait_running(self) -> str:
        """Read stdout up to the pool's summary line (the script prints one line first)."""
        assert self.proc.stdout is not None
        line = self._line()
        while line.startswith("before "):
            self.stdout += line
            line = self._line()
        if not line.startswith("running:"):
            self.proc.kill()
            raise AssertionError(line, self.finish())
        self.stdout += line
        return line

    def _line(self) -> str:
        """The next stdout line, or a failed test after ``WAIT`` seconds of silence."""
        assert self.proc.stdout is not None
        if not select.select([self.proc.stdout], [], [], WAIT)[0]:
            self.proc.kill()
            raise AssertionError("no output line in time", self.finish())
        return self.proc.stdout.readline()

    def finish(self) -> str:
        out, err = self.proc.communicate(timeout=WAIT)
        self.stdout += out
        self.stderr = err
        return self.stdout

    @property
    def result(self) -> str:
        """The script's verdict: ``returned`` or ``raised ...`` (its last stdout line)."""
        return self.stdout.strip().splitlines()[-1]

    @property
    def logs(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.stderr.splitlines() if line.startswith("{")]


def run(root: Path, scenario: str) -> Script:
    script = Script(root, scenario)
    script.finish()
    return script


def logged(script: Script, name: str) -> list[dict[str, object]]:
    return [line for line in script.logs if line["event"] == name]


def spawn_gaps(script: Script, slot: int) -> list[float]:
    """Seconds between consecutive spawns of ``slot``, from the supervisor's log stamps."""
    stamps = [
        datetime.fromisoformat(str(line["ts"]).replace("Z", "+00:00")).timestamp()
        for line in logged(script, "worker.spawned")
        if line["slot"] == slot
    ]
    return [later - earlier for earlier, later in itertools.pairwise(stamps)]


# -- a pool of plain functions ---------------------------------------------------------


def test_an_application_that_was_a_subreaper_stays_one(root: Path) -> None:
    """start() puts back the subreaper role as it found it, set as well as unset."""
    script = Script(root, "manager-stop", env={**os.environ, "APP_SUBREAPER": "1"})
    script.finish()
    assert script.result == "returned", script.stderr
    state = "state handlers=0 subreaper=1 umask=022"
    assert script.stdout.splitlines()[0] == f"before {state}"
    assert f"after {state}" in script.stdout.splitlines()


@pytest.mark.parametrize("root", MODES, indirect=True)
def test_returning_entries_are_replaced_and_a_worker_stops_the_pool(root: Path) -> None:
    script = run(root, "run")
    assert script.result == "returned", script.stderr
    (starting,) = logged(script, "pool.starting")
    assert f'driver = "{starting["driver"]}"' in (root / "coretsia.toml").read_text()
    # start() put the process back as it found it: logger, subreaper role, umask.
    state = "state handlers=0 subreaper=0 umask=022"
    assert script.stdout.splitlines()[0] == f"before {state}"
    assert f"after {state}" in script.stdout.splitlines()
    assert len(pools.events(root, "returner")) >= 4
    # The respawn interval (100 ms by default) paces every spawn of one slot; the log
    # stamps are the spawn requests', kept to the millisecond.
    gaps = spawn_gaps(script, 1)
    assert len(gaps) >= 3
    assert min(gaps) >= 0.098, gaps
    assert pools.events(root, "steady-stop") == [["steady-stop", "0", "True"]]
    replaced = logged(script, "worker.replaced")
    assert len(replaced) >= 3
    assert {line["slot"] for line in replaced} == {1}
    assert {line["exit_kind"] for line in replaced} == {"exit-0"}
    assert len(logged(script, "pool.shutdown_requested")) == 1
    assert logged(script, "pool.stopped") == [
        {**logged(script, "pool.stopped")[0], "outcome": "clean"}
    ]
    assert not (root / "var/tmp/worker.lock.json").exists()


def test_raising_entries_are_replaced_like_returning_ones(root: Path) -> None:
    script = run(root, "raise")
    assert script.result == "returned", script.stderr
    assert len(pools.events(root, "raiser")) >= 4
    assert {line["exit_kind"] for line in logged(script, "worker.replaced")} == {"exit-nonzero"}
    assert "entry failed" not in script.stderr  # no traceback without debug = true


def test_names_ids_and_typed_entries(root: Path) -> None:
    script = run(root, "batch")
    assert script.result == "returned", script.stderr
    started = sorted((words[1], words[2]) for words in pools.events(root, "steady-start"))
    assert started == [("0", "web:0"), ("1", "web:1")]
    assert pools.events(root, "job-execute") == [["job-execute", "2", "2", "2"]]
    # The typed entry is built once in the parent (to register it), once in its worker.
    assert len(pools.events(root, "job-built")) == 2
    assert len({words[1] for words in pools.events(root, "job-built")}) == 2


def test_manager_stop_inside_a_worker_stops_the_pool(root: Path) -> None:
    script = run(root, "manager-stop")
    assert script.result == "returned", script.stderr
    assert pools.events(root, "manager-stop") == [["manager-stop", "1"]]
    assert pools.events(root, "steady-stop") == [["steady-stop", "0", "True"]]


def test_manager_stop_from_another_thread_of_the_parent(root: Path) -> None:
    script = run(root, "thread-stop")
    assert script.result == "returned", script.stderr
    assert pools.events(root, "steady-stop") == [["steady-stop", "0", "True"]]


@pytest.mark.parametrize("root", MODES, indirect=True)
@pytest.mark.parametrize("how", ["sigterm", "sigint", "cli"])
def test_the_parent_stops_on_a_signal_or_the_cli(root: Path, how: str) -> None:
    script = Script(root, "serve")
    script.wait_running()
    status = json.loads(pools.cli(root, "status", "--json").stdout)
    assert status["worker_count"] == 2
    assert f'driver = "{status["driver"]}"' in (root / "coretsia.toml").read_text()
    if how == "cli":
        assert pools.cli(root, "stop").returncode == 0
    else:
        script.proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
    script.finish()
    assert script.result == "returned", script.stderr
    assert sorted(words[1] for words in pools.events(root, "steady-stop")) == ["0", "1"]


@pytest.mark.parametrize("root", MODES, indirect=True)
def test_a_lost_guardian_is_swept_up_but_the_applications_children_are_not(root: Path) -> None:
    """After a SIGKILLed guardian the supervisor kills and reaps what is left of the
    generation, and nothing else: the supervisor runs inside the application, whose own
    child lives on (the sweep goes by the generation's environment mark, not by
    parentage), and no zombie of the pool is left among the application's children."""
    script = Script(root, "own-child")
    script.wait_running()
    child = psutil.Process(int(script.stdout.split("before own child ")[1].split()[0]))
    try:
        guardian = next(
            proc
            for proc in psutil.Process(script.proc.pid).children()
            if "coretsia.guardian" in proc.cmdline()
        )
        guardian.kill()
        script.finish()
        lines = script.stdout.splitlines()
        assert lines[-2].startswith("raised WorkerLifecycleFailedError"), script.stderr
        assert lines[-1] == "children sleeping"  # its own child: no zombie of the pool
        assert child.is_running()
        pools.wait_for(lambda: [proc.pid for proc in pools.processes_in(root)] == [child.pid])
    finally:
        child.kill()
        child.wait(timeout=WAIT)


def test_an_unexpected_failure_raises_the_start_catch_all(root: Path) -> None:
    """Something unexpected inside the supervisor reaches the application as start's
    catch-all WorkerError (its message never), after the pool was shut down."""
    script = Script(root, "serve", env=faults.fault_env("supervisor-raises"))
    script.finish()
    assert script.result == (
        "raised WorkerStartFailedError CORETSIA_WORKER_START_FAILED: worker-start-failed"
    ), script.stderr
    assert "secret" not in script.stdout + script.stderr


@pytest.mark.parametrize("scenario", ["stubborn", "stubborn-trio"])
def test_sigterm_runs_the_finally_blocks_of_entries_that_ignore_the_stop(
    root: Path, scenario: str
) -> None:
    loop = "trio" if scenario == "stubborn-trio" else "asyncio"
    configure(root, workers=1, stop_timeout_ms=200, event_loop=loop)
    script = Script(root, scenario)
    script.wait_running()
    entries = 2 if scenario == "stubborn" else 1
    pools.wait_for(lambda: len(pools.events(root, "stubborn-start")) == entries)
    script.proc.send_signal(signal.SIGTERM)
    script.finish()
    assert script.result == "returned", script.stderr
    finals = sorted(words[2] for words in pools.events(root, "stubborn-finally"))
    # A plain entry sees Terminated; an async one is cancelled (asyncio or trio).
    expected = ["CancelledError", "Terminated"] if scenario == "stubborn" else ["Cancelled"]
    assert finals == expected
    assert {line["exit_kind"] for line in logged(script, "worker.exited")} == {"signal-term"}


def test_async_entries_run_under_asyncio_by_default(root: Path) -> None:
    script = run(root, "async")
    assert script.result == "returned", script.stderr
    assert pools.events(root, "async-start") == [["async-start", "0", "asyncio.unix_events"]]
    assert pools.events(root, "async-stop") == [["async-stop", "0"]]


def test_async_entries_run_under_trio_on_request(root: Path) -> None:
    configure(root, workers=1, event_loop="trio")
    script = Script(root, "trio")
    script.wait_running()
    assert pools.cli(root, "stop").returncode == 0
    script.finish()
    assert script.result == "returned", script.stderr
    assert pools.events(root, "async-start") == [["async-start", "0", "True"]]
    assert pools.events(root, "async-stop") == [["async-stop", "0"]]  # cooperative


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_several_tasks_of_an_entry_may_wait_for_the_stop(root: Path, loop: str) -> None:
    configure(root, workers=1, event_loop=loop)
    script = run(root, "two-waiters")
    assert script.result == "returned", script.stderr
    assert pools.events(root, "two-waiters-done") == [["two-waiters-done", "0"]]


def test_stop_from_a_thread_while_starting_is_no_cancel(root: Path) -> None:
    """``stop()`` from another thread once the generation exists (while starting or just
    running): the pool ran, and start returns normally, not cancelled."""
    script = run(root, "early-stop")
    assert script.result == "returned", script.stderr
    assert [line["outcome"] for line in logged(script, "pool.stopped")] == ["clean"]


# -- guards and failures ------------------------------------------------------------------


def test_a_pool_cannot_start_inside_a_managed_worker(root: Path) -> None:
    script = run(root, "nested")
    assert script.result == "returned", script.stderr
    assert pools.events(root, "nested") == [["nested", "NestedPoolError"]]


@pytest.mark.parametrize("scenario", ["thread", "in-asyncio", "in-trio"])
def test_start_needs_the_main_thread_outside_any_event_loop(root: Path, scenario: str) -> None:
    script = run(root, scenario)
    assert script.result == (
        "raised WorkerStartFailedError "
        "CORETSIA_WORKER_START_FAILED: worker-signal-handling-unavailable"
    )
    assert not (root / "var").exists()  # refused before anything was created


@pytest.mark.parametrize("scenario", ["forked", "forked-mounted"])
def test_only_the_creating_process_may_start(root: Path, scenario: str) -> None:
    """``start()`` and ``running()`` alike (seed 003's creator-only guard)."""
    script = run(root, scenario)
    assert script.stdout.splitlines()[1] == (
        "child raised WorkerStartFailedError "
        "CORETSIA_WORKER_START_FAILED: worker-signal-handling-unavailable"
    )
    assert script.result == "returned"
    assert not (root / "var").exists()


@pytest.mark.parametrize("scenario", ["empty", "cancelled"])
def test_an_empty_or_cancelled_registry_starts_nothing(root: Path, scenario: str) -> None:
    script = run(root, scenario)
    assert script.stdout.splitlines()[-2:] == ["returned", "then RegistrationClosedError"]
    assert not (root / "var").exists()


def test_an_entry_that_cannot_be_rebuilt_fails_the_start(root: Path) -> None:
    script = run(root, "boot-fails")
    assert script.result == (
        "raised WorkerStartFailedError CORETSIA_WORKER_START_FAILED: worker-child-start-failed"
    )
    assert "cannot build here" not in script.stdout + script.stderr


def test_restart_intensity_fails_the_pool(root: Path) -> None:
    configure(root, workers=1, restart_intensity=3, restart_period_ms=60000)
    script = run(root, "intensity")
    assert script.result == (
        "raised WorkerLifecycleFailedError "
        "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-restart-intensity-exceeded"
    )
    assert len(logged(script, "worker.replaced")) == 3
    assert len(pools.events(root, "returner")) == 4
    assert pools.events(root, "steady-stop") == [["steady-stop", "1", "True"]]


def test_backoff_doubles_the_delay_up_to_its_cap(root: Path) -> None:
    configure(root, workers=1, respawn_interval_ms=50, restart_backoff_max_ms=400)
    script = run(root, "run")
    assert script.result == "returned", script.stderr
    gaps = spawn_gaps(script, 1)
    assert len(gaps) >= 3
    # 50 ms x 2, x 4, x 8 = 400 (the cap), between two spawns of the slot.
    for gap, least in zip(gaps, (0.1, 0.2, 0.4, 0.4), strict=False):
        assert gap >= least - 0.002, gaps
