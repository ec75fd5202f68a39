"""Coretsia Worker's benchmark: real pools against a bare-Python floor, in one run.

Run it with ``.venv/bin/nox -s bench`` (or ``python bench/run.py`` in the project's
environment). Every scenario runs real processes: ``coretsia-supervisor start`` with a
real guardian and real worker interpreters, in throw-away project roots under the
system's temporary directory. Results go to ``bench/results/<timestamp>.json`` and
``.md`` and the table to stdout; the budgets and the reasons behind any miss are in
``docs/performance.md``.

Scenarios (absolute medians, and ratios to the floor measured in the same run):

* floor: ``bench/floor.py``, a bare script that ``Popen``\\ s N minimal workers (an
  interpreter that sends one readiness datagram and sleeps), waits for N datagrams,
  then SIGTERMs and reaps them; and one spawn-to-ready of a minimal worker.
* S1 start: ``coretsia-supervisor start`` of N idle task workers, launch to ``running``.
* S2 stop: ``coretsia-supervisor stop`` until the supervisor exited, every worker is
  reaped and the lock is free (N = 64).
* S3 recycle: a worker's clean exit (``atexit``) to its replacement's readiness
  (``assert_ready``), both read from the workers' monotonic clocks.
* S4 containment: SIGKILL the supervisor; until every process of the tree is gone and
  the lock is free (N = 64).
* S5 idle cost: CPU seconds and voluntary context switches of the supervisor, guardian
  (and proc host) over 10 s of idle with 64 workers; their RSS; a worker's RSS against a
  bare interpreter's.
* S6 control: ``coretsia-supervisor status`` as a process against ``python -c pass``;
  ``ControlClient.status()`` round trip in-process.
* S7 task loop: per-task overhead of ``run_unit`` / ``work`` with an in-memory source
  and a no-op task against a bare loop calling the same no-op.
* launcher alone ("boot"): the launcher spawned through its internal contract, with no
  supervisor or guardian: spawn to ready, stop to reaped, CPU per life (explains S1-S3).

Options: ``--runs`` (default 3), ``--quick`` (N = 8 and 64 only, 2 s idle windows: a smoke
run), ``--no-1024`` (skip the N = 1024 start), ``--only`` (some of start, s3, boot, s4,
s5, s6, s7, big), ``--no-compile`` (measure without first compiling missing ``.pyc``),
``--wait-idle SECONDS`` (first wait, at most that long, until no pytest or nox process
other than our own ancestors runs).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import py_compile
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from bench_app import NoopTask  # beside this script: the pools' application

from coretsia.worker_protocol import lock
from coretsia.worker_protocol.client import ControlClient
from coretsia.worker_protocol.lifecycle import LOCK_PATH

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
PYTHON = sys.executable
_CONSOLE = Path(PYTHON).parent / "coretsia-supervisor"
SUPERVISOR = [str(_CONSOLE)] if _CONSOLE.exists() else [PYTHON, "-m", "coretsia.supervisor.cli"]
MIB = 1024 * 1024

START_SIZES = (8, 64, 256)
BIG = 1024
STOP_N = 64
IDLE_WINDOW_S = 10.0
DEADLINE_S = 120.0
"""Bound on any single wait of the benchmark (a start of 1024 workers included)."""


# --- small helpers ----------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def busy_processes() -> list[str]:
    """Other pytest or nox processes (not us, not our ancestors) running right now."""
    ours = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or ())
        except psutil.Error:
            continue
        if proc.info["pid"] not in ours and re.search(r"pytest|\bnox\b", cmdline):
            found.append(f"{proc.info['pid']} {cmdline[:80]}")
    return found


def wait_idle(limit: float) -> list[str]:
    """Wait (at most ``limit`` s) until no other test or nox run is busy; what is left."""
    deadline = time.monotonic() + limit
    busy = busy_processes()
    while busy and time.monotonic() < deadline:
        time.sleep(5)
        busy = busy_processes()
    return busy


class Watch:
    """pidfds of processes, opened before they are made to exit (no pid reuse race)."""

    def __init__(self, pids: list[int]) -> None:
        self.fds: dict[int, int] = {}
        for pid in pids:
            try:
                self.fds[os.pidfd_open(pid)] = pid
            except ProcessLookupError:
                continue

    def wait(self, deadline: float) -> list[int]:
        """Block until every process exited (or the deadline); the pids still alive."""
        poller = select.poll()
        for fd in self.fds:
            poller.register(fd, select.POLLIN)
        left = set(self.fds)
        while left:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            for fd, _ in poller.poll(remaining * 1000):
                poller.unregister(fd)
                left.discard(fd)
        return sorted(self.fds[fd] for fd in left)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()


def wait_lock_free(root: Path, deadline: float) -> bool:
    path = str(root / LOCK_PATH)
    while lock.probe(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0005)
    return True


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def processes_in(root: Path) -> list[psutil.Process]:
    """Every live process whose working directory is ``root`` (a pool's whole tree)."""
    found = []
    for proc in psutil.process_iter(["cwd", "status"]):
        try:
            if proc.info["cwd"] == str(root) and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def descendants_named(top: psutil.Process, needle: str) -> list[psutil.Process]:
    """The descendants of ``top`` whose command line contains ``needle``."""
    found = []
    for proc in top.children(recursive=True):
        try:
            if needle in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _exec_ns(task: Path) -> int:
    """A thread's CPU time in nanoseconds: ``se.sum_exec_runtime`` of its ``sched`` file.

    ``schedstat`` would be simpler but reads 0 on kernels without schedstats (this one);
    ``stat``'s utime and stime (what psutil reads) count 10 ms ticks, too coarse here.
    """
    for line in (task / "sched").read_text().splitlines():
        if line.startswith("se.sum_exec_runtime"):
            milliseconds = line.split(":")[1].strip()
            whole, _, fraction = milliseconds.partition(".")
            return int(whole) * 1_000_000 + int((fraction + "000000")[:6])
    raise ValueError


def thread_stats(pid: int) -> dict[int, tuple[int, int]]:
    """Per thread: (CPU nanoseconds, voluntary context switches).

    Per thread because ``/proc/<pid>/status`` counts the main thread's switches only.
    """
    found: dict[int, tuple[int, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            cpu_ns = _exec_ns(task)
            status = (task / "status").read_text().splitlines()
            switches = next(
                int(line.split()[1]) for line in status if line.startswith("voluntary_ctxt")
            )
        except (OSError, ValueError, IndexError, StopIteration):
            continue  # a thread that ended while we looked
        found[int(task.name)] = (cpu_ns, switches)
    return found


def idle_delta(
    before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]]
) -> tuple[float, int, int]:
    """(CPU seconds, wake-ups, threads started or ended) between two snapshots.

    A thread that ended took its counters with it (trio's idle worker threads end after
    about 10 s): each thread that started or ended counts as one wake-up, and the CPU of
    ended threads is in the process total (``psutil.cpu_times``), not here.
    """
    common = before.keys() & after.keys()
    cpu_ns = sum(after[tid][0] - before[tid][0] for tid in common)
    switches = sum(after[tid][1] - before[tid][1] for tid in common)
    churn = len(before.keys() ^ after.keys())
    return cpu_ns / 1e9, switches + churn, churn


_COLLECT_MODULES = """
import importlib, pathlib, sys
import coretsia
# Every module file, not pkgutil.walk_packages: some sub-packages are namespace packages
# (no __init__.py) and walk_packages does not descend into those.
for path in list(coretsia.__path__):
    for source in sorted(pathlib.Path(path).rglob("*.py")):
        parts = source.relative_to(path).with_suffix("").parts
        if parts[-1] in ("__main__", "_windows", "__init__"):
            parts = parts[:-1] if parts[-1] == "__init__" else ()
        if parts:
            importlib.import_module(".".join(("coretsia", *parts)))
    print(path)
for module in list(sys.modules.values()):
    print(getattr(module, "__file__", None) or "")
"""


def _pyc_fresh(source: str, cached: str) -> bool:
    """What the import system checks: a timestamp pyc recording the source's mtime and size."""
    try:
        with open(cached, "rb") as pyc:
            header = pyc.read(16)
        info = os.stat(source)
    except OSError:
        return False
    flags, mtime, size = (int.from_bytes(header[i : i + 4], "little") for i in (4, 8, 12))
    return (
        len(header) == 16
        and flags == 0
        and mtime == int(info.st_mtime) & 0xFFFFFFFF
        and size == info.st_size & 0xFFFFFFFF
    )


def ensure_bytecode() -> int:
    """Write the ``.pyc`` of every module Coretsia's processes import; how many were missing.

    Compiles exactly what the supervisor, guardian, proc host, launcher
    and client import (the coretsia sources and their dependencies). Python writes these
    itself on a first import, and ``pip install`` compiles them at install, but neither
    happens under ``PYTHONDONTWRITEBYTECODE=1`` with an installer that does not compile
    (``uv`` by default): then every process compiles its modules from source at every
    start. The benchmark measures the normal, compiled case.
    """
    import importlib.util

    listed = subprocess.run(
        [PYTHON, "-c", _COLLECT_MODULES], capture_output=True, text=True, check=True
    ).stdout.split()
    files: set[str] = set()
    for entry in listed:
        if os.path.isdir(entry):
            files.update(str(p) for p in Path(entry).rglob("*.py"))
        elif entry.endswith(".py"):
            files.add(entry)
    missing = 0
    for source in sorted(files):
        if _pyc_fresh(source, importlib.util.cache_from_source(source)):
            continue
        missing += 1
        with contextlib.suppress(OSError, py_compile.PyCompileError):
            py_compile.compile(
                source, doraise=True, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP
            )
    return missing


# --- pools ------------------------------------------------------------------------------


_LIVE: list[Pool] = []
_FLOORS: list[subprocess.Popen[bytes]] = []


class Pool:
    """One project root and its ``coretsia-supervisor start``."""

    def __init__(self, workers: int, **settings: object) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="cw-bench-"))
        self.workers_n = workers
        config = {
            "workers": workers,
            "task_source": "bench_app:idle",
            "start_timeout_ms": int(DEADLINE_S * 1000),
            "stop_timeout_ms": 10000,
            "force_kill_timeout_ms": 1000,
            **settings,
        }
        lines = ["[worker]"]
        for key, value in config.items():
            rendered = f'"{value}"' if isinstance(value, str) else str(value).lower()
            lines.append(f"{key} = {rendered}")
        (self.root / "coretsia.toml").write_text("\n".join(lines) + "\n")
        shutil.copy(BENCH / "bench_app.py", self.root / "bench_app.py")
        py_compile.compile(str(self.root / "bench_app.py"), doraise=True)
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
        return self._named("coretsia.supervisor.launcher")

    def guardian(self) -> psutil.Process:
        (guardian,) = self._named("coretsia.guardian")
        return guardian

    def proc_hosts(self) -> list[psutil.Process]:
        return self._named("coretsia.proc_host")

    def daemons(self) -> list[psutil.Process]:
        """The supervisor, the guardian and any proc host."""
        return [self.supervisor, self.guardian(), *self.proc_hosts()]

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
def running_pool(workers: int, **settings: object) -> Iterator[tuple[Pool, float]]:
    pool = Pool(workers, **settings)
    try:
        yield pool, pool.start()
        if pool.proc is not None and pool.proc.poll() is None:
            pool.stop()
    finally:
        leftovers = pool.cleanup()
        if leftovers:
            log(f"killed leftovers of a {workers}-worker pool: {leftovers}")


