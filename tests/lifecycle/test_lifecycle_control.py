"""Control security with a real supervisor: silent refusal, floods, leaks, isolation."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import psutil
from pools import cli

LOCATOR = "var/tmp/worker.lifecycle.json"


def _connect(root: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    try:
        sock.connect(str(root / "var/tmp/worker.sock"))
    except OSError:
        sock.close()
        raise
    return sock


def _request(command: str, credential: str) -> bytes:
    body = {"command": command, "credential": credential, "version": 1}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode() + b"\n"


class TestAuthentication:
    def test_wrong_credential_is_closed_silently(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """A wrong credential gets no answer: the connection is simply closed."""
        supervisors(root).wait_running()
        with _connect(root) as sock:
            sock.sendall(_request("status", "0" * 64))
            assert sock.recv(4096) == b""

    def test_missing_or_malformed_credential(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """Malformed requests are closed silently too, and the pool keeps serving."""
        supervisors(root).wait_running()
        for payload in (b'{"command":"stop","version":1}\n', b"garbage\n", b"\xff\n"):
            with _connect(root) as sock:
                sock.sendall(payload)
                assert sock.recv(4096) == b""
        assert cli(root, "health").returncode == 0

    def test_right_credential_over_a_raw_socket(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """The locator's credential is what the server accepts (the test is not vacuous)."""
        supervisors(root).wait_running()
        credential = json.loads((root / LOCATOR).read_text())["credential"]
        with _connect(root) as sock:
            sock.sendall(_request("status", credential))
            assert b'"type":"status"' in sock.recv(4096)


class TestRobustness:
    def test_status_answers_during_a_flood_of_idle_connections(
        self, root: Path, supervisors
    ) -> None:  # type: ignore[no-untyped-def]
        """Many idle connections cannot starve a real status request."""
        supervisors(root).wait_running()
        idle: list[socket.socket] = []
        try:
            idle.extend(_connect(root) for _ in range(100))
            result = cli(root, "status", timeout=20)
            assert result.returncode == 0, result.stderr
        finally:
            for sock in idle:
                sock.close()

    def test_client_disconnecting_mid_request(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """A client that vanishes halfway through a request disturbs nothing."""
        supervisors(root).wait_running()
        credential = json.loads((root / LOCATOR).read_text())["credential"]
        for cut in (1, 20, 60):
            with _connect(root) as sock:
                sock.sendall(_request("stop", credential)[:cut])
        assert cli(root, "health").returncode == 0

    def test_status_client_disconnect_does_not_stop(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """A status client that closes before reading its answer does not end the pool."""
        supervisors(root).wait_running()
        credential = json.loads((root / LOCATOR).read_text())["credential"]
        with _connect(root) as sock:
            sock.sendall(_request("status", credential))
        assert cli(root, "health").returncode == 0


class TestSecrets:
    def test_credential_appears_only_in_the_locator(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """The credential is in no output, state, argv, environment or worker descriptor."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        credential = json.loads((root / LOCATOR).read_text())["credential"]
        outputs = [cli(root, command, "--json") for command in ("status", "health")]
        assert credential not in (root / "var/tmp/worker.state.json").read_text()
        children = supervisor.tree()
        for proc in [psutil.Process(supervisor.proc.pid), *children]:
            assert credential not in " ".join(proc.cmdline())
            assert credential not in json.dumps(proc.environ())
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0
        texts = [supervisor.stdout, supervisor.stderr]
        texts += [o.stdout + o.stderr for o in outputs]
        for text in texts:
            assert credential not in text
            assert str(root) not in text  # no absolute path either

    def test_workers_hold_only_their_own_descriptors(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """A worker holds stdin/out/err, its channel, its stop pipe and the fence: no more."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        for worker in supervisor.workers():
            fds = sorted(int(fd) for fd in os.listdir(f"/proc/{worker.pid}/fd"))
            assert fds == [0, 1, 2, 3, 4, 5], fds
            targets = [os.readlink(f"/proc/{worker.pid}/fd/{fd}") for fd in fds]
            assert targets[3].startswith("socket:")
            assert targets[4].startswith("pipe:")
            assert targets[5] == str(root / "var/tmp/worker.generation.lock")
            assert str(root / "var/tmp/worker.lock") not in targets
