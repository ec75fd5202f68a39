"""S6 control: ``coretsia-supervisor status`` as a process, ``ControlClient.status()``."""

from __future__ import annotations

import subprocess
import time

from harness.results import Results, median

from coretsia.worker_protocol.client import ControlClient
from pool_bench.pools import PYTHON, STOP_N, SUPERVISOR, log, running_pool


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
