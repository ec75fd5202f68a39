"""Throw-away roots and every process started in them, killed by pid whatever happens.

Every root is registered as it is made and every process as it starts, so ``cleanup``
(at the end, on failure, on SIGINT or SIGTERM) releases whatever is left; a release holds
those signals back so that a second one cannot cut it short.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
from harness import BENCH
from harness.processes import alive, descendants_named, processes_in

BIN = Path(sys.executable).parent
SUPERVISOR = str(BIN / "coretsia-supervisor")
LAUNCHER = "coretsia.supervisor.worker_side.launcher"
DEADLINE_S = 300.0
"""Bound on any single wait (a whole drain included)."""
POLL_S = 0.05


def log(message: str) -> None:
    print(f"[bench-queue {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


_ROOTS: list[Path] = []
"""Every throw-away root made here and not yet released."""
_STARTED: list[tuple[subprocess.Popen[bytes], Path]] = []
"""Every process started here and not yet reaped by ``kill``, with its root."""


def make_root(prefix: str = "cq-", *, app: bool = True) -> Path:
    """A short throw-away root (AF_UNIX paths must stay under about 100 bytes).

    Registered at once, so ``cleanup`` removes it whatever happens next; with ``app``, the
    handlers copied in as ``app.py`` and ``hueyapp.py`` and compiled.
    """
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    _ROOTS.append(root)
    try:
        if app:
            import py_compile

            shutil.copy(BENCH / "pipeline_app.py", root / "app.py")
            shutil.copy(BENCH / "pipeline_huey_app.py", root / "hueyapp.py")
            for name in ("app.py", "hueyapp.py"):
                py_compile.compile(str(root / name), doraise=True)
    except BaseException:
        release([root])
        raise
    return root


def spawn(argv: list[str], root: Path, out: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` in ``root`` (its own session), stdout and stderr to ``out``."""
    with out.open("ab") as stream:
        proc = subprocess.Popen(
            argv,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=stream,
            stderr=stream,
            start_new_session=True,
        )
    _STARTED.append((proc, root))
    return proc


def kill(proc: subprocess.Popen[bytes], root: Path) -> list[int]:
    """SIGKILL what is left of ``proc``'s tree and of ``root``; reap ``proc``; the pids.

    ``proc``'s own tree is walked only while ``proc`` is not reaped (``poll()`` is None):
    until then its pid cannot be reused, afterwards it may be anyone's. Whatever it left
    behind still runs in ``root`` (every process of a pool or consumer works there), and
    ``processes_in`` finds it. Once ``proc`` is reaped it is forgotten.
    """
    found = {p.pid: p for p in processes_in(root)}
    if proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            top = psutil.Process(proc.pid)
            for each in [top, *top.children(recursive=True)]:
                found.setdefault(each.pid, each)
    left = [p for p in found.values() if p.pid != os.getpid() and alive(p)]
    for each in left:
        with contextlib.suppress(psutil.Error):
            each.kill()
    # Not psutil.wait_procs: a worker whose guardian died with it stays a zombie until
    # init reaps it, and wait_procs waits for zombies to vanish; dead is enough here.
    deadline = time.monotonic() + 10
    while any(alive(p) for p in left) and time.monotonic() < deadline:
        time.sleep(0.01)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    if proc.returncode is not None and (proc, root) in _STARTED:
        _STARTED.remove((proc, root))
    return [p.pid for p in left]


@contextlib.contextmanager
def _uninterrupted() -> Iterator[None]:
    """SIGINT and SIGTERM held back meanwhile, delivered after: a second Ctrl-C (or TERM)
    must not cut a cleanup short."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def release(roots: list[Path]) -> None:
    """Kill every process started in ``roots`` and whatever else runs there; remove them."""
    with _uninterrupted():
        for proc, root in [entry for entry in _STARTED if entry[1] in roots]:
            killed = kill(proc, root)
            if killed:
                log(f"killed leftovers in {root}: {killed}")
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
            if root in _ROOTS:
                _ROOTS.remove(root)


def cleanup() -> None:
    """Release every root still held (and so every process still running in one)."""
    release(list(_ROOTS))


def wait_until(done: Callable[[], bool], deadline: float, what: str) -> None:
    """Poll ``done()`` until true; RuntimeError past ``deadline`` (monotonic)."""
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(POLL_S)


def stop_pool(root: Path, proc: subprocess.Popen[bytes]) -> int:
    """``coretsia-supervisor stop``, then wait for the supervisor; its exit status."""
    if proc.poll() is None:
        subprocess.run(
            [SUPERVISOR, "stop", "--root", str(root)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=DEADLINE_S,
            check=False,
        )
    return proc.wait(timeout=DEADLINE_S)


def workers_of(proc: subprocess.Popen[bytes]) -> list[int]:
    """The pids of a running pool's worker launchers (``proc``: its supervisor)."""
    if proc.poll() is not None:
        return []
    with contextlib.suppress(psutil.Error):
        return [p.pid for p in descendants_named(psutil.Process(proc.pid), LAUNCHER)]
    return []


def write_config(
    root: Path, workers: int, handler: str, max_requests: int, database: str | None = None
) -> None:
    options = [f'handler = "{handler}"']
    if database is not None:
        options.append(f'database = "{database}"')
    (root / "coretsia.toml").write_text(
        "[worker]\n"
        f"workers = {workers}\n"
        'task_type = "queue"\n'
        'task_source = "sqlite"\n'
        f"max_requests = {max_requests}\n"
        "start_timeout_ms = 120000\n"
        "stop_timeout_ms = 20000\n"
        "\n[worker.source_options]\n" + "\n".join(options) + "\n"
    )
