"""Failures while running and deaths in the tree: bounded, contained, cleaned up."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
from faults import fault_env
from pools import Supervisors, cli, lock_held, processes_in, wait_for, wait_gone, write_root

from coretsia.guardian._version import __version__
from coretsia.worker_protocol.framing import LineFramer, Need
from coretsia.worker_protocol.internal.guardian import (
    Hello,
    Locked,
    Spawn,
    Welcome,
    decode_guardian_frame,
    encode_guardian_frame,
)
from coretsia.worker_protocol.internal.proc_host import (
    HostHello,
    decode_proc_host_frame,
    encode_proc_host_frame,
)
from coretsia.worker_protocol.vocabulary import Containment, Driver

EVERY_CONTAINMENT = True
"""Each test runs at every containment level the machine offers (see the conftest)."""

STOP_MS = 1000
FORCE_KILL_MS = 500
SLACK_S = 3.0

# Each wrapper puts the inherited descriptors where the real process expects them (its
# argv names them), makes one inner function raise, then runs the real ``main()``.
_DESCRIPTORS = (
    "import os, sys\n"
    "for target, fd in enumerate(map(int, sys.argv[1:]), start=3): os.dup2(fd, target)\n"
    "def boom(*args, **kwargs): raise RuntimeError('unexpected at /secret/path')\n"
)
GUARDIAN_WRAPPER = _DESCRIPTORS + (
    "sys.argv[1:] = ['--channel-fd=3']\n"
    "from coretsia.guardian import runtime\n"
    "runtime.Generation.start_backend = boom\n"  # right after the lock is taken
    "from coretsia.guardian.__main__ import main\n"
    "main()\n"
)
PROC_HOST_WRAPPER = _DESCRIPTORS + (
    "del sys.argv[1:]\n"
    "from coretsia.proc_host import host\n"
    "host.Host._spawn = boom\n"  # the first spawn request, after the handshake
    "from coretsia.proc_host.__main__ import main\n"
    "main()\n"
)


class TestBoundedShutdown:
    def test_worker_ignoring_sigterm_is_killed_within_budget(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A never-ending task that ignores SIGTERM ends by SIGKILL within the budgets."""
        write_root(
            root,
            task_source="lifecycle_app:stubborn",
            stop_timeout_ms=STOP_MS,
            force_kill_timeout_ms=FORCE_KILL_MS,
        )
        supervisor = supervisors(root)
        supervisor.wait_running()
        workers = supervisor.workers()
        assert len(workers) == 2
        started = time.monotonic()
        stop = cli(root, "stop")
        elapsed = time.monotonic() - started
        assert stop.returncode == 0, stop.stderr
        assert elapsed < (STOP_MS + 2 * FORCE_KILL_MS) / 1000 + SLACK_S
        assert elapsed >= (STOP_MS + FORCE_KILL_MS) / 1000  # it really needed the kill phase
        assert supervisor.finish() == 8  # a forced stop
        assert not any(w.is_running() for w in workers)
        assert processes_in(root) == []


class TestSurvivor:
    def test_process_surviving_sigkill(self, root: Path, supervisors: Supervisors) -> None:
        """A process even SIGKILL cannot end: stop and start say worker-shutdown-failed at
        once, and the guardian keeps the lock until the process is gone, then frees it."""
        write_root(root, stop_timeout_ms=STOP_MS, force_kill_timeout_ms=FORCE_KILL_MS)
        survivor = root / "survivor"  # the guardian sees a live process while this exists
        survivor.touch()
        supervisor = supervisors(root, env=fault_env("survivor", str(survivor)))
        supervisor.wait_running()
        guardian = supervisor.guardian()
        budget = (STOP_MS + 2 * FORCE_KILL_MS) / 1000
        started = time.monotonic()
        stop = cli(root, "stop")
        elapsed = time.monotonic() - started
        assert (stop.returncode, stop.stdout) == (1, ""), stop.stderr
        assert stop.stderr == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-shutdown-failed\n"
        assert budget <= elapsed < budget + SLACK_S  # every phase ran, then the answer came
        assert lock_held(root)
        # Not finish(): the guardian, still alive, holds the supervisor's output pipes.
        assert supervisor.proc.wait(timeout=30) == 1
        assert lock_held(root)
        assert guardian.is_running()
        assert not (root / "var/tmp/worker.lifecycle.json").exists()
        assert not (root / "var/tmp/worker.sock").exists()
        survivor.unlink()
        wait_for(lambda: not lock_held(root), timeout=10)
        assert supervisor.finish() == 1
        assert supervisor.error == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-shutdown-failed"
        assert wait_gone(root) == []


