"""``max_memory_mb``: a worker past it retires as at ``max_requests``, for real.

A handler (and an entry) grows its worker by 50 MiB a round under ``max_memory_mb =
300``: every worker is recycled several times, with the cause ``max-memory`` in the log,
in ``status --json`` and on the Prometheus endpoint; the pool never fails, no worker's
resident memory (as the worker itself read it after each round) passes 400 MiB, and
every task is done. ``status --json`` lists each slot's resident memory, as the kernel
tells it for the worker's pid. Every supervisor is stopped at teardown.
"""

from __future__ import annotations

import json
import textwrap
import urllib.request
from pathlib import Path
from typing import Any

import pools
from ports import free_port

MIB = 1024 * 1024
LIMIT_MB = 300
BOUND = 400 * MIB
"""No worker may pass this: the limit plus one round (50 MiB) plus the interpreter."""
TASKS = 3 * 24
"""Three workers, about six rounds each before they pass the limit: four lives each."""


def rounds(root: Path) -> list[tuple[str, int, int]]:
    """Each round's tag, pid and resident memory, as the worker recorded them."""
    path = root / "rounds.log"
    if not path.exists():
        return []
    return [
        (tag, int(pid), int(size))
        for tag, pid, size in (line.split() for line in path.read_text().splitlines())
    ]


def status(root: Path) -> dict[str, Any]:
    """``status --json``, which must answer."""
    answer = pools.cli(root, "status", "--json")
    assert answer.returncode == 0, answer.stderr
    fields: dict[str, Any] = json.loads(answer.stdout)
    return fields


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {
        name: float(value)
        for name, value in (
            line.rsplit(" ", 1) for line in text.splitlines() if line and line[0] != "#"
        )
    }


def test_task_workers_past_the_limit_are_recycled_and_every_task_is_done(
    root: Path, supervisors: pools.Supervisors
) -> None:
    port = free_port()
    pools.write_root(
        root,
        workers=3,
        task_source="memory_app:growing",
        max_memory_mb=LIMIT_MB,
        metrics_port=port,
        source_options={"tasks": TASKS},
    )
    pools.install_app(root, "memory_app.py")
    supervisor = supervisors(root)
    supervisor.wait_running()
    pools.wait_for(lambda: len(rounds(root)) == TASKS, timeout=120)
    # Every task done, once; no worker ever past the bound.
    recorded = rounds(root)
    assert sorted(tag for tag, _, _ in recorded) == sorted(f"task-{n}" for n in range(TASKS))
    assert max(size for _, _, size in recorded) <= BOUND
    lives = {pid for _, pid, _ in recorded}
    assert len(lives) >= 3 * 3  # every slot's worker was recycled, several times over
    # The last workers of each slot may still be below the limit: every other one retired.
    pools.wait_for(lambda: status(root)["recycles_max_memory"] >= len(lives) - 3)
    fields = status(root)
    assert fields["pool_status"] == "running"
    assert fields["recycles_max_requests"] == 0
    # Each slot's resident memory is its worker's, as the kernel tells it.
    pools.wait_for(lambda: None not in status(root)["slot_rss_kib"])
    listed = status(root)["slot_rss_kib"]
    assert isinstance(listed, list)
    assert len(listed) == 3
    workers = sorted(worker.memory_info().rss for worker in supervisor.workers())
    for reported, measured in zip(sorted(listed), workers, strict=True):
        assert abs(reported * 1024 - measured) <= 8 * MIB
        assert 0 < reported * 1024 <= BOUND
    # And the Prometheus endpoint exports the same.
    samples = scrape(port)
    assert (
        samples['worker_recycles_total{cause="max-memory"}'] == status(root)["recycles_max_memory"]
    )
    assert samples['worker_recycles_total{cause="max-requests"}'] == 0.0
    assert 0 < samples["worker_resident_memory_max_bytes"] <= BOUND
    assert samples["worker_resident_memory_bytes"] >= samples["worker_resident_memory_max_bytes"]
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0, supervisor.stderr
    retired = [line for line in supervisor.logs if line["event"] == "worker.retired"]
    assert len(retired) >= len(lives) - 3
    assert {line["cause"] for line in retired} == {"max-memory"}
    assert not any(line["event"] == "pool.failed" for line in supervisor.logs)


def test_a_process_entry_past_the_limit_is_replaced_the_same_way(
    root: Path, supervisors: pools.Supervisors
) -> None:
    pools.write_root(root, workers=0, task_source=None, max_memory_mb=LIMIT_MB)
    with (root / "coretsia.toml").open("a") as config:
        config.write(
            textwrap.dedent("""
            [[process]]
            target = "memory_app:growing_entry"
            """)
        )
    pools.install_app(root, "memory_app.py")
    supervisor = supervisors(root)
    supervisor.wait_running()
    # Two recycles, and the third worker at work (pids of the namespace, if any: distinct).
    pools.wait_for(lambda: len({pid for _, pid, _ in rounds(root)}) >= 3, timeout=60)
    assert status(root)["recycles_max_memory"] == 2
    recorded = rounds(root)
    assert max(size for _, _, size in recorded) <= BOUND
    assert status(root)["pool_status"] == "running"
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0, supervisor.stderr
    retired = [line for line in supervisor.logs if line["event"] == "worker.retired"]
    assert {(line["slot"], line["cause"]) for line in retired} == {(0, "max-memory")}
    assert not any(line["event"] == "worker.replaced" for line in supervisor.logs)


def test_off_by_default_a_growing_worker_is_left_alone(
    root: Path, supervisors: pools.Supervisors
) -> None:
    """0 (the default) is off: a worker past 300 MiB serves on, recycled by nothing."""
    pools.write_root(root, workers=1, task_source="memory_app:growing", source_options={"tasks": 8})
    pools.install_app(root, "memory_app.py")
    supervisor = supervisors(root)
    supervisor.wait_running()
    pools.wait_for(lambda: len(rounds(root)) == 8)
    assert len({pid for _, pid, _ in rounds(root)}) == 1
    assert max(size for _, _, size in rounds(root)) > LIMIT_MB * MIB
    fields = status(root)
    assert (fields["recycles_max_memory"], fields["recycles_max_requests"]) == (0, 0)
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0, supervisor.stderr