def cleanup_all() -> None:
    while _LIVE:
        _LIVE[0].cleanup()  # removes itself from the list
    while _FLOORS:
        kill_floor(_FLOORS[0])


# --- floor ------------------------------------------------------------------------------


def kill_floor(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            children = psutil.Process(proc.pid).children(recursive=True)
            for child in children:
                with contextlib.suppress(psutil.Error):
                    child.kill()
        proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()
    if proc in _FLOORS:
        _FLOORS.remove(proc)


def floor_pool(n: int) -> tuple[float, float]:
    """(launch to N ready, stop request to every worker reaped), in seconds."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [PYTHON, str(BENCH / "floor.py"), "pool", str(n)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    _FLOORS.append(proc)
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        line = proc.stdout.readline()
        ready = time.monotonic() - started
        if line != b"running\n":
            raise RuntimeError(f"floor of {n} failed")
        workers = [p.pid for p in psutil.Process(proc.pid).children()]
        watch = Watch(workers)
        try:
            started = time.monotonic()
            proc.stdin.write(b"stop\n")
            proc.stdin.flush()
            proc.wait(timeout=DEADLINE_S)
            left = watch.wait(started + DEADLINE_S)
            stopped = time.monotonic() - started
        finally:
            watch.close()
        if left or proc.returncode != 0:
            raise RuntimeError(f"floor of {n}: exit {proc.returncode}, left {left}")
        return ready, stopped
    finally:
        kill_floor(proc)


def floor_spawn(count: int) -> tuple[list[float], float]:
    """``count`` spawn-to-ready times of the minimal worker, and its CPU seconds."""
    done = subprocess.run(
        [PYTHON, str(BENCH / "floor.py"), "spawn", str(count)],
        capture_output=True,
        check=True,
        timeout=DEADLINE_S,
    )
    report = json.loads(done.stdout)
    return [float(t) for t in report["ready"]], float(report["cpu"])


# --- scenarios --------------------------------------------------------------------------


@dataclass
class Results:
    started: str
    machine: dict[str, object]
    runs: int
    data: dict[str, object] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def scenario_start_stop(results: Results, sizes: tuple[int, ...], runs: int) -> None:
    """Floor and S1 per N, interleaved run by run; S2 on the N = 64 pools."""
    for n in sizes:
        floor_start: list[float] = []
        floor_stop: list[float] = []
        s1: list[float] = []
        s2: list[float] = []
        rss: list[float] = []
        daemon_cpu: list[float] = []
        survivors: list[int] = []
        for run in range(runs):
            ready, stopped = floor_pool(n)
            floor_start.append(ready)
            floor_stop.append(stopped)
            with running_pool(n) as (pool, elapsed):
                s1.append(elapsed)
                rss.append(pool.supervisor.memory_info().rss / MIB)
                daemon_cpu.append(sum(sum(p.cpu_times()[:2]) for p in pool.daemons()))
                if n == STOP_N:
                    stop_s, left = pool.stop()
                    s2.append(stop_s)
                    survivors.extend(left)
                else:
                    pool.stop()
            log(
                f"N={n} run {run + 1}: floor {ready:.3f}s, S1 {elapsed:.3f}s"
                + (f", floor stop {stopped:.3f}s, S2 {s2[-1]:.3f}s" if n == STOP_N else "")
            )
        results.data[f"floor_start_{n}"] = floor_start
        results.data[f"s1_{n}"] = s1
        results.data[f"s1_supervisor_rss_mib_{n}"] = rss
        results.data[f"s1_daemon_cpu_s_{n}"] = daemon_cpu
        if n == STOP_N:
            results.data["floor_stop_64"] = floor_stop
            results.data["s2_64"] = s2
            results.data["s2_survivors"] = survivors


def scenario_big(results: Results) -> None:
    """S1 at N = 1024, once: completes? supervisor and guardian RSS once running."""
    ready, _ = floor_pool(BIG)
    results.data[f"floor_start_{BIG}"] = [ready]
    try:
        with running_pool(BIG) as (pool, elapsed):
            results.data[f"s1_{BIG}"] = [elapsed]
            results.data[f"s1_supervisor_rss_mib_{BIG}"] = [pool.supervisor.memory_info().rss / MIB]
            results.data[f"s1_guardian_rss_mib_{BIG}"] = [pool.guardian().memory_info().rss / MIB]
            pool.stop()
        log(f"N={BIG}: floor {ready:.3f}s, S1 {elapsed:.3f}s")
    except RuntimeError as error:
        results.data[f"s1_{BIG}"] = []
        results.notes.append(f"S1 N={BIG} did not complete: {error}")


def _recycle_gaps(log_path: Path) -> list[float]:
    """Exit-to-ready gaps of the same slot, from the workers' own monotonic stamps."""
    events = [line.split() for line in log_path.read_text().splitlines()]
    out: dict[str, float] = {}
    gaps = []
    for event, slot, stamp in sorted(events, key=lambda e: float(e[2])):
        if event == "exit":
            out[slot] = float(stamp)
        elif slot in out:
            gaps.append(float(stamp) - out.pop(slot))
    return gaps


def scenario_recycle(results: Results, runs: int, recycles: int = 12) -> None:
    """S3: one worker, no-op tasks, max_requests 50; the floor's spawn-to-ready."""
    spawn_runs: list[float] = []
    recycle_runs: list[float] = []
    for run in range(runs):
        spawn = median(floor_spawn(recycles)[0])
        with running_pool(1, task_source="bench_app:logged", max_requests=50) as (pool, _):
            log_path = pool.root / "recycle.log"
            deadline = time.monotonic() + DEADLINE_S
            while log_path.read_text().count("exit") < recycles:
                if time.monotonic() > deadline or pool.proc is None or pool.proc.poll():
                    raise RuntimeError("S3: the worker did not recycle")
                time.sleep(0.05)
            pool.stop()
            gaps = _recycle_gaps(log_path)
        spawn_runs.append(spawn)
        recycle_runs.append(median(gaps))
        log(f"S3 run {run + 1}: floor spawn {spawn * 1000:.1f} ms, recycle "
            f"{recycle_runs[-1] * 1000:.1f} ms ({len(gaps)} gaps)")  # fmt: skip
    results.data["floor_spawn"] = spawn_runs
    results.data["s3"] = recycle_runs


def scenario_containment(results: Results, runs: int) -> None:
    """S4: SIGKILL the supervisor of 64 workers; until the tree is gone and the lock free."""
    times: list[float] = []
    survivors: list[int] = []
    for run in range(runs):
        with running_pool(STOP_N) as (pool, _):
            tree = pool.supervisor.children(recursive=True)
            watch = Watch([p.pid for p in tree])
            try:
                assert pool.proc is not None
                started = time.monotonic()
                pool.proc.kill()
                left = watch.wait(started + 10)
                free = wait_lock_free(pool.root, started + 10)
                elapsed = time.monotonic() - started
            finally:
                watch.close()
            pool.proc.wait()
            still = [p.pid for p in tree if alive(p)] + [p.pid for p in processes_in(pool.root)]
            survivors.extend(sorted(set(left) | set(still)))
            if not free:
                results.notes.append("S4: the lock was still held 10 s after the SIGKILL")
            times.append(elapsed)
        log(f"S4 run {run + 1}: {elapsed:.3f}s, survivors {len(survivors)}")
    results.data["s4"] = times
    results.data["s4_survivors"] = survivors


def _launcher_once(root: Path) -> tuple[float, float, float]:
    """Spawn one launcher by hand (its internal contract, no supervisor, no guardian).

    (spawn to its ``ready`` frame, stop-pipe close to reaped, its CPU seconds), seconds.
    """
    from coretsia.supervisor.slots import LAUNCHER_CODE  # the command workers run
    from coretsia.worker_protocol.parent_watch import PARENT_PID_ENV

    ours, theirs = socket.socketpair()
    stop_read, stop_write = os.pipe()
    env = {**os.environ, PARENT_PID_ENV: str(os.getpid())}
    argv = [
        PYTHON, "-c", LAUNCHER_CODE,
        "--coretsia-worker-artifact-root=var/generations", "--coretsia-worker-slot=0",
        f"--coretsia-worker-channel-fd={theirs.fileno()}", f"--coretsia-worker-stop-fd={stop_read}",
    ]  # fmt: skip
    try:
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=root, env=env, pass_fds=(theirs.fileno(), stop_read))
        theirs.close()
        os.close(stop_read)
        frame = ours.recv(4096)
        ready = time.monotonic() - started
        if b'"ready"' not in frame:
            proc.kill()
            proc.wait()
            raise RuntimeError(f"launcher did not report ready: {frame!r}")
        started = time.monotonic()
        os.close(stop_write)
        stop_write = -1
        _, status, usage = os.wait4(proc.pid, 0)
        stopped = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        return ready, stopped, usage.ru_utime + usage.ru_stime
    finally:
        if stop_write >= 0:
            os.close(stop_write)
        ours.close()
        theirs.close()


