"""The proc host process on its own: handshake, version refusal, descriptor hygiene."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from coretsia.proc_host._version import __version__
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.framing import LineFramer, Need
from coretsia.worker_protocol.internal.guardian import Exited, Refused, Spawn, Spawned, Welcome
from coretsia.worker_protocol.internal.proc_host import (
    HostHello,
    Quit,
    decode_proc_host_frame,
    encode_proc_host_frame,
)

# The guardian hands the proc host its channel, the stop pipe and the fence on 3, 4, 5.
SHIM = (
    "import os, sys\n"
    "for target, fd in zip((3, 4, 5), map(int, sys.argv[1:4])): os.dup2(fd, target)\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'coretsia.proc_host'])\n"
)


class ProcHost:
    """A real proc host talking to this test as its guardian would."""

    def __init__(self, root: Path) -> None:
        self.sock, theirs = socket.socketpair()
        self.sock.settimeout(30)
        self.stop_read, self.stop_write = os.pipe()
        fence = os.open(root / "fence", os.O_RDONLY | os.O_CREAT, 0o600)
        env = dict(os.environ, CORETSIA_WORKER_PARENT_PID=str(os.getpid()))
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
        self.framer = LineFramer()

    def receive(self) -> object:
        while True:
            frame = self.framer.next_frame()
            if isinstance(frame, bytes):
                return decode_proc_host_frame(frame)
            if frame is Need.CLOSED:
                return None
            self.framer.receive_data(self.sock.recv(4096))

    def finish(self) -> tuple[int, bytes, bytes]:
        self.sock.close()
        out, err = self.proc.communicate(timeout=30)
        os.close(self.stop_read)
        os.close(self.stop_write)
        return self.proc.returncode, out, err


@pytest.fixture
def host(tmp_path: Path):  # type: ignore[no-untyped-def]
    started = ProcHost(tmp_path)
    yield started
    if started.proc.poll() is None:
        started.proc.kill()
        started.finish()


def test_refuses_a_guardian_of_another_version(host: ProcHost) -> None:
    """A guardian of another version is refused, and the proc host exits silently."""
    host.sock.sendall(encode_proc_host_frame(HostHello(peer_version="0.0.0-other")))
    refused = host.receive()
    assert isinstance(refused, Refused)
    assert refused.reason is Reason.PEER_VERSION_MISMATCH
    assert host.finish() == (1, b"", b"")


def test_spawned_worker_gets_exactly_its_descriptors(host: ProcHost) -> None:
    """A worker of the proc host inherits 0-5 and nothing of the proc host's own."""
    host.sock.sendall(encode_proc_host_frame(HostHello(peer_version=__version__)))
    assert isinstance(host.receive(), Welcome)
    ours, theirs = socket.socketpair()
    probe = "import os; print(sorted(int(f) for f in os.listdir('/proc/self/fd')), flush=True)"
    spawn = Spawn(slot=0, argv=(sys.executable, "-c", probe))
    socket.send_fds(host.sock, [encode_proc_host_frame(spawn)], [theirs.fileno()])
    theirs.close()
    spawned = host.receive()
    assert isinstance(spawned, Spawned)
    assert spawned.pid != host.proc.pid
    exited = host.receive()  # the probe prints and exits on its own
    assert isinstance(exited, Exited)
    assert (exited.slot, exited.exit_kind) == (0, "exit-0")
    host.sock.sendall(encode_proc_host_frame(Quit()))
    code, out, err = host.finish()
    ours.close()
    # listdir's own directory descriptor is the one extra entry.
    listed = [int(x) for x in out.decode().strip().strip("[]").split(",")]
    assert listed[:6] == [0, 1, 2, 3, 4, 5]
    assert len(listed) == 7
    assert (code, err) == (0, b"")
