"""What the handlers wrote: one record per task run to its end, the probed pragmas.

And the throughput figures of one drain, computed from those records alone.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SYNC = {"0": "OFF", "1": "NORMAL", "2": "FULL", "3": "EXTRA"}
"""``PRAGMA synchronous`` values by number (what a connection reports)."""


@dataclass(frozen=True)
class Record:
    payload: str
    pid: int
    start: float
    end: float


def line_count(path: Path) -> int:
    try:
        with path.open("rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def read_records(path: Path) -> list[Record]:
    records = []
    if path.exists():
        for line in path.read_text().splitlines():
            payload, pid, start, end = line.split()
            records.append(Record(payload, int(pid), float(start), float(end)))
    return records


def probes(root: Path) -> list[str]:
    """Distinct ``journal_mode synchronous`` pairs the workers' queue connections used.

    RuntimeError when a worker could not find its connection (``pipeline_app._probe``
    reads private names of the ``sqlite`` source): fix the probe, do not report blind.
    """
    path = root / "probe.log"
    if not path.exists():
        raise RuntimeError(f"no worker wrote {path}: pipeline_app._probe did not run")
    pairs = {" ".join(line.split()[1:]) for line in path.read_text().splitlines()}
    failed = sorted(p for p in pairs if p.startswith("unprobed"))
    if failed:
        raise RuntimeError(f"a worker's queue connection could not be probed: {failed}")
    return sorted(pairs)


def shares(records: list[Record], workers: int) -> list[int]:
    """Tasks per process, largest first, padded with zeros to ``workers`` processes.

    A worker that never got a task is part of the spread: it counts as a zero.
    """
    counts = sorted(Counter(r.pid for r in records).values(), reverse=True)
    return counts + [0] * (workers - len(counts))


def cv(counts: list[int]) -> float:
    """Coefficient of variation: population standard deviation over the mean."""
    mean = statistics.fmean(counts) if counts else 0.0
    return statistics.pstdev(counts) / mean if mean else float("nan")


def measure(records: list[Record], tasks: int, workers: int, launched: float) -> dict[str, Any]:
    """Throughput figures of one drain, from the handlers' own records.

    ``cv_all_started`` is the spread over the records that started once every worker had
    taken its first task (the boot stagger excluded); NaN if some worker never took one.
    """
    first = min(r.start for r in records)
    window = max(r.end for r in records) - first
    per_process = shares(records, workers)
    firsts: dict[int, float] = {}
    for r in records:
        firsts[r.pid] = min(r.start, firsts.get(r.pid, r.start))
    all_started = float("nan")
    if len(firsts) >= workers:
        since = max(firsts.values())
        all_started = cv(shares([r for r in records if r.start >= since], workers))
    distinct = len({r.payload for r in records})
    return {
        "tasks": tasks,
        "window_s": window,
        "tasks_per_s": len(records) / window if window > 0 else float("nan"),
        "launch_to_first_s": first - launched,
        "processes": len(firsts),
        "per_process": per_process,
        "cv": cv(per_process),
        "cv_all_started": all_started,
        "lost": tasks - distinct,
        "ran_twice": len(records) - distinct,
    }
