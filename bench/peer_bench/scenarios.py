"""The figures of the peers' table, measured side by side, run by run.

Every sample goes to ``results.data["peers"][side][figure]`` (a list, one entry per run;
the table prints medians). Sides are interleaved within a run, so a load that comes and
goes weighs on every side alike.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
from harness import BENCH
from harness.results import Results, median
from pool_bench.floors import floor_pool
from pool_bench.lifecycle import recycle_gaps
from pool_bench.pools import DEADLINE_S, MIB, STOP_N, log, running_pool, toml_value
from pool_bench.watch import Watch

from peer_bench.running import running
from peer_bench.sides import Coretsia, Side, mode_settings, spawn_accepted

CONTAINMENT_WAIT_S = 3.0
"""The figure counts the workers still alive this long after the supervisor's SIGKILL."""
QUICKSTART_N = 128
QUICKSTART_PRELOAD = ["coretsia.sources.sqlite_source", "quickstart_app"]
"""What the ``preload`` mode preloads in the quick start: its task source and handler."""
SETTLE_S = 2.0
"""How long the workers run before the first is killed: past supervisord's ``startsecs``
(1 s), before which a death counts as a failed start and is retried with a growing
back-off. A steady pool's worker dies, not a starting one."""


def record(results: Results, side: str, figure: str, value: float) -> None:
    peers = results.data.setdefault("peers", {})
    assert isinstance(peers, dict)
    peers.setdefault(side, {}).setdefault(figure, []).append(value)


def _pss_mib(processes: list[psutil.Process]) -> float:
    total = 0
    for proc in processes:
        try:
            total += proc.memory_full_info().pss
        except psutil.Error:
            continue
    return total / MIB


def _cpu_ms(processes: list[psutil.Process]) -> float:
    """The CPU time the processes have used so far, ms: every live thread's run time
    (``schedstat``, in nanoseconds), and what each process's reaped children used."""
    total_ns = 0
    for proc in processes:
        try:
            for task in os.listdir(f"/proc/{proc.pid}/task"):
                with open(f"/proc/{proc.pid}/task/{task}/schedstat", encoding="ascii") as stat:
                    total_ns += int(stat.read().split()[0])
            times = proc.cpu_times()
        except (OSError, ValueError, psutil.Error):
            continue  # gone meanwhile
        total_ns += round((times.children_user + times.children_system) * 1e9)
    return total_ns / 1e6


def scenario_start(results: Results, sides: list[Side], sizes: tuple[int, ...], run: int) -> None:
    """Launch to the first and to the N-th ready worker; at the smallest N, the CPU the
    whole tree used until then; at N = 64, PSS and graceful stop."""
    for n in sizes:
        for side in sides:
            with running(side, n) as pool:
                first, last = pool.wait_ready()
                record(results, side.name, f"first_ready_{n}", first)
                record(results, side.name, f"start_{n}", last)
                detail = ""
                if n == sizes[0]:
                    cpu = _cpu_ms(pool.tree())
                    record(results, side.name, f"start_cpu_ms_{n}", cpu)
                    detail = f", CPU {cpu:.0f} ms"
                if n == STOP_N:
                    pss = _pss_mib(pool.tree())
                    stop = pool.stop()
                    record(results, side.name, f"pss_mib_{n}", pss)
                    record(results, side.name, f"stop_{n}", stop)
                    detail += f", PSS {pss:.0f} MiB, stop {stop:.3f}s"
            log(f"run {run + 1} N={n} {side.name}: first {first:.3f}s, all {last:.3f}s{detail}")


def _respawns(side: Side, kills: int) -> list[float]:
    """SIGKILL ``kills`` workers in turn: each death to its replacement's datagram, seconds.

    Each victim is another of the first workers (``kills`` <= 8), so none is a
    replacement that has just started.
    """
    gaps: list[float] = []
    with running(side, 8) as pool:
        pool.wait_ready()
        time.sleep(SETTLE_S)
        for victim in pool.ready.pids()[:kills]:
            count = len(pool.ready.events)
            watch = Watch([victim])
            try:
                os.kill(victim, signal.SIGKILL)
                deadline = time.monotonic() + DEADLINE_S
                if watch.wait(deadline):
                    raise RuntimeError(f"{side.name}: a SIGKILLed worker did not exit")
                died = time.monotonic()
            finally:
                watch.close()
            if not pool.ready.wait_count(count + 1, time.monotonic() + 30):
                raise RuntimeError(f"{side.name}: no replacement within 30 s")
            stamp, pid = pool.ready.events[count]
            if pid == victim:
                raise RuntimeError(f"{side.name}: the killed worker reported again")
            gaps.append(stamp - died)
    return gaps