def scenario_boot(results: Results, runs: int, count: int = 20) -> None:
    """The launcher alone, against the floor's minimal worker: boot, stop, CPU."""
    ready_runs: list[float] = []
    stop_runs: list[float] = []
    cpu_runs: list[float] = []
    floor_runs: list[float] = []
    floor_cpu: list[float] = []
    with running_pool(1) as (pool, _):
        pool.stop()  # the published generation stays: a launcher can boot from it
        for _ in range(runs):
            times, cpu = floor_spawn(count)
            floor_runs.append(median(times))
            floor_cpu.append(cpu)
            samples = [_launcher_once(pool.root) for _ in range(count)]
            ready_runs.append(median([s[0] for s in samples]))
            stop_runs.append(median([s[1] for s in samples]))
            cpu_runs.append(median([s[2] for s in samples]))
    results.data["boot_floor_spawn"] = floor_runs
    results.data["boot_launcher_ready"] = ready_runs
    results.data["boot_launcher_stop"] = stop_runs
    results.data["boot_launcher_cpu"] = cpu_runs
    results.data["boot_floor_cpu"] = floor_cpu
    log(f"boot: launcher {ready_runs} (floor {floor_runs}), stop {stop_runs}, cpu {cpu_runs}")


def _bare_interpreter_rss() -> tuple[float, float]:
    code = "import sys, time\nprint('ok', flush=True)\ntime.sleep(3600)\n"
    proc = subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        info = psutil.Process(proc.pid).memory_full_info()
        return info.rss / MIB, info.uss / MIB
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def scenario_idle(results: Results, driver: str, windows: int, window_s: float) -> None:
    """S5: idle cost of the daemons over ``windows`` windows of ``window_s`` seconds."""
    with running_pool(STOP_N, driver=driver) as (pool, _):
        daemons = {"supervisor": pool.supervisor, "guardian": pool.guardian()}
        for index, host in enumerate(pool.proc_hosts()):
            daemons[f"proc host {index}"] = host
        time.sleep(2.0)  # let the start settle (state file, first health ticks)
        cpu: list[float] = []
        sched: list[float] = []
        wakeups: list[float] = []
        per_daemon: dict[str, list[float]] = {name: [] for name in daemons}
        churn: list[int] = []
        for _ in range(windows):
            before = {name: (p.cpu_times(), thread_stats(p.pid)) for name, p in daemons.items()}
            time.sleep(window_s)
            after = {name: (p.cpu_times(), thread_stats(p.pid)) for name, p in daemons.items()}
            total_cpu = total_sched = 0.0
            total_wake = total_churn = 0
            for name in daemons:
                (c0, t0), (c1, t1) = before[name], after[name]
                total_cpu += (c1.user + c1.system) - (c0.user + c0.system)
                used, wakes, threads = idle_delta(t0, t1)
                total_sched += used
                total_wake += wakes
                total_churn += threads
                per_daemon[name].append(used)
            scale = 10.0 / window_s
            cpu.append(total_cpu * scale)
            sched.append(total_sched * scale)
            wakeups.append(total_wake / window_s)
            churn.append(total_churn)
        rss = {name: proc.memory_info().rss / MIB for name, proc in daemons.items()}
        workers = pool.workers()
        worker_rss = [w.memory_full_info() for w in workers[:16]]
    bare_rss, bare_uss = _bare_interpreter_rss()
    prefix = f"s5_{driver}"
    results.data[f"{prefix}_cpu_s_per_10s"] = cpu
    results.data[f"{prefix}_sched_cpu_s_per_10s"] = sched
    results.data[f"{prefix}_wakeups_per_s"] = wakeups
    results.data[f"{prefix}_threads_started_or_ended"] = churn
    results.data[f"{prefix}_sched_cpu_s_per_daemon"] = per_daemon
    results.data[f"{prefix}_rss_mib"] = rss
    results.data[f"{prefix}_worker_rss_mib"] = median([i.rss / MIB for i in worker_rss])
    results.data[f"{prefix}_worker_uss_mib"] = median([i.uss / MIB for i in worker_rss])
    results.data[f"{prefix}_bare_rss_mib"] = bare_rss
    results.data[f"{prefix}_bare_uss_mib"] = bare_uss
    log(f"S5 {driver}: cpu {cpu}, sched {sched}, wakeups/s {wakeups}, threads {churn}")


