"""The machine a run measures on: what it is, which commit, how loaded, who else is busy."""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
import time

import psutil

from harness import BENCH
from harness.bytecode import ensure_bytecode
from harness.results import Results


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


def begin(runs: int, wait_idle_s: float, compile_first: bool) -> tuple[Results, datetime.datetime]:
    """A run's start: (wait for idle,) the machine and its load, bytecode; its results.

    Returns the results to fill and the start time (``save`` names the files by it).
    """
    started = datetime.datetime.now(datetime.timezone.utc)
    busy = wait_idle(wait_idle_s) if wait_idle_s else busy_processes()
    results = Results(started.isoformat(timespec="seconds"), machine(), runs)
    results.data["load_average_before"] = load_average()
    if busy:
        results.notes.append(f"other test runs were busy at the start: {len(busy)} processes")
    if compile_first:
        compiled = ensure_bytecode()
        results.notes.append(f"bytecode: {compiled} modules had no fresh .pyc and were compiled")
    else:
        results.notes.append("bytecode: not checked (--no-compile)")
    return results, started
