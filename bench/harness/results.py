"""One run's results: every sample, the notes, and the files they are written to."""

from __future__ import annotations

import datetime
import json
import statistics
from dataclasses import dataclass, field

from harness import BENCH

RESULTS = BENCH / "results"


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass
class Results:
    """What a run found; written as it is (these fields are the JSON file's keys)."""

    started: str
    machine: dict[str, object]
    runs: int
    data: dict[str, object] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def report(results: Results, title: str, body: list[str]) -> str:
    """A run's markdown: title, machine, runs and load, ``body`` (its tables), its notes."""
    machine = results.machine
    return "\n".join(
        [
            f"# {title}, {results.started}",
            "",
            f"Machine: {machine['cores']} cores, {machine['memory_gib']} GiB,"
            f" {machine['implementation']} {machine['python']}, {machine['platform']};"
            f" commit {machine['commit']}.",
            f"Runs per scenario: {results.runs} (medians). Load average before:"
            f" {results.data['load_average_before']}, after: {results.data['load_average_after']}."
            f" Wall time: {results.data['wall_s']:.0f} s.",
            "",
            *body,
            "",
            *(f"- {note}" for note in results.notes),
        ]
    )


def save(results: Results, text: str, started: datetime.datetime, prefix: str = "") -> None:
    """Write ``bench/results/<prefix><stamp>.json`` (every sample) and ``.md``; print."""
    RESULTS.mkdir(exist_ok=True)
    stamp = prefix + started.strftime("%Y%m%dT%H%M%SZ")
    (RESULTS / f"{stamp}.json").write_text(json.dumps(results.__dict__, indent=2) + "\n")
    (RESULTS / f"{stamp}.md").write_text(text + "\n")
    print(text)