def _timed_process(argv: list[str]) -> float:
    started = time.monotonic()
    subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=True)
    return time.monotonic() - started


def scenario_control(results: Results, runs: int, processes: int = 15) -> None:
    """S6: the status command as a process, and ControlClient.status() in-process."""
    status_runs: list[float] = []
    bare_runs: list[float] = []
    client_runs: list[float] = []
    with running_pool(STOP_N) as (pool, _):
        status = [*SUPERVISOR, "status", "--root", str(pool.root)]
        bare = [PYTHON, "-c", "pass"]
        for _ in range(3):  # warm the page cache and the pyc files
            _timed_process(status)
            _timed_process(bare)
        client = ControlClient(pool.root)
        for _ in range(10):
            client.status()
        for _ in range(runs):
            status_t: list[float] = []
            bare_t: list[float] = []
            for _ in range(processes):
                status_t.append(_timed_process(status))
                bare_t.append(_timed_process(bare))
            round_trips = []
            for _ in range(100):
                started = time.perf_counter()
                client.status()
                round_trips.append(time.perf_counter() - started)
            status_runs.append(median(status_t))
            bare_runs.append(median(bare_t))
            client_runs.append(median(round_trips))
        pool.stop()
    results.data["s6_status_process"] = status_runs
    results.data["s6_python_pass"] = bare_runs
    results.data["s6_client_status"] = client_runs
    log(f"S6: status {status_runs}, python -c pass {bare_runs}, client {client_runs}")


