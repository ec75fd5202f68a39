"""Two of issue 25's budgets, one tree against another, interleaved (``docs/performance.md``).

* ``status`` as a process against a live pool, over a bare ``python -c pass``
  (budget: at most 4 times);
* an exec'd worker's CPU up to its application's import (``time.process_time()`` at the
  top of the task source's module), over a bare interpreter's at its first statement
  (budget: at most 15 ms more); with its spawn to ``ready``, its stop to reaped, its
  CPU per life and its RSS at ``ready``;
* with ``--pools R``: S1 and S2 at N = 64 and S3 (``bench/pool_bench``'s own pools and
  scenarios), R rounds of one pool per tree, and their per-round differences.

The other tree (``--other``) is a directory holding ``packages/*/src`` (a ``git archive``
of the commit to compare with); its code runs through ``PYTHONPATH``, this environment's
(the work tree) without. One pool of this tree answers both ``status`` commands (the
wire format is the same). Every sample of every variant alternates, in a shuffled order
per round, so that both see the same load::

    $ git archive <base> packages | tar -x -C /tmp/base
    $ .venv/bin/python -m compileall -q /tmp/base/packages packages  # bytecode first
    $ .venv/bin/python bench/plain_budgets.py --other /tmp/base --rounds 40 --pools 12
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

PYTHON = sys.executable
CONSOLE = str(Path(PYTHON).parent / "coretsia-supervisor")
APP = """\
import os, time
_CPU = time.process_time()  # first: the worker's CPU up to its application's import
if "BUDGET_CPU_FILE" in os.environ:  # the pool's own worker has none
    with open(os.environ["BUDGET_CPU_FILE"], "w") as f:
        f.write(repr(_CPU))
from bench_app import idle
"""
PARTS = ("to app", "ready", "stop", "life cpu", "rss")
BARE = "import time; print(repr(time.process_time()))"


def _env(src: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if src:
        env["PYTHONPATH"] = src
    return env


def _pin(root: Path) -> str:
    base = root / "var/generations"
    gen_id = (base / "current").read_text("ascii").strip()
    document = json.loads((base / gen_id / "generation.json").read_bytes())
    return f"{gen_id}:{document['fingerprint']}"


def _rss(pid: int) -> float:
    """Resident set size (``VmRSS``), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _launcher(root: Path, src: str | None) -> tuple[float, float, float, float, float]:
    """(CPU to the application's import, spawn to ready, stop to reaped, CPU per life,
    RSS at ready)."""
    from coretsia.supervisor.daemon.slots import LAUNCHER_CODE
    from coretsia.worker_protocol.parent_watch import PARENT_PID_ENV

    ours, theirs = socket.socketpair()
    stop_read, stop_write = os.pipe()
    cpu_file = root / "cpu.txt"
    env = {**_env(src), PARENT_PID_ENV: str(os.getpid()), "BUDGET_CPU_FILE": str(cpu_file)}
    argv = [
        PYTHON, "-c", LAUNCHER_CODE,
        "--coretsia-worker-artifact-root=var/generations", "--coretsia-worker-slot=0",
        f"--coretsia-worker-generation={_pin(root)}",
        f"--coretsia-worker-channel-fd={theirs.fileno()}", f"--coretsia-worker-stop-fd={stop_read}",
    ]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=root, env=env, pass_fds=(theirs.fileno(), stop_read))
    theirs.close()
    os.close(stop_read)
    ours.settimeout(30)
    frame = ours.recv(4096)
    ready = time.monotonic() - started
    if b'"ready"' not in frame:
        proc.kill()
        raise RuntimeError(f"no ready: {frame!r}")
    rss = _rss(proc.pid)
    started = time.monotonic()
    os.close(stop_write)
    _, status, usage = os.wait4(proc.pid, 0)
    stopped = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    ours.close()
    if proc.returncode != 0:
        raise RuntimeError(f"launcher exited {proc.returncode}")
    return float(cpu_file.read_text()), ready, stopped, usage.ru_utime + usage.ru_stime, rss


def _bare_cpu() -> float:
    out = subprocess.run([PYTHON, "-c", BARE], capture_output=True, check=True, env=_env(None))
    return float(out.stdout)


def _timed(argv: list[str], src: str | None) -> float:
    started = time.monotonic()
    subprocess.run(argv, capture_output=True, check=True, env=_env(src))
    return time.monotonic() - started


