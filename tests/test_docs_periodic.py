"""The periodic-jobs recipe (docs/process-pools.md, docs/examples/periodic) does what the
page says.

The shipped example runs for real under ``coretsia-supervisor start`` with a short
interval: its jobs fire at their intervals and never faster, and a stop ends the pool in
the cooperative phase (exit 0, not 8: nothing had to be signalled) however long the
scheduler was waiting. Its scheduling rule and its handling of a failing job are checked
in process, on the module itself.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pools
import pytest
from hypothesis import given
from hypothesis import strategies as st

from coretsia.worker_protocol.exit_codes import ExitCode

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "periodic"
LINE_TIMEOUT_S = 30.0
"""Bound on the wait for any one line of the pool's output."""


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("periodic_example", EXAMPLE / "periodic.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


periodic = _load()


class Run:
    """``coretsia-supervisor start`` on a copy of the example; its stdout, line by line."""

    def __init__(self, root: Path, every_s: float) -> None:
        shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("var", "__pycache__"))
        self.root = root
        self._stderr = (root / "stderr.log").open("w")
        self.proc = subprocess.Popen(
            [*pools.SUPERVISOR, "start", "--root", str(root)],
            env={**os.environ, "PERIODIC_EVERY_S": str(every_s)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def next_line(self) -> str | None:
        """The next line the pool printed (None once it closed stdout), bounded."""
        try:
            return self._lines.get(timeout=LINE_TIMEOUT_S)
        except queue.Empty:
            raise AssertionError("no output in time") from None

    def stop(self) -> int:
        """``coretsia-supervisor stop``, then the exit status of ``start``."""
        assert pools.cli(self.root, "stop").returncode == 0
        return self.proc.wait(timeout=LINE_TIMEOUT_S)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=LINE_TIMEOUT_S)
        self._reader.join(timeout=LINE_TIMEOUT_S)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self._stderr.close()
        pools.assert_none_left(self.root)


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[list[Run]]:
    started: list[Run] = []
    yield started
    for run in started:
        run.close()


def test_the_jobs_fire_at_their_intervals_until_a_stop(tmp_path: Path, runs: list[Run]) -> None:
    """``report`` every 0.2 s, ``prune`` every 2 s: at most ten reports come before the first
    prune (never faster than the interval), and a stop ends the pool cooperatively."""
    run = Run(tmp_path / "root", every_s=0.2)
    runs.append(run)
    assert (run.next_line() or "").startswith("running:")
    before_prune = []
    while (line := run.next_line()) != "prune removed 0 files":
        assert line is not None
        assert line.startswith("report at ")
        before_prune.append(line)
    assert 1 <= len(before_prune) <= 10
    assert run.stop() == ExitCode.OK


def test_a_stop_wakes_the_scheduler_from_a_long_wait(tmp_path: Path, runs: list[Run]) -> None:
    """With an hour to the first job, a stop still ends the pool at once, in the cooperative
    phase (a sleep that ignored it would be SIGTERMed: exit 8), and no job ran."""
    run = Run(tmp_path / "root", every_s=3600)
    runs.append(run)
    assert (run.next_line() or "").startswith("running:")
    assert run.stop() == ExitCode.OK
    assert run.next_line() is None


@given(
    interval=st.floats(0.001, 3600),
    periods=st.floats(0, 1000),
    origin=st.floats(0, 1e6),
)
def test_the_next_run_is_the_next_grid_point(
    interval: float, periods: float, origin: float
) -> None:
    """After a run at any time, the next one is on the job's grid, after now, and at most
    one interval away: no drift, and missed runs are skipped, not bunched."""
    now = origin + periods * interval
    due = periodic.next_run(origin, interval, now)
    assert now < due <= now + interval * (1 + 1e-9) + 1e-6
    runs = (due - origin) / interval
    assert abs(runs - round(runs)) < 1e-6 * max(1.0, runs)


class _Pool:
    """Just the stop a scheduler waits on (``WorkerPool.wait_for_stop`` and ``stopping``)."""

    def __init__(self) -> None:
        self.stop = threading.Event()

    @property
    def stopping(self) -> bool:
        return self.stop.is_set()

    def wait_for_stop(self, timeout: float | None) -> bool:
        return self.stop.wait(timeout)


def test_a_failing_job_is_logged_and_runs_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A job that raises does not stop the scheduler or the other jobs."""
    ran: list[str] = []
    three = threading.Event()

    def failing() -> None:
        ran.append("failing")
        raise RuntimeError

    def counting() -> None:
        ran.append("counting")
        if ran.count("counting") == 3:
            three.set()

    monkeypatch.setattr(periodic, "SCHEDULE", ((0.01, failing), (0.01, counting)))
    pool = _Pool()
    thread = threading.Thread(target=periodic.scheduler, args=(pool, 0))
    with caplog.at_level(logging.ERROR, logger="example.periodic"):
        thread.start()
        assert three.wait(LINE_TIMEOUT_S)
        pool.stop.set()
        thread.join(LINE_TIMEOUT_S)
    assert not thread.is_alive()
    assert ran.count("failing") >= 3
    assert caplog.messages.count("job failing failed") >= 3