class TestChildExit:
    def test_killed_worker_fails_the_pool(self, root: Path, supervisors: Supervisors) -> None:
        """A worker that dies while the pool runs fails the whole pool, which cleans up."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        supervisor.workers()[0].kill()
        assert supervisor.finish() == 1
        assert supervisor.error == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-child-exited"
        assert not lock_held(root)
        assert wait_gone(root) == []
        assert not (root / "var/tmp/worker.state.json").exists()


class TestContainment:
    def test_next_start_after_containment(self, root: Path, supervisors: Supervisors) -> None:
        """Once the guardian freed the lock, a new start succeeds."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        tree = supervisor.tree()
        supervisor.proc.send_signal(signal.SIGKILL)
        supervisor.finish()
        psutil.wait_procs(tree, timeout=10)
        again = supervisors(root)
        again.wait_running()
        assert cli(root, "stop").returncode == 0
        assert again.finish() == 0


def _run_wrapper(
    wrapper: str, root: Path, fds: list[int], ours: socket.socket, requests: list[bytes]
) -> tuple[int, bytes, bytes, list[bytes]]:
    """Run a wrapper with ``fds`` inherited and talk to it on its channel as its peer
    would: each request after the answer to the previous one. Returns its exit status,
    its output and every line it sent before it ended."""
    proc = subprocess.Popen(
        [sys.executable, "-c", wrapper, *map(str, fds)],
        pass_fds=fds,
        cwd=root,
        env=dict(os.environ, CORETSIA_WORKER_PARENT_PID=str(os.getpid())),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    for fd in fds:
        os.close(fd)
    ours.settimeout(30)
    framer = LineFramer()
    lines: list[bytes] = []
    for index, request in enumerate(requests):
        if index:
            while (frame := framer.next_frame()) is Need.DATA:
                framer.receive_data(ours.recv(4096))
            assert isinstance(frame, bytes), "the peer ended before it answered"
            lines.append(frame)
        ours.sendall(request)
    out, err = proc.communicate(timeout=30)
    while (frame := framer.next_frame()) is not Need.CLOSED:
        if frame is Need.DATA:
            framer.receive_data(ours.recv(4096))
        else:
            lines.append(frame)
    return proc.returncode, out, err, lines


class TestCatchAll:
    """The guardian's and the proc host's last line of defence, with a real exception."""

    def test_guardian_exits_1_silently(self, tmp_path: Path) -> None:
        """Anything unexpected in the guardian: exit 1, nothing on stdout or stderr (no
        traceback, no message), and the lock it had taken is free again."""
        (tmp_path / "var/tmp").mkdir(parents=True)
        ours, theirs = socket.socketpair()
        hello = Hello(
            peer_version=__version__,
            driver=Driver.FORK,
            stop_timeout_ms=STOP_MS,
            force_kill_timeout_ms=FORCE_KILL_MS,
            umask=0o022,
            log_json=True,
            containment=Containment.PROCESS,
            root_id="0" * 16,
        )
        with ours:
            code, out, err, lines = _run_wrapper(
                GUARDIAN_WRAPPER,
                tmp_path,
                [theirs.detach()],
                ours,
                [encode_guardian_frame(hello)],
            )
        assert (code, out, err) == (1, b"", b"")
        frames = [decode_guardian_frame(line) for line in lines]
        assert [type(frame) for frame in frames] == [Welcome, Locked]  # it got that far
        assert not lock_held(tmp_path)

    def test_proc_host_exits_1_silently(self, tmp_path: Path) -> None:
        """Anything unexpected in the proc host: exit 1, nothing on stdout or stderr."""
        ours, theirs = socket.socketpair()
        stop_read, stop_write = os.pipe()
        fence = os.open(tmp_path / "fence", os.O_RDONLY | os.O_CREAT, 0o600)
        hello = encode_proc_host_frame(HostHello(peer_version=__version__))
        spawn = encode_proc_host_frame(Spawn(slot=0, argv=(sys.executable, "-c", "pass")))
        try:
            with ours:
                code, out, err, lines = _run_wrapper(
                    PROC_HOST_WRAPPER,
                    tmp_path,
                    [theirs.detach(), stop_read, fence],
                    ours,
                    [hello, spawn],
                )
        finally:
            os.close(stop_write)
        assert (code, out, err) == (1, b"", b"")
        frames = [decode_proc_host_frame(line) for line in lines]
        assert [type(frame) for frame in frames] == [Welcome]  # it got that far
