"""A worker's life: S3 recycle, the launcher alone ("boot"), S4 containment.

S3 and the launcher's spawn-to-ready are measured against the floor's minimal worker;
the launcher alone, with no supervisor or guardian, explains what S1-S3 spend in it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

from harness.processes import alive, processes_in
from harness.results import Results, median

from pool_bench.floors import floor_spawn
from pool_bench.pools import DEADLINE_S, PYTHON, STOP_N, log, running_pool
from pool_bench.watch import Watch, wait_lock_free


def _recycle_gaps(log_path: Path) -> list[float]:
    """Exit-to-ready gaps of the same slot, from the workers' own monotonic stamps."""
    events = [line.split() for line in log_path.read_text().splitlines()]
    out: dict[str, float] = {}
    gaps = []
    for event, slot, stamp in sorted(events, key=lambda e: float(e[2])):
        if event == "exit":
            out[slot] = float(stamp)
        elif slot in out:
            gaps.append(float(stamp) - out.pop(slot))
    return gaps


def recycle_gaps(recycles: int, **settings: object) -> list[float]:
    """One worker, no-op tasks, ``max_requests`` 50: ``recycles`` exit-to-ready gaps, seconds.

    ``settings`` are more ``[worker]`` keys (the peers' benchmark adds ``spawn``).
    """
    pool_settings = {"task_source": "bench_app:logged", "max_requests": 50, **settings}
    with running_pool(1, None, **pool_settings) as (pool, _):
        log_path = pool.root / "recycle.log"
        deadline = time.monotonic() + DEADLINE_S
        while log_path.read_text().count("exit") < recycles:
            if time.monotonic() > deadline or pool.proc is None or pool.proc.poll():
                raise RuntimeError("S3: the worker did not recycle")
            time.sleep(0.05)
        pool.stop()
        return _recycle_gaps(log_path)


def scenario_recycle(results: Results, runs: int, recycles: int = 12) -> None:
    """S3: one worker, no-op tasks, max_requests 50; the floor's spawn-to-ready."""
    spawn_runs: list[float] = []
    recycle_runs: list[float] = []
    for run in range(runs):
        spawn = median(floor_spawn(recycles)[0])
        gaps = recycle_gaps(recycles)
        spawn_runs.append(spawn)
        recycle_runs.append(median(gaps))
        log(f"S3 run {run + 1}: floor spawn {spawn * 1000:.1f} ms, recycle "
            f"{recycle_runs[-1] * 1000:.1f} ms ({len(gaps)} gaps)")  # fmt: skip
    results.data["floor_spawn"] = spawn_runs
    results.data["s3"] = recycle_runs


def scenario_containment(results: Results, runs: int) -> None:
    """S4: SIGKILL the supervisor of 64 workers; until the tree is gone and the lock free."""
    times: list[float] = []
    survivors: list[int] = []
    for run in range(runs):
        with running_pool(STOP_N) as (pool, _):
            tree = pool.supervisor.children(recursive=True)
            watch = Watch([p.pid for p in tree])
            try:
                assert pool.proc is not None
                started = time.monotonic()
                pool.proc.kill()
                left = watch.wait(started + 10)
                free = wait_lock_free(pool.root, started + 10)
                elapsed = time.monotonic() - started
            finally:
                watch.close()
            pool.proc.wait()
            still = [p.pid for p in tree if alive(p)] + [p.pid for p in processes_in(pool.root)]
            survivors.extend(sorted(set(left) | set(still)))
            if not free:
                results.notes.append("S4: the lock was still held 10 s after the SIGKILL")
            times.append(elapsed)
        log(f"S4 run {run + 1}: {elapsed:.3f}s, survivors {len(survivors)}")
    results.data["s4"] = times
    results.data["s4_survivors"] = survivors


def _published_pin(root: Path) -> str:
    """The pin the supervisor passed its workers (``<id>:<fingerprint>``), read back."""
    base = root / "var/generations"
    gen_id = (base / "current").read_text("ascii").strip()
    document = json.loads((base / gen_id / "generation.json").read_bytes())
    return f"{gen_id}:{document['fingerprint']}"


def _launcher_once(root: Path) -> tuple[float, float, float]:
    """Spawn one launcher by hand (its internal contract, no supervisor, no guardian).

    (spawn to its ``ready`` frame, stop-pipe close to reaped, its CPU seconds), seconds.
    """
    from coretsia.supervisor.daemon.slots import LAUNCHER_CODE  # the command workers run
    from coretsia.worker_protocol.parent_watch import PARENT_PID_ENV

    ours, theirs = socket.socketpair()
    stop_read, stop_write = os.pipe()
    env = {**os.environ, PARENT_PID_ENV: str(os.getpid())}
    argv = [
        PYTHON, "-c", LAUNCHER_CODE,
        "--coretsia-worker-artifact-root=var/generations", "--coretsia-worker-slot=0",
        f"--coretsia-worker-generation={_published_pin(root)}",
        f"--coretsia-worker-channel-fd={theirs.fileno()}", f"--coretsia-worker-stop-fd={stop_read}",
    ]  # fmt: skip
    try:
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=root, env=env, pass_fds=(theirs.fileno(), stop_read))
        theirs.close()
        os.close(stop_read)
        frame = ours.recv(4096)
        ready = time.monotonic() - started
        if b'"ready"' not in frame:
            proc.kill()
            proc.wait()
            raise RuntimeError(f"launcher did not report ready: {frame!r}")
        started = time.monotonic()
        os.close(stop_write)
        stop_write = -1
        _, status, usage = os.wait4(proc.pid, 0)
        stopped = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        return ready, stopped, usage.ru_utime + usage.ru_stime
    finally:
        if stop_write >= 0:
            os.close(stop_write)
        ours.close()
        theirs.close()


def scenario_boot(results: Results, runs: int, count: int = 20) -> None:
    """The launcher alone, against the floor's minimal worker: boot, stop, CPU."""
    ready_runs: list[float] = []
    stop_runs: list[float] = []
    cpu_runs: list[float] = []
    floor_runs: list[float] = []
    floor_cpu: list[float] = []
    with running_pool(1) as (pool, _):
        pool.stop()  # the published generation stays: a launcher can boot from it
        for _ in range(runs):
            times, cpu = floor_spawn(count)
            floor_runs.append(median(times))
            floor_cpu.append(cpu)
            samples = [_launcher_once(pool.root) for _ in range(count)]
            ready_runs.append(median([s[0] for s in samples]))
            stop_runs.append(median([s[1] for s in samples]))
            cpu_runs.append(median([s[2] for s in samples]))
    results.data["boot_floor_spawn"] = floor_runs
    results.data["boot_launcher_ready"] = ready_runs
    results.data["boot_launcher_stop"] = stop_runs
    results.data["boot_launcher_cpu"] = cpu_runs
    results.data["boot_floor_cpu"] = floor_cpu
    log(f"boot: launcher {ready_runs} (floor {floor_runs}), stop {stop_runs}, cpu {cpu_runs}")