def _summary(name: str, samples: list[float]) -> str:
    scale, unit = (1, "MiB") if name.endswith("rss") else (1000, "ms")
    q = statistics.quantiles(samples, n=4)
    return (
        f"{name}: median {statistics.median(samples) * scale:.2f} {unit} "
        f"(quartiles {q[0] * scale:.2f}-{q[2] * scale:.2f}, n={len(samples)})"
    )


def _pool_rounds(variants: dict[str, str | None], rounds: int) -> None:
    """S1 and S2 (N = 64) and S3 per tree, alternating in a shuffled order per round."""
    from harness.results import median
    from pool_bench.lifecycle import recycle_gaps
    from pool_bench.pools import STOP_N, running_pool

    samples: dict[str, list[float]] = {}
    try:
        for _ in range(rounds):
            order = list(variants.items())
            random.shuffle(order)
            for name, src in order:
                os.environ.pop("PYTHONPATH", None)  # the pools' processes inherit it
                if src:
                    os.environ["PYTHONPATH"] = src
                with running_pool(STOP_N) as (pool, started):
                    stopped, left = pool.stop()
                if left:
                    raise RuntimeError(f"survivors after a stop: {left}")
                samples.setdefault(f"S1 N=64 {name}", []).append(started)
                samples.setdefault(f"S2 N=64 {name}", []).append(stopped)
                samples.setdefault(f"S3 {name}", []).append(median(recycle_gaps(12)))
    finally:
        os.environ.pop("PYTHONPATH", None)
    for key in sorted(samples):
        print(_summary(key, samples[key]))
    for scenario in ("S1 N=64", "S2 N=64", "S3"):
        this, other = samples[f"{scenario} this"], samples[f"{scenario} other"]
        diffs = [a - b for a, b in zip(this, other, strict=True)]
        print(_summary(f"{scenario} this - other, paired", diffs)
              + f", this slower in {sum(d > 0 for d in diffs)}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, required=True, help="a tree with packages/*/src")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--pools", type=int, default=0, help="rounds of S1, S2 and S3")
    args = parser.parse_args()
    other = ":".join(str(p) for p in sorted(args.other.glob("packages/*/src")))
    variants = {"this": None, "other": other}
    root = Path(tempfile.mkdtemp(prefix="cw-budgets-"))
    (root / "coretsia.toml").write_text('[worker]\nworkers = 1\ntask_source = "budget_app:idle"\n')
    (root / "budget_app.py").write_text(APP)
    shutil.copy(Path(__file__).parent / "bench_app.py", root / "bench_app.py")
    pool = subprocess.Popen(
        [CONSOLE, "start", "--root", str(root)], stdout=subprocess.PIPE, env=_env(None)
    )
    try:
        assert pool.stdout is not None
        if not pool.stdout.readline().startswith(b"running:"):
            raise RuntimeError("the pool did not start")
        status = [CONSOLE, "status", "--root", str(root)]
        samples: dict[str, list[float]] = {}
        for src in variants.values():  # warm-up: page cache, bytecode
            _timed(status, src)
            _launcher(root, src)
        for _ in range(args.rounds):
            jobs: list[tuple[str, Callable[[], float | tuple[float, ...]]]] = [
                ("pass", partial(_timed, [PYTHON, "-c", "pass"], None)),
                ("bare cpu", _bare_cpu),
            ]
            for name, src in variants.items():
                jobs.append((f"status {name}", partial(_timed, status, src)))
                jobs.append((f"launcher {name}", partial(_launcher, root, src)))
            random.shuffle(jobs)
            for key, job in jobs:
                result = job()
                if isinstance(result, tuple):
                    for part, value in zip(PARTS, result, strict=True):
                        samples.setdefault(f"{key} {part}", []).append(value)
                else:
                    samples.setdefault(key, []).append(result)
        for key in sorted(samples):
            print(_summary(key, samples[key]))
        bare = statistics.median(samples["pass"])
        bare_cpu = statistics.median(samples["bare cpu"])
        for name in variants:
            ratio = statistics.median(samples[f"status {name}"]) / bare
            extra = statistics.median(samples[f"launcher {name} to app"]) - bare_cpu
            print(f"{name}: status / pass {ratio:.2f}; CPU to the app's import "
                  f"bare + {extra * 1000:.1f} ms")  # fmt: skip
        print(f"load average after: {os.getloadavg()}")
    finally:
        subprocess.run([CONSOLE, "stop", "--root", str(root)], capture_output=True, check=False)
        try:
            pool.wait(30)
        except subprocess.TimeoutExpired:
            pool.kill()
            pool.wait()
        shutil.rmtree(root, ignore_errors=True)
    if args.pools:
        _pool_rounds(variants, args.pools)


if __name__ == "__main__":
    main()
