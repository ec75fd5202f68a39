"""The proc host on its own: handshake, version refusal, descriptor hygiene, pid safety,
imports without POSIX-only modules; and a guardian meeting a proc host of another version."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from peers import FramedPeer
from pools import Supervisors, lock_held, wait_for, write_root
from site_hooks import SIGNAL_LOG, SIGNAL_LOG_ENV, quick_and_slow_workers, signals_sent, site_env

from coretsia.proc_host._version import __version__
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.internal.guardian import Exited, Refused, Spawn, Spawned, Welcome
from coretsia.worker_protocol.internal.proc_host import (
    HostHello,
    ProcHostFrame,
    Quit,
    Signal,
    SignalName,
    decode_proc_host_frame,
    encode_proc_host_frame,
)

# The guardian hands the proc host its channel, the stop pipe and the fence on 3, 4, 5.
SHIM = (
    "import os, sys\n"
    "for target, fd in zip((3, 4, 5), map(int, sys.argv[1:4])): os.dup2(fd, target)\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'coretsia.proc_host'])\n"
)


class ProcHost(FramedPeer):
    """A real proc host talking to this test as its guardian would."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        ours, theirs = socket.socketpair()
        super().__init__(ours, encode_proc_host_frame, decode_proc_host_frame)
        self.stop_read, self.stop_write = os.pipe()
        fence = os.open(root / "fence", os.O_RDONLY | os.O_CREAT, 0o600)
        env = dict(os.environ if env is None else env, CORETSIA_WORKER_PARENT_PID=str(os.getpid()))
        fds = (theirs.fileno(), self.stop_read, fence)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SHIM, *map(str, fds)],
            pass_fds=fds,
            env=env,
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        theirs.close()
        os.close(fence)

    def send(self, frame: ProcHostFrame) -> None:
        self.sock.sendall(encode_proc_host_frame(frame))

    def handshake(self) -> None:
        self.send(HostHello(peer_version=__version__))
        assert isinstance(self.receive(), Welcome)

    def finish(self) -> tuple[int, bytes, bytes]:
        self.sock.close()
        out, err = self.proc.communicate(timeout=30)
        os.close(self.stop_read)
        os.close(self.stop_write)
        return self.proc.returncode, out, err


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[Callable[..., ProcHost]]:
    """Start proc hosts (optionally with an environment); each is killed at teardown."""
    started: list[ProcHost] = []

    def start(env: dict[str, str] | None = None) -> ProcHost:
        host = ProcHost(tmp_path, env)
        started.append(host)
        return host

    yield start
    for host in started:
        if host.proc.poll() is None:
            host.proc.kill()
            host.finish()


@pytest.fixture
def host(hosts: Callable[..., ProcHost]) -> ProcHost:
    return hosts()


def test_frames_read_with_the_hello_are_served(host: ProcHost) -> None:
    """A spawn that arrives in the same read as ``host-hello`` is not left waiting for
    more data: the proc host serves what it already holds before it waits."""
    ours, theirs = socket.socketpair()
    hello = encode_proc_host_frame(HostHello(peer_version=__version__))
    spawn = encode_proc_host_frame(Spawn(slot=0, argv=(sys.executable, "-c", "pass")))
    socket.send_fds(host.sock, [hello + spawn], [theirs.fileno()])
    theirs.close()
    assert isinstance(host.receive(), Welcome)
    spawned = host.receive()  # before the test sends anything more
    assert isinstance(spawned, Spawned)
    assert spawned.slot == 0
    host.send(Quit())
    assert host.finish()[0] == 0
    ours.close()


def test_received_descriptors_are_close_on_exec(host: ProcHost) -> None:
    """What a spawn carries is close-on-exec from the moment the proc host holds it
    (``MSG_CMSG_CLOEXEC`` reaches the kernel: ``socket.recv_fds`` would drop it), so a
    worker started in between never inherits another worker's channel."""
    host.handshake()
    ours, theirs = socket.socketpair()
    in_flight = f"socket:[{os.fstat(theirs.fileno()).st_ino}]"
    spawn = encode_proc_host_frame(Spawn(slot=0, argv=(sys.executable, "-c", "pass")))
    socket.send_fds(host.sock, [spawn[:1]], [theirs.fileno()])  # held: the frame is not whole
    theirs.close()

    def held() -> list[str]:
        fds = os.listdir(f"/proc/{host.proc.pid}/fd")
        return [fd for fd in fds if os.readlink(f"/proc/{host.proc.pid}/fd/{fd}") == in_flight]

    wait_for(lambda: len(held()) == 1)
    with open(f"/proc/{host.proc.pid}/fdinfo/{held()[0]}") as info:
        flags = next(int(line.split()[1], 8) for line in info if line.startswith("flags:"))
    assert flags & os.O_CLOEXEC
    host.sock.sendall(spawn[1:])
    assert isinstance(host.receive(), Spawned)
    host.send(Quit())
    assert host.finish()[0] == 0
    ours.close()


