"""ControlClient against real sockets: discovery, liveness rules, answers and failures."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
from lock_holder import HoldLock
from stub_supervisor import SUMMARY, Session, StartStub

from coretsia.worker_protocol.catalogue import HealthReason, Reason
from coretsia.worker_protocol.client import DEFAULT_TIMEOUT_S, STOP_SLACK_S, ControlClient
from coretsia.worker_protocol.control import (
    ControlRequest,
    ErrorResponse,
    HealthResponse,
    StatusResponse,
    StoppedResponse,
    StopProgress,
    encode_response,
)
from coretsia.worker_protocol.exceptions import (
    WorkerCommunicationFailedError,
    WorkerLifecycleFailedError,
    WorkerNotRunningError,
)
from coretsia.worker_protocol.lifecycle import LOCATOR_PATH, LOCK_PATH
from coretsia.worker_protocol.locator import Locator, encode_locator
from coretsia.worker_protocol.vocabulary import (
    ControlCommand,
    ShutdownPhase,
    Transport,
)


def answer(session: Session, request: ControlRequest) -> None:
    """A well-behaved supervisor: one answer per request, progress before stopped."""
    if request.command is ControlCommand.STATUS:
        session.send(StatusResponse(SUMMARY))
    elif request.command is ControlCommand.HEALTH:
        session.send(HealthResponse(SUMMARY, healthy=True, reason=HealthReason.HEALTHY))
    else:
        for phase in ShutdownPhase:
            session.send(StopProgress(phase, 100))
        session.send(StoppedResponse())


class TestLiveness:
    def test_free_lock_is_not_running(self, runtime_root: Path) -> None:
        """No lock holder means not running, whatever stale files say."""
        (runtime_root / LOCATOR_PATH).write_text("stale")
        with pytest.raises(WorkerNotRunningError) as info:
            ControlClient(runtime_root).status()
        assert str(info.value) == "CORETSIA_WORKER_NOT_RUNNING: worker-not-running"
        assert info.value.exit_code == 3

    def test_probe_creates_nothing(self, runtime_root: Path) -> None:
        """Asking a root that never ran a pool leaves no lock file."""
        with pytest.raises(WorkerNotRunningError):
            ControlClient(runtime_root).health()
        assert not (runtime_root / LOCK_PATH).exists()

    def test_fifo_lock_does_not_block(self, runtime_root: Path) -> None:
        """A FIFO planted as the lock fails fast (exit 4) instead of hanging the probe."""
        os.mkfifo(runtime_root / LOCK_PATH, 0o600)
        with pytest.raises(WorkerCommunicationFailedError):
            ControlClient(runtime_root, timeout=1).status()

    def test_held_lock_without_locator(self, runtime_root: Path, hold_lock: HoldLock) -> None:
        """A held lock with no locator is a communication failure (exit 4)."""
        hold_lock(str(runtime_root / LOCK_PATH))
        with pytest.raises(WorkerCommunicationFailedError) as info:
            ControlClient(runtime_root).status()
        assert info.value.exit_code == 4


class TestAnswers:
    @pytest.mark.parametrize("transport", [Transport.UNIX, Transport.TCP])
    def test_status(self, supervisor: StartStub, transport: Transport) -> None:
        """status returns the live summary over either transport."""
        stub = supervisor(answer, transport)
        assert ControlClient(stub.root).status().summary == SUMMARY
        assert stub.requests == [ControlRequest(ControlCommand.STATUS)]
        assert stub.credential.encode() not in stub.received  # proved, never sent

    def test_health(self, supervisor: StartStub) -> None:
        """health returns the health answer."""
        stub = supervisor(answer)
        response = ControlClient(stub.root).health()
        assert response.healthy
        assert response.reason is HealthReason.HEALTHY

    def test_stop_reports_progress_then_returns(self, supervisor: StartStub) -> None:
        """stop hands every progress line to the callback and returns on stopped."""
        stub = supervisor(answer)
        seen: list[ShutdownPhase] = []
        ControlClient(stub.root).stop(lambda progress: seen.append(progress.phase))
        assert seen == list(ShutdownPhase)

    def test_error_answer_raises_its_exception(self, supervisor: StartStub) -> None:
        """An error answer becomes the typed exception of its reason."""

        def failing(session: Session, _request: ControlRequest) -> None:
            session.send(ErrorResponse(Reason.SHUTDOWN_FAILED))

        stub = supervisor(failing)
        with pytest.raises(WorkerLifecycleFailedError) as info:
            ControlClient(stub.root).stop()
        assert str(info.value) == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-shutdown-failed"


class TestStopDeadline:
    def test_stop_gives_up_after_the_published_budgets_plus_slack(
        self, supervisor: StartStub
    ) -> None:
        """A stop that never ends waits stop + 2 x force-kill (the locator's) plus the
        slack, no less and not much more, then reports a communication failure."""

        def never_stopped(session: Session, _request: ControlRequest) -> None:
            session.send(StopProgress(ShutdownPhase.COOPERATIVE, 1000))
            session.wait_closed()

        stub = supervisor(never_stopped)
        stub.write_locator(stop_timeout_ms=1000, force_kill_timeout_ms=250)
        bound = (1000 + 2 * 250) / 1000 + STOP_SLACK_S
        assert bound > DEFAULT_TIMEOUT_S + 1  # the test tells the two deadlines apart
        started = time.monotonic()
        with pytest.raises(WorkerCommunicationFailedError):
            ControlClient(stub.root).stop()
        assert bound <= time.monotonic() - started < bound + 2.0


class TestCommunicationFailures:
    def _fails(self, root: Path) -> None:
        with pytest.raises(WorkerCommunicationFailedError):
            ControlClient(root, timeout=2).status()

    def test_stale_credential_sends_no_command(self, supervisor: StartStub) -> None:
        """With a stale credential the server's proof fails: the client says no more."""
        stub = supervisor(answer)
        stub.write_locator(credential="f" * 64)
        self._fails(stub.root)
        assert stub.requests == []

    @pytest.mark.parametrize("transport", [Transport.UNIX, Transport.TCP])
    def test_server_without_the_credential(
        self, supervisor: StartStub, transport: Transport
    ) -> None:
        """A server that cannot prove itself is refused; it learns neither the credential
        nor the command."""
        stub = supervisor(answer, transport, proves_with="e" * 64)
        self._fails(stub.root)
        assert stub.requests == []
        assert b"status" not in stub.received
        assert stub.credential.encode() not in stub.received

    @pytest.mark.parametrize(
        "content",
        [b"", b"not json", b"{}", b'{"version": 2}', b"x" * 5000],
        ids=["empty", "garbage", "schema", "version", "oversized"],
    )
    def test_invalid_locator(self, supervisor: StartStub, content: bytes) -> None:
        """A malformed, schema-invalid or oversized locator is a communication failure."""
        stub = supervisor(answer)
        (stub.root / LOCATOR_PATH).write_bytes(content)
        self._fails(stub.root)

    def test_locator_with_loose_permissions(self, supervisor: StartStub) -> None:
        """A locator readable by others is not trusted."""
        stub = supervisor(answer)
        stub.write_locator(mode=0o644)
        self._fails(stub.root)

    def test_symlinked_locator(self, supervisor: StartStub, tmp_path: Path) -> None:
        """A locator that is a symlink is refused even if its target is valid."""
        stub = supervisor(answer)
        real = tmp_path / "elsewhere.json"
        os.replace(stub.root / LOCATOR_PATH, real)
        os.symlink(real, stub.root / LOCATOR_PATH)
        self._fails(stub.root)

    def test_fifo_locator_does_not_block(self, supervisor: StartStub) -> None:
        """A FIFO planted as the locator fails fast instead of hanging the probe."""
        stub = supervisor(answer)
        os.unlink(stub.root / LOCATOR_PATH)
        os.mkfifo(stub.root / LOCATOR_PATH, 0o600)
        self._fails(stub.root)

    def test_tcp_host_other_than_loopback_gets_no_credential(self, supervisor: StartStub) -> None:
        """A locator naming another host is refused before anything is sent."""
        stub = supervisor(answer, Transport.TCP)
        stub.write_locator(host="127.0.0.2")
        self._fails(stub.root)
        assert stub.requests == []

    def test_socket_outside_root_gets_no_credential(
        self, supervisor: StartStub, tmp_path: Path
    ) -> None:
        """A socket path that resolves outside the root is refused before connecting."""
        stub = supervisor(answer)
        outside = tmp_path / "out"
        outside.mkdir()
        # A live listener where the path leads: a client that followed it would connect.
        decoy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        decoy.bind(str(outside / "worker.sock"))
        decoy.listen(1)
        decoy.settimeout(0)
        os.symlink(outside, stub.root / "var/escape")
        stub.write_locator(path="var/escape/worker.sock")
        with decoy:
            self._fails(stub.root)
            with pytest.raises(BlockingIOError):
                decoy.accept()
        assert stub.requests == []

    def test_unreachable_endpoint(self, supervisor: StartStub) -> None:
        """A held lock whose endpoint is gone is a communication failure."""
        stub = supervisor(answer)
        stub.close()
        os.unlink(stub.root / "var/tmp/worker.sock")
        self._fails(stub.root)

    def test_silent_supervisor_is_bounded(self, supervisor: StartStub) -> None:
        """A supervisor that never answers makes the client give up at its deadline."""

        def silent(session: Session, _request: ControlRequest) -> None:
            session.wait_closed()

        stub = supervisor(silent)
        with pytest.raises(WorkerCommunicationFailedError):
            ControlClient(stub.root, timeout=0.3).status()

    @pytest.mark.parametrize(
        "line",
        [
            encode_response(StatusResponse(SUMMARY)),
            encode_response(StatusResponse(SUMMARY), lambda _body: "f" * 64),
            encode_response(StopProgress(ShutdownPhase.KILL, 1), lambda _body: "f" * 64),
            b"\xff\xfe nonsense\n",
        ],
        ids=["unsealed", "forged-mac", "forged-wrong-type", "garbage"],
    )
    def test_answer_the_server_did_not_seal(self, supervisor: StartStub, line: bytes) -> None:
        """After a good handshake, an answer without the server's MAC (a man in the
        middle's, say), or garbage, is a communication failure, not an answer."""

        def forging(session: Session, _request: ControlRequest) -> None:
            session.send_raw(line)

        stub = supervisor(forging)
        self._fails(stub.root)


class TestLongRoot:
    def test_socket_path_longer_than_sun_path(self, tmp_path: Path, hold_lock: HoldLock) -> None:
        """A root deep enough that the socket path overflows sun_path is still reachable."""
        root = tmp_path / ("d" * 60) / ("e" * 60)
        (root / "var/tmp").mkdir(parents=True)
        hold_lock(str(root / LOCK_PATH))
        dir_fd = os.open(root / "var/tmp", os.O_RDONLY)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(f"/proc/self/fd/{dir_fd}/worker.sock")
            listener.listen(1)
            os.chmod(root / "var/tmp/worker.sock", 0o600)
            assert len(str(root / "var/tmp/worker.sock")) > 108
            locator = Locator(
                transport=Transport.UNIX,
                credential="a" * 64,
                stop_timeout_ms=300,
                force_kill_timeout_ms=100,
                path="var/tmp/worker.sock",
            )
            (root / LOCATOR_PATH).write_bytes(encode_locator(locator))
            os.chmod(root / LOCATOR_PATH, 0o600)
            with pytest.raises(WorkerCommunicationFailedError):
                ControlClient(root, timeout=0.5).status()
            conn, _ = listener.accept()  # the client did connect and send its hello
            with conn:
                assert b'"type":"hello"' in conn.recv(4096)
        finally:
            listener.close()
            os.close(dir_fd)
