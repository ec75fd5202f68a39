"""S1 start and S2 stop against the floor, N by N, and the N = 1024 start (once)."""

from __future__ import annotations

from harness.results import Results

from pool_bench.floors import floor_pool
from pool_bench.pools import MIB, STOP_N, log, running_pool

START_SIZES = (8, 64, 256)
BIG = 1024


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
