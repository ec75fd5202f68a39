"""The pools the scenarios measure: one project root and its ``coretsia-supervisor start``.

Every pool registers itself as it is made, so ``cleanup_pools`` kills (by pid) whatever
still runs of it and removes its root, whatever happened meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import py_compile
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
from harness import BENCH
from harness.processes import descendants_named, processes_in

from pool_bench.watch import Watch, wait_lock_free

PYTHON = sys.executable
_CONSOLE = Path(PYTHON).parent / "coretsia-supervisor"
SUPERVISOR = [str(_CONSOLE)] if _CONSOLE.exists() else [PYTHON, "-m", "coretsia.supervisor.cli"]
MIB = 1024 * 1024
STOP_N = 64
"""The pool size of S2, S4, S5 and S6."""
DEADLINE_S = 120.0
"""Bound on any single wait of the benchmark (a start of 1024 workers included)."""


WORKER_SETTINGS: dict[str, object] = {}
"""``[worker]`` keys every pool of this run gets (``run.py --spawn``, ``--containment``)."""


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


_LIVE: list[Pool] = []


def project_root(workers: int, **settings: object) -> Path:
    """A throw-away project root: ``coretsia.toml`` for ``workers`` workers, ``bench_app``.

    ``settings`` are ``[worker]`` keys (strings, numbers, booleans) over the defaults: the
    idle task source and budgets that no benchmark start can outrun.
    """
    root = Path(tempfile.mkdtemp(prefix="cw-bench-"))
    config = {
        "workers": workers,
        "task_source": "bench_app:idle",
        "start_timeout_ms": int(DEADLINE_S * 1000),
        "stop_timeout_ms": 10000,
        "force_kill_timeout_ms": 1000,
        **WORKER_SETTINGS,
        **settings,
    }
    lines = ["[worker]", *(f"{key} = {toml_value(value)}" for key, value in config.items())]
    (root / "coretsia.toml").write_text("\n".join(lines) + "\n")
    shutil.copy(BENCH / "bench_app.py", root / "bench_app.py")
    py_compile.compile(str(root / "bench_app.py"), doraise=True)
    return root


def toml_value(value: object) -> str:
    """A string, number, boolean or list of strings as TOML (JSON's forms are TOML's)."""
    return json.dumps(value) if isinstance(value, (str, list)) else str(value).lower()


class Pool:
    """One project root and its ``coretsia-supervisor start``.

    The root is made by ``project_root`` from ``settings``, or is ``root``, prepared by
    the caller (the quick start's copy).
    """

    def __init__(self, workers: int, root: Path | None = None, **settings: object) -> None:
        self.root = root if root is not None else project_root(workers, **settings)
        self.workers_n = workers
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr_path = self.root / "supervisor.stderr"
        _LIVE.append(self)

    def start(self) -> float:
        """Launch ``start``; seconds from launch to the ``running:`` line."""
        with self.stderr_path.open("wb") as stderr:
            started = time.monotonic()
            self.proc = subprocess.Popen(
                [*SUPERVISOR, "start", "--root", str(self.root)],
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
            assert self.proc.stdout is not None
            line = self.proc.stdout.readline()
            elapsed = time.monotonic() - started
        if not line.startswith(b"running:"):
            self.proc.wait(timeout=DEADLINE_S)
            detail = self.stderr_path.read_text(errors="replace").strip()
            raise RuntimeError(f"start of {self.workers_n} workers failed: {detail}")
        return elapsed

    @property
    def supervisor(self) -> psutil.Process:
        assert self.proc is not None
        return psutil.Process(self.proc.pid)

    def _named(self, needle: str) -> list[psutil.Process]:
        return descendants_named(self.supervisor, needle)

    def workers(self) -> list[psutil.Process]:
        return self._named("coretsia.supervisor.worker_side.launcher")

    def guardian(self) -> psutil.Process:
        (guardian,) = self._named("coretsia.guardian --channel-fd")
        return guardian

    def proc_hosts(self) -> list[psutil.Process]:
        return self._named("coretsia.proc_host")

    def inits(self) -> list[psutil.Process]:
        """The PID namespace's init (``containment`` at ``namespace``: root's default)."""
        return self._named("coretsia.guardian.pid_init")

    def daemons(self) -> list[psutil.Process]:
        """The supervisor, the guardian, any proc host and the namespace's init."""
        return [self.supervisor, self.guardian(), *self.proc_hosts(), *self.inits()]

    def stop(self) -> tuple[float, list[int]]:
        """``coretsia-supervisor stop``: seconds until everything is gone, and survivors."""
        assert self.proc is not None
        tree = [p.pid for p in self.supervisor.children(recursive=True)]
        watch = Watch(tree)
        try:
            started = time.monotonic()
            deadline = started + DEADLINE_S
            done = subprocess.run(
                [*SUPERVISOR, "stop", "--root", str(self.root)],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                check=False,
                timeout=DEADLINE_S,
            )
            self.proc.wait(timeout=DEADLINE_S)
            left = watch.wait(deadline)
            free = wait_lock_free(self.root, deadline)
            elapsed = time.monotonic() - started
        finally:
            watch.close()
        if done.returncode != 0 or self.proc.returncode != 0 or not free:
            raise RuntimeError(
                f"stop: exit {done.returncode}, supervisor {self.proc.returncode}, "
                f"lock free {free}: {done.stdout!r} {done.stderr!r}"
            )
        self.finish()
        return elapsed, left

    def finish(self) -> None:
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()

    def cleanup(self) -> list[int]:
        """Kill (by pid) whatever of this pool still runs; remove the root. The pids."""
        left = processes_in(self.root)
        main = self.proc
        if main is not None and main.poll() is None and all(p.pid != main.pid for p in left):
            left.append(psutil.Process(main.pid))
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(left, timeout=10)
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
            self.finish()
        shutil.rmtree(self.root, ignore_errors=True)
        if self in _LIVE:
            _LIVE.remove(self)
        return [p.pid for p in left]


@contextlib.contextmanager
def running_pool(
    workers: int, root: Path | None = None, **settings: object
) -> Iterator[tuple[Pool, float]]:
    pool = Pool(workers, root, **settings)
    try:
        yield pool, pool.start()
        if pool.proc is not None and pool.proc.poll() is None:
            pool.stop()
    finally:
        leftovers = pool.cleanup()
        if leftovers:
            log(f"killed leftovers of a {workers}-worker pool: {leftovers}")


def cleanup_pools() -> None:
    while _LIVE:
        _LIVE[0].cleanup()  # removes itself from the list
