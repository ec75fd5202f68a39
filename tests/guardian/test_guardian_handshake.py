"""The guardian process on its own: handshake, version refusal, lock refusal, silence."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from coretsia.guardian._version import __version__
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.framing import LineFramer, Need
from coretsia.worker_protocol.internal.guardian import (
    Hello,
    Locked,
    Refused,
    Shutdown,
    Welcome,
    decode_guardian_frame,
    encode_guardian_frame,
)
from coretsia.worker_protocol.vocabulary import Driver


class Guardian:
    """A real guardian process talking to this test over a socketpair."""

    def __init__(self, root: Path) -> None:
        ours, theirs = socket.socketpair()
        self.sock = ours
        self.sock.settimeout(30)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "coretsia.guardian", f"--channel-fd={theirs.fileno()}"],
            pass_fds=(theirs.fileno(),),
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        theirs.close()
        self.framer = LineFramer()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self) -> object:
        while True:
            frame = self.framer.next_frame()
            if isinstance(frame, bytes):
                return decode_guardian_frame(frame)
            if frame is Need.CLOSED:
                return None
            self.framer.receive_data(self.sock.recv(4096))

    def finish(self) -> tuple[int, bytes, bytes]:
        self.sock.close()
        out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, out, err


def hello(version: str = __version__) -> bytes:
    return encode_guardian_frame(
        Hello(
            peer_version=version,
            driver=Driver.FORK,
            stop_timeout_ms=1000,
            force_kill_timeout_ms=500,
            umask=0o022,
            log_json=False,
        )
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "var/tmp").mkdir(parents=True)
    return tmp_path


class TestHandshake:
    def test_welcome_lock_and_clean_exit(self, root: Path) -> None:
        """A matching hello is welcomed, the lock claimed, and shutdown releases it."""
        guardian = Guardian(root)
        guardian.send(hello())
        welcome = guardian.receive()
        assert isinstance(welcome, Welcome)
        assert welcome.pid == guardian.proc.pid
        assert isinstance(guardian.receive(), Locked)
        guardian.send(encode_guardian_frame(Shutdown()))
        # Nothing but its own log line (text: the hello asked for no JSON).
        assert guardian.finish() == (0, b"", b"coretsia: guardian.released\n")

    def test_peer_of_another_version_is_refused(self, root: Path) -> None:
        """A supervisor of another version is refused with a clear token."""
        guardian = Guardian(root)
        guardian.send(hello("0.0.0-other"))
        refused = guardian.receive()
        assert isinstance(refused, Refused)
        assert refused.reason is Reason.PEER_VERSION_MISMATCH
        assert guardian.finish() == (1, b"", b"")
        assert not (root / "var/tmp/worker.lock").exists()

    def test_lock_already_held_is_refused(self, root: Path, hold_lock) -> None:  # type: ignore[no-untyped-def]
        """A second guardian for the same root is refused: already running."""
        hold_lock(str(root / "var/tmp/worker.lock"))
        guardian = Guardian(root)
        guardian.send(hello())
        assert isinstance(guardian.receive(), Welcome)
        refused = guardian.receive()
        assert isinstance(refused, Refused)
        assert refused.reason is Reason.ALREADY_RUNNING
        assert guardian.finish() == (1, b"", b"")

    def test_garbage_instead_of_hello(self, root: Path) -> None:
        """A peer that speaks garbage gets nothing and no traceback is printed."""
        guardian = Guardian(root)
        guardian.send(b'{"type":"hello","version":1,"secret":"s3cr3t"}\n')
        assert guardian.receive() is None
        assert guardian.finish() == (1, b"", b"")

    def test_bad_arguments(self, root: Path) -> None:
        """Without a valid --channel-fd the guardian exits 2, silently."""
        result = subprocess.run(
            [sys.executable, "-m", "coretsia.guardian", "--channel-fd=x"],
            capture_output=True,
            cwd=root,
            timeout=30,
            check=False,
        )
        assert (result.returncode, result.stdout, result.stderr) == (2, b"", b"")

    def test_channel_loss_before_hello(self, root: Path) -> None:
        """A supervisor that dies before its hello leaves a guardian that just exits."""
        guardian = Guardian(root)
        code, out, err = guardian.finish()
        assert (code, out, err) == (1, b"", b"")
        assert os.listdir(root / "var/tmp") == []
