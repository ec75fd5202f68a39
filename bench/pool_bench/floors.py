"""The floor's runs: ``floor.py`` (bare Python, nothing of Coretsia) driven and timed.

Every floor process registers itself as it starts, so ``cleanup_floors`` kills whatever
of it still runs, whatever happened meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time

import psutil
from harness import BENCH

from pool_bench.pools import DEADLINE_S, PYTHON
from pool_bench.watch import Watch

_FLOORS: list[subprocess.Popen[bytes]] = []


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


def cleanup_floors() -> None:
    while _FLOORS:
        kill_floor(_FLOORS[0])
