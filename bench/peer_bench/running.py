"""One side running N workers: launched, watched, stopped or killed, and always cleaned up.

``running(side, n)`` binds the readiness socket in the side's new root, launches the side
and waits for N datagrams; on the way out it asks for the graceful stop if nothing
stopped the side yet, then kills by pid whatever is left of it (its main process, every
descendant it ever had, every process working in its root, every worker that reported)
and fails if anything was left.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator

import psutil
from harness.processes import alive, processes_in
from pool_bench.pools import DEADLINE_S, log
from pool_bench.watch import Watch

from peer_bench.readiness import Readiness
from peer_bench.sides import Side

LINGER_S = 1.0
"""How long what is left of a side may take to exit on its own before it is killed: a
tree that contains itself (a guardian releasing its lock) is not a leftover."""


class LeftBehindError(RuntimeError):
    """A side left processes behind after its scenario: the run is not clean."""


class Running:
    """A launched side: its root, main process, launch time and readiness datagrams."""

    def __init__(self, side: Side, workers: int) -> None:
        self.side = side
        self.workers = workers
        self.root, argv = side.prepare(workers)
        self.ready = Readiness(self.root)
        self.output = (self.root / "side.out").open("wb")
        self.launched = time.monotonic()
        self.proc = subprocess.Popen(
            argv, cwd=self.root, stdin=subprocess.DEVNULL, stdout=self.output, stderr=self.output
        )
        self.seen: set[int] = {self.proc.pid}
        self.stopped = False

    def tree(self) -> list[psutil.Process]:
        """The main process and its descendants now (remembered for the cleanup)."""
        try:
            main = psutil.Process(self.proc.pid)
            found = [main, *main.children(recursive=True)]
        except psutil.Error:
            found = []
        self.seen.update(p.pid for p in found)
        return found

    def wait_ready(self) -> tuple[float, float]:
        """(launch to the first worker's datagram, launch to the N-th), seconds."""
        if not self.ready.wait_count(self.workers, time.monotonic() + DEADLINE_S):
            detail = (self.root / "side.out").read_text(errors="replace")[-2000:]
            raise RuntimeError(
                f"{self.side.name}: {len(self.ready.events)} of {self.workers} ready: {detail}"
            )
        self.tree()
        first = self.ready.events[0][0] - self.launched
        last = self.ready.events[self.workers - 1][0] - self.launched
        return first, last

    def stop(self) -> float:
        """The graceful stop: seconds from the request until every process of the tree ended."""
        watch = Watch([p.pid for p in self.tree()])
        try:
            started = time.monotonic()
            self.side.stop(self.root, self.proc)
            self.proc.wait(DEADLINE_S)
            left = watch.wait(started + DEADLINE_S)
            elapsed = time.monotonic() - started
        finally:
            watch.close()
        self.stopped = True
        if left:
            raise LeftBehindError(f"{self.side.name}: {len(left)} processes outlived the stop")
        return elapsed

    def kill(self) -> None:
        """SIGKILL the main process (the supervisor); nothing else."""
        self.tree()
        self.proc.kill()
        self.proc.wait()
        self.stopped = True

    def cleanup(self) -> list[int]:
        """Kill by pid whatever is left; close and remove everything; the pids killed."""
        if not self.stopped:
            with contextlib.suppress(Exception):
                self.stop()
        candidates = {*self.seen, *self.ready.pids(), *(p.pid for p in processes_in(self.root))}
        live = []
        for pid in sorted(candidates):
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(pid)
                if alive(proc) and (pid != self.proc.pid or self.proc.returncode is None):
                    live.append(proc)
        _, lingering = psutil.wait_procs(live, timeout=LINGER_S)
        # A zombie has exited; its parent (the machine's init, for an orphan) reaps it.
        left = [proc for proc in lingering if alive(proc)]
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(left, timeout=10)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        self.ready.close()
        self.output.close()
        survivors = [p.pid for p in left if alive(p)] + [p.pid for p in processes_in(self.root)]
        shutil.rmtree(self.root, ignore_errors=True)
        if survivors:
            raise LeftBehindError(f"{self.side.name}: could not kill {sorted(set(survivors))}")
        return [p.pid for p in left]


_LIVE: list[Running] = []


@contextlib.contextmanager
def running(side: Side, workers: int) -> Iterator[Running]:
    """``side`` with ``workers`` workers launched; stopped and cleaned up on the way out."""
    run = Running(side, workers)
    _LIVE.append(run)
    try:
        yield run
    finally:
        _LIVE.remove(run)
        killed = run.cleanup()
        if killed:
            log(f"{side.name}: killed {len(killed)} leftovers of {workers} workers by pid")


def cleanup_all() -> None:
    """Whatever still runs (an interrupted run): clean every live side up."""
    while _LIVE:
        with contextlib.suppress(LeftBehindError):
            _LIVE.pop().cleanup()
