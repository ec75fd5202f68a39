"""Throughput (no-op tasks, N by N) and I/O-bound (sleeping tasks): both sides alike."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from harness.results import Results

from queue_bench.roots import log
from queue_bench.sides import drain

IO_TASKS, IO_WORKERS, IO_SLEEP_S = 200, 4, 0.05


def one_run(side: str, workers: int, tasks: int, task: str) -> dict[str, Any]:
    result = drain(side, workers, tasks, task)
    log(
        f"{side} N={workers} {task}: {result['tasks_per_s']:.0f} tasks/s, first task after "
        f"{result['launch_to_first_s'] * 1000:.0f} ms, per process {result['per_process']}"
    )
    return result


def _order(index: int) -> tuple[str, str]:
    """Which side goes first in run ``index``: alternating, so neither always warms up."""
    return ("coretsia", "huey") if index % 2 == 0 else ("huey", "coretsia")


def throughput(results: Results, sizes: list[int], tasks: int, runs: int) -> None:
    """Coretsia N, Huey N (the order alternating), ... ``runs`` times; every sample kept."""
    samples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for index in range(runs):
        log(f"throughput run {index + 1}/{runs}")
        for n in sizes:
            for side in _order(index):
                samples[f"{side}_n{n}"].append(one_run(side, n, tasks, "noop"))
    results.data["throughput"] = {
        f"{side}_n{n}": samples[f"{side}_n{n}"] for n in sizes for side in ("coretsia", "huey")
    }


def io_bound(results: Results, runs: int) -> None:
    samples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    ideal = IO_TASKS * IO_SLEEP_S / IO_WORKERS
    for index in range(runs):
        log(f"I/O-bound run {index + 1}/{runs}")
        for side in _order(index):
            result = one_run(side, IO_WORKERS, IO_TASKS, "sleep50")
            result["ideal_s"] = ideal
            result["fraction_of_ideal"] = ideal / result["window_s"]
            samples[f"{side}_io"].append(result)
    results.data["io"] = {f"{side}_io": samples[f"{side}_io"] for side in ("coretsia", "huey")}