class _MemorySource:
    """Hands out the same no-op task ``count`` times, then requests the stop and ends."""

    def __init__(self, count: int, stop: Callable[[], None]) -> None:
        self.left = count
        self.task = NoopTask()
        self.stop = stop

    def assert_ready(self) -> None:
        pass

    def receive(self) -> NoopTask | None:
        if self.left:
            self.left -= 1
            return self.task
        self.stop()
        return None


def scenario_task_loop(results: Results, runs: int, count: int = 200_000) -> None:
    """S7: per-task overhead of run_unit and work() against a bare loop."""
    from coretsia.supervisor.stop_signal import StopSignal
    from coretsia.supervisor.worker.channel import Reporter, Retirement
    from coretsia.supervisor.worker.loop import Hooks, run_unit, work
    from coretsia.supervisor.worker.tasks import SourceContext

    hooks = Hooks()
    task = NoopTask()

    def bare() -> float:
        run = task.run
        started = time.perf_counter()
        for _ in range(count):
            run()
        return time.perf_counter() - started

    def units() -> float:
        started = time.perf_counter()
        for _ in range(count):
            run_unit(task, hooks)
        return time.perf_counter() - started

    def loop() -> float:
        read_end, write_end = os.pipe()
        ours, theirs = socket.socketpair()
        try:
            context = SourceContext("queue", 0, StopSignal(read_end), "bench", {})
            source = _MemorySource(count, lambda: os.close(write_end))
            retirement = Retirement(Reporter(ours))
            started = time.perf_counter()
            work(source, context, count + 1, hooks, retirement)
            return time.perf_counter() - started
        finally:
            os.close(read_end)
            ours.close()
            theirs.close()

    telemetry = _sdk_telemetry()

    def units_with_telemetry() -> float:
        started = time.perf_counter()
        for _ in range(count // 10):  # a span and three instruments per task: fewer tasks
            run_unit(task, hooks, telemetry)
        return (time.perf_counter() - started) * 10

    per_unit: list[float] = []
    per_loop: list[float] = []
    per_traced: list[float] = []
    for _ in range(runs):
        base = min(bare() for _ in range(3))
        per_unit.append((min(units() for _ in range(3)) - base) / count)
        per_loop.append((min(loop() for _ in range(3)) - base) / count)
        if telemetry is not None:
            per_traced.append((min(units_with_telemetry() for _ in range(3)) - base) / count)
    results.data["s7_bare_per_task"] = [base / count]
    results.data["s7_run_unit_overhead"] = per_unit
    results.data["s7_work_overhead"] = per_loop
    if per_traced:
        results.data["s7_run_unit_telemetry_overhead"] = per_traced
    log(f"S7: run_unit +{median(per_unit) * 1e6:.2f} us, work +{median(per_loop) * 1e6:.2f} us")


def _sdk_telemetry() -> Any:
    """A Telemetry on the OpenTelemetry SDK (in-memory export), or None without the SDK.

    What ``telemetry = "otel"`` costs a task with an SDK that keeps every span and metric:
    the in-memory exporter stands for the cheapest real one.
    """
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )
    except ImportError:
        return None
    from coretsia.supervisor.telemetry import Telemetry

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return Telemetry(tracer_provider.get_tracer("bench"), meter_provider.get_meter("bench"))