def test_refuses_a_guardian_of_another_version(host: ProcHost) -> None:
    """A guardian of another version is refused, and the proc host exits silently."""
    host.send(HostHello(peer_version="0.0.0-other"))
    refused = host.receive()
    assert isinstance(refused, Refused)
    assert refused.reason is Reason.PEER_VERSION_MISMATCH
    assert host.finish() == (1, b"", b"")


def test_spawned_worker_gets_exactly_its_descriptors(host: ProcHost) -> None:
    """A worker of the proc host inherits 0-5 and nothing of the proc host's own."""
    host.handshake()
    probe = "import os; print(sorted(int(f) for f in os.listdir('/proc/self/fd')), flush=True)"
    ours = host.spawn(0, probe)
    spawned = host.receive()
    assert isinstance(spawned, Spawned)
    assert spawned.pid != host.proc.pid
    exited = host.receive()  # the probe prints and exits on its own
    assert isinstance(exited, Exited)
    assert (exited.slot, exited.exit_kind) == (0, "exit-0")
    host.send(Quit())
    code, out, err = host.finish()
    ours.close()
    # listdir's own directory descriptor is the one extra entry.
    listed = [int(x) for x in out.decode().strip().strip("[]").split(",")]
    assert listed[:6] == [0, 1, 2, 3, 4, 5]
    assert len(listed) == 7
    assert (code, err) == (0, b"")


def test_never_signals_a_reaped_worker(hosts: Callable[..., ProcHost], tmp_path: Path) -> None:
    """A ``signal`` for a slot whose worker was reaped is a no-op; a live one is signalled.

    A reaped pid may belong to another process at any moment. Every ``kill`` and ``killpg``
    of the real proc host is recorded.
    """
    log = tmp_path / "signals.log"
    host = hosts(site_env(tmp_path / "site", SIGNAL_LOG, {**os.environ, SIGNAL_LOG_ENV: str(log)}))
    host.handshake()
    channels, pids, _ = quick_and_slow_workers(host)
    for slot in (0, 1):
        host.send(Signal(slot=slot, signal=SignalName.TERM))
    frame = host.receive()
    assert isinstance(frame, Exited)
    assert (frame.slot, frame.exit_kind) == (1, "signal-term")
    host.send(Quit())
    assert host.finish() == (0, b"", b"")
    for channel in channels:
        channel.close()
    assert signals_sent(log) == [(pids[1], signal.SIGTERM)]


WITHOUT_POSIX = """
import os, signal, socket, sys
for name in ("fcntl", "termios", "resource", "grp", "pwd"):
    sys.modules[name] = None  # what Windows lacks: an import of it raises ImportError
for owner, name in (
    (signal, "SIGCHLD"), (signal, "SIGHUP"), (signal, "SIGKILL"), (os, "killpg"),
    (os, "setsid"), (os, "posix_spawn"), (socket, "recv_fds"), (socket, "send_fds"),
):
    delattr(owner, name)
import coretsia.proc_host.__main__, coretsia.proc_host.host
print("imported")
"""


def test_imports_without_posix_only_modules() -> None:
    """The proc host imports where ``fcntl``, SIGCHLD, ``killpg`` or fd passing do not exist."""
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_POSIX],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "imported\n", "")


OTHER_VERSION = """
import sys
if "coretsia.proc_host" in sys.orig_argv:
    import coretsia.proc_host._version
    coretsia.proc_host._version.__version__ = "0.0.0-other"
    if {welcomes}:  # it accepts the guardian anyway, and answers with its own version
        import coretsia.worker_protocol.internal.handshake as handshake
        handshake.check_peer_version = lambda mine, peer: None
"""


@pytest.fixture
def pool_root(short_root: Path) -> Path:
    """A pool root of the proc driver."""
    return write_root(short_root, driver="proc")


@pytest.mark.parametrize("answer", ["refuses", "welcomes"])
def test_a_proc_host_of_another_version_fails_the_start(
    pool_root: Path, tmp_path: Path, supervisors: Supervisors, answer: str
) -> None:
    """The pool fails with ``worker-peer-version-mismatch``, whichever side notices.

    A real pool whose proc host believes it is another version: it refuses the guardian,
    or it welcomes it with its own version and the guardian refuses it.
    """
    code = OTHER_VERSION.format(welcomes=answer == "welcomes")
    supervisor = supervisors(pool_root, env=site_env(tmp_path / "site", code))
    assert supervisor.finish() == 1
    assert supervisor.error == "CORETSIA_WORKER_START_FAILED: worker-peer-version-mismatch"
    assert not lock_held(pool_root)