def _status_times(side: Side, probes: int) -> list[float]:
    """``probes`` runs of the side's status command against 8 running workers, seconds."""
    times: list[float] = []
    with running(side, 8) as pool:
        pool.wait_ready()
        argv = side.status(pool.root)
        assert argv is not None
        for index in range(probes + 2):  # two warm-ups: page cache, pyc files
            started = time.monotonic()
            subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=True)
            if index >= 2:
                times.append(time.monotonic() - started)
    return times


def scenario_control(results: Results, sides: list[Side], run: int, kills: int = 5) -> None:
    """Respawn after a worker dies, and ``status`` as a process, for the sides that have them.

    Coretsia fails its pool when a worker dies unannounced (by design: seed 000); its
    replacement of a worker is the recycle (S3: a worker retires after ``max_requests``,
    from its ``atexit`` to its replacement's readiness), measured with the same spawn mode.
    """
    for side in sides:
        if isinstance(side, Coretsia):
            gaps = recycle_gaps(12, **side.settings)
        elif side.respawns:
            gaps = _respawns(side, kills)
        else:
            gaps = []
        if gaps:
            record(results, side.name, "respawn", median(gaps))
        if side.has_status():
            record(results, side.name, "status", median(_status_times(side, 10)))
        log(f"run {run + 1} {side.name}: respawn {median(gaps) if gaps else 'none'}")


def scenario_containment(results: Results, sides: list[Side]) -> None:
    """SIGKILL the supervisor of 64 workers: how many workers are alive 3 s later."""
    for side in sides:
        with running(side, STOP_N) as pool:
            pool.wait_ready()
            watch = Watch(pool.ready.pids())
            try:
                started = time.monotonic()
                pool.kill()
                left = watch.wait(started + CONTAINMENT_WAIT_S)
            finally:
                watch.close()
        record(results, side.name, f"alive_after_kill_{STOP_N}", len(left))
        log(f"{side.name}: {len(left)} of {STOP_N} workers alive 3 s after SIGKILL")


def _quickstart_root(workers: int, spawn: str) -> Path:
    """A copy of ``docs/examples/quickstart`` with ``workers`` workers (and ``spawn``).

    Its queue is made before the start, empty, as ``bin/demo`` makes it by enqueueing
    first: 128 workers creating one database together is not what is measured here.
    """
    from coretsia.sources.sqlite_queue import SqliteQueue

    root = Path(tempfile.mkdtemp(prefix="cw-quickstart-"))
    source = BENCH.parent / "docs" / "examples" / "quickstart"
    shutil.copytree(source, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("var"))
    config = root / "coretsia.toml"
    text = re.sub(r"(?m)^workers = \d+$", f"workers = {workers}", config.read_text())
    text = re.sub(
        r"(?m)^start_timeout_ms = \d+$", f"start_timeout_ms = {int(DEADLINE_S * 1000)}", text
    )
    if spawn_accepted(spawn):
        settings = mode_settings(spawn, QUICKSTART_PRELOAD)
        lines = "".join(f"{key} = {toml_value(value)}\n" for key, value in settings.items())
        text = text.replace("[worker]\n", f"[worker]\n{lines}", 1)
    config.write_text(text)
    (root / "var").mkdir()
    SqliteQueue(str(root / "var" / "queue.sqlite3")).close()
    return root


def scenario_quickstart(results: Results, modes: list[str], run: int) -> None:
    """The quick start's 128 task workers to ``running``, against 128 bare interpreters."""
    floor, _ = floor_pool(QUICKSTART_N)
    record(results, "floor (bare Popen)", f"quickstart_{QUICKSTART_N}", floor)
    for mode in modes:
        root = _quickstart_root(QUICKSTART_N, mode)
        try:
            with running_pool(QUICKSTART_N, root=root) as (_, elapsed):
                record(results, f"Coretsia ({mode})", f"quickstart_{QUICKSTART_N}", elapsed)
        except RuntimeError as error:  # a failed start is a result too: say it, go on
            reason = str(error).splitlines()[-1]  # the start's own last line: code and token
            results.notes.append(f"run {run + 1}: the quick start ({mode}) failed: {reason}")
            log(f"run {run + 1} quick start, {mode}: failed")
            continue
        log(f"run {run + 1} quick start, {mode}: {elapsed:.3f}s (floor {floor:.3f}s)")