# --- report -----------------------------------------------------------------------------


def _get(results: Results, key: str) -> float:
    value = results.data.get(key)
    if isinstance(value, list):
        return median([float(v) for v in value])
    if isinstance(value, (int, float)):
        return float(value)
    return float("nan")


def _count(results: Results, key: str) -> int:
    value = results.data.get(key)
    return len(value) if isinstance(value, list) else 0


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


class _Table:
    """Rows of the report: scenario, median, floor or reference, ratio, budget, verdict."""

    HEADER = ("scenario", "median", "floor / reference", "ratio", "budget", "verdict")

    def __init__(self) -> None:
        self.rows: list[tuple[str, ...]] = []

    def add(
        self,
        name: str,
        value: str,
        *,
        floor: str = "",
        ratio: float | None = None,
        budget: str = "",
        ok: bool | None = None,
        detail: str = "",
    ) -> None:
        verdict = "" if ok is None else ("pass" if ok else "**FAIL**")
        if detail:
            verdict = f"{verdict} ({detail})" if verdict else detail
        shown_ratio = "" if ratio is None else f"{ratio:.2f}"
        self.rows.append((name, value, floor, shown_ratio, budget, verdict))

    def markdown(self) -> str:
        lines = ["| " + " | ".join(self.HEADER) + " |", "|" + "---|" * len(self.HEADER)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


def _start_rows(results: Results, out: _Table) -> None:
    for n in (*START_SIZES, BIG):
        if f"floor_start_{n}" not in results.data:
            continue
        s1, floor = _get(results, f"s1_{n}"), _get(results, f"floor_start_{n}")
        if n == BIG:
            rss = _get(results, f"s1_supervisor_rss_mib_{n}")
            completes = bool(results.data.get(f"s1_{n}"))
            out.add(
                f"S1 start, N={n} (once)", _ms(s1), floor=_ms(floor), ratio=s1 / floor,
                budget="completes; supervisor RSS <= 80 MB (76.3 MiB)",
                ok=completes and rss * MIB <= 80e6, detail=f"RSS {rss:.1f} MiB",
            )  # fmt: skip
            continue
        limit = 1.10 * floor + 0.20
        out.add(
            f"S1 start, N={n}", _ms(s1), floor=_ms(floor), ratio=s1 / floor,
            budget=f"<= 1.10 x floor + 0.20 s = {_ms(limit)}", ok=s1 <= limit,
        )  # fmt: skip
        out.add(
            f"S1 supervisor+guardian CPU by running, N={n}",
            _ms(_get(results, f"s1_daemon_cpu_s_{n}")), detail="explains S1",
        )  # fmt: skip
    if "s2_64" in results.data:
        s2, floor = _get(results, "s2_64"), _get(results, "floor_stop_64")
        limit = 1.25 * floor + 0.05
        survivors = _count(results, "s2_survivors")
        out.add(
            "S2 stop, N=64", _ms(s2), floor=_ms(floor), ratio=s2 / floor,
            budget=f"<= 1.25 x floor + 0.05 s = {_ms(limit)}",
            ok=s2 <= limit and not survivors, detail=f"{survivors} survivors",
        )  # fmt: skip


def _lifecycle_rows(results: Results, out: _Table) -> None:
    if "s3" in results.data:
        s3, floor = _get(results, "s3"), _get(results, "floor_spawn")
        limit = floor + 0.025
        out.add(
            "S3 recycle, exit to ready", _ms(s3), floor=f"{_ms(floor)} (spawn to ready)",
            ratio=s3 / floor, budget=f"<= floor + 25 ms = {_ms(limit)}", ok=s3 <= limit,
        )  # fmt: skip
    if "boot_launcher_ready" in results.data:
        boot, floor = _get(results, "boot_launcher_ready"), _get(results, "boot_floor_spawn")
        out.add(
            "launcher alone, spawn to ready", _ms(boot), floor=f"{_ms(floor)} (spawn to ready)",
            ratio=boot / floor, detail="explains S1, S3",
        )  # fmt: skip
        out.add(
            "launcher alone, stop to reaped", _ms(_get(results, "boot_launcher_stop")),
            detail="explains S2",
        )  # fmt: skip
        out.add(
            "launcher alone, CPU per life", _ms(_get(results, "boot_launcher_cpu")),
            floor=f"{_ms(_get(results, 'boot_floor_cpu'))} (minimal worker)",
            ratio=_get(results, "boot_launcher_cpu") / _get(results, "boot_floor_cpu"),
        )  # fmt: skip
    if "s4" in results.data:
        s4 = _get(results, "s4")
        survivors = _count(results, "s4_survivors")
        out.add(
            "S4 SIGKILL supervisor, N=64", _ms(s4), budget="<= 500 ms, zero survivors",
            ok=s4 <= 0.5 and not survivors, detail=f"{survivors} survivors",
        )  # fmt: skip


def _idle_rows(results: Results, out: _Table) -> None:
    for driver in ("fork", "proc"):
        prefix = f"s5_{driver}"
        if f"{prefix}_cpu_s_per_10s" not in results.data:
            continue
        cpu = _get(results, f"{prefix}_cpu_s_per_10s")
        sched = _get(results, f"{prefix}_sched_cpu_s_per_10s")
        wake = _get(results, f"{prefix}_wakeups_per_s")
        daemons = "supervisor+guardian" + ("+proc host" if driver == "proc" else "")
        out.add(
            f"S5 idle CPU, {daemons} ({driver})", f"{cpu:.3f} CPU-s / 10 s",
            floor=f"per-thread sched: {sched:.5f} CPU-s", budget="<= 0.01 CPU-s / 10 s",
            ok=cpu <= 0.01 and sched <= 0.01,
        )  # fmt: skip
        out.add(f"S5 idle wake-ups ({driver})", f"{wake:.2f} /s", budget="<= 1 /s", ok=wake <= 1)
        rss = results.data[f"{prefix}_rss_mib"]
        assert isinstance(rss, dict)
        for name, value in rss.items():
            limit = {"supervisor": 30, "guardian": 25}.get(name)
            out.add(
                f"S5 {name} RSS ({driver})", f"{value:.1f} MiB",
                budget="" if limit is None else f"<= {limit} MiB",
                ok=None if limit is None else value <= limit,
            )  # fmt: skip
        worker = _get(results, f"{prefix}_worker_rss_mib")
        bare = _get(results, f"{prefix}_bare_rss_mib")
        uss = _get(results, f"{prefix}_worker_uss_mib")
        bare_uss = _get(results, f"{prefix}_bare_uss_mib")
        out.add(
            f"S5 launcher RSS ({driver})", f"{worker:.1f} MiB (USS {uss:.1f})",
            floor=f"bare {bare:.1f} MiB (USS {bare_uss:.1f})", budget="<= bare + 3 MiB",
            ok=worker - bare <= 3, detail=f"+{worker - bare:.1f} MiB",
        )  # fmt: skip


def _control_rows(results: Results, out: _Table) -> None:
    if "s6_status_process" in results.data:
        status, bare = _get(results, "s6_status_process"), _get(results, "s6_python_pass")
        out.add(
            "S6 `status` process", _ms(status), floor=f"{_ms(bare)} (`python -c pass`)",
            ratio=status / bare, budget="<= 3 x `python -c pass`", ok=status <= 3 * bare,
        )  # fmt: skip
        client = _get(results, "s6_client_status")
        out.add(
            "S6 ControlClient.status()", f"{client * 1e6:.0f} us", budget="<= 1 ms",
            ok=client <= 0.001,
        )  # fmt: skip
    if "s7_work_overhead" in results.data:
        bare = _get(results, "s7_bare_per_task")
        for key, name in (("s7_run_unit_overhead", "run_unit"), ("s7_work_overhead", "work")):
            over = _get(results, key)
            out.add(
                f"S7 {name}, per task over the bare loop", f"+{over * 1e6:.2f} us",
                floor=f"bare loop {bare * 1e6:.3f} us/task", budget="<= 20 us",
                ok=over <= 20e-6,
            )  # fmt: skip
        if "s7_run_unit_telemetry_overhead" in results.data:
            over = _get(results, "s7_run_unit_telemetry_overhead")
            out.add(
                "S7 run_unit with telemetry on (SDK, in-memory export)",
                f"+{over * 1e6:.2f} us", detail="reported, no budget",
            )  # fmt: skip


def table(results: Results) -> str:
    """The markdown table: medians, ratios to the floor, budgets, pass or fail."""
    out = _Table()
    _start_rows(results, out)
    _lifecycle_rows(results, out)
    _idle_rows(results, out)
    _control_rows(results, out)
    return out.markdown()


def commit() -> str:
    """The checked-out commit, ``+dirty`` when the tree has changes (what was measured)."""
    git = ["git", "-C", str(BENCH)]
    head = subprocess.run(
        [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    dirty = subprocess.run(
        [*git, "status", "--porcelain"], capture_output=True, text=True, check=False
    )
    return (head.stdout.strip() or "unknown") + ("+dirty" if dirty.stdout.strip() else "")


def machine() -> dict[str, object]:
    return {
        "commit": commit(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "memory_gib": round(psutil.virtual_memory().total / 1024**3, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-1024", dest="big", action="store_false")
    parser.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--no-compile", dest="compile", action="store_false")
    parser.add_argument("--only", default="", help="comma-separated: start,big,s3,boot,s4,s5,s6,s7")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    started = datetime.datetime.now(datetime.timezone.utc)
    busy = wait_idle(args.wait_idle) if args.wait_idle else busy_processes()
    results = Results(started.isoformat(timespec="seconds"), machine(), args.runs)
    results.data["load_average_before"] = load_average()
    if busy:
        results.notes.append(f"other test runs were busy at the start: {len(busy)} processes")
    if args.compile:
        compiled = ensure_bytecode()
        results.notes.append(f"bytecode: {compiled} modules had no fresh .pyc and were compiled")
    else:
        results.notes.append("bytecode: not checked (--no-compile)")
    only = set(filter(None, args.only.split(",")))

    def wanted(name: str) -> bool:
        return not only or name in only

    clock = time.monotonic()
    try:
        if wanted("start"):
            with running_pool(8):  # warm-up, discarded: page cache, pyc files
                pass
            sizes = START_SIZES[:2] if args.quick else START_SIZES
            scenario_start_stop(results, sizes, args.runs)
        if wanted("s3"):
            scenario_recycle(results, args.runs)
        if wanted("boot"):
            scenario_boot(results, args.runs)
        if wanted("s4"):
            scenario_containment(results, args.runs)
        if wanted("s5"):
            windows, window_s = (1, 2.0) if args.quick else (args.runs, IDLE_WINDOW_S)
            for driver in ("fork", "proc"):
                scenario_idle(results, driver, windows, window_s)
        if wanted("s6"):
            scenario_control(results, args.runs)
        if wanted("s7"):
            scenario_task_loop(results, args.runs)
        if wanted("big") and args.big and not args.quick:  # last: it loads the machine
            scenario_big(results)
        elif not args.big:
            results.notes.append(f"S1 N={BIG} skipped (--no-1024)")
    finally:
        cleanup_all()
    results.data["load_average_after"] = load_average()
    results.data["wall_s"] = time.monotonic() - clock

    text = "\n".join(
        [
            f"# Coretsia Worker benchmark, {results.started}",
            "",
            f"Machine: {results.machine['cores']} cores, {results.machine['memory_gib']} GiB,"
            f" {results.machine['implementation']} {results.machine['python']},"
            f" {results.machine['platform']}.",
            f"Runs per scenario: {results.runs} (medians). Load average before:"
            f" {results.data['load_average_before']}, after: {results.data['load_average_after']}."
            f" Wall time: {results.data['wall_s']:.0f} s.",
            "",
            table(results),
            "",
            *(f"- {note}" for note in results.notes),
        ]
    )
    save(results, text, started)
    return 0


def save(results: Results, text: str, started: datetime.datetime, prefix: str = "") -> None:
    """Write ``bench/results/<prefix><stamp>.json`` (every sample) and ``.md``; print."""
    RESULTS.mkdir(exist_ok=True)
    stamp = prefix + started.strftime("%Y%m%dT%H%M%SZ")
    (RESULTS / f"{stamp}.json").write_text(json.dumps(results.__dict__, indent=2) + "\n")
    (RESULTS / f"{stamp}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up on TERM too
    sys.exit(main())
