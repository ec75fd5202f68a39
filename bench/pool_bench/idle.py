"""S5 idle cost: the daemons' CPU and wake-ups over idle windows, their RSS, a worker's."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import psutil
from harness.results import Results, median

from pool_bench.pools import MIB, PYTHON, STOP_N, log, running_pool

IDLE_WINDOW_S = 10.0


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
        for index, init in enumerate(pool.inits()):
            daemons[f"namespace init {index}"] = init
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
