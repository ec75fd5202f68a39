"""Control security with a real supervisor: silent refusal, floods, leaks, isolation.

The raw connections here speak the handshake themselves (a real
:class:`ClientConversation` with the locator's credential, or a rogue client that seals
its request with a MAC it made up), so each test controls every byte.
"""

from __future__ import annotations

import json
import os
import select
import socket
import threading
import time
from pathlib import Path

import psutil
from conversation_pairs import forged
from pools import Supervisor, Supervisors, cli, processes_in, write_root

from coretsia.supervisor.daemon.control_server import MAX_PENDING, READ_DEADLINE_S
from coretsia.supervisor.daemon.refusals import INTERVAL_S
from coretsia.worker_protocol.control import Challenge, ControlRequest, Hello, encode_request
from coretsia.worker_protocol.control_conversation import ClientConversation
from coretsia.worker_protocol.framing import MAX_FRAME_BYTES
from coretsia.worker_protocol.locator import decode_locator
from coretsia.worker_protocol.vocabulary import ControlCommand

LOCATOR = "var/tmp/worker.lifecycle.json"
SLACK_S = 2.0


def _connect(root: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    try:
        sock.connect(str(root / "var/tmp/worker.sock"))
    except OSError:
        sock.close()
        raise
    return sock


def _readline(sock: socket.socket) -> bytes:
    """One line, unbuffered: nothing beyond it is taken off the socket."""
    with sock.makefile("rb", buffering=0) as stream:
        return stream.readline()


def _handshake(sock: socket.socket, root: Path) -> ClientConversation:
    """hello and the server's proof, with the locator's credential: ready to ask."""
    locator = decode_locator((root / LOCATOR).read_bytes())
    conversation = ClientConversation(locator.credential, locator.transport, locator.address)
    sock.sendall(conversation.hello())
    conversation.receive_data(_readline(sock))
    assert isinstance(conversation.next_event(), Challenge)
    return conversation


def _ask(sock: socket.socket, root: Path, command: ControlCommand) -> None:
    """The handshake, then ``command``, sealed; the answers are left on the socket."""
    sock.sendall(_handshake(sock, root).send(ControlRequest(command)))


def _ask_as_rogue(sock: socket.socket) -> None:
    """A client without the credential: it skips checking the server's proof and seals
    its request with a MAC it made up."""
    sock.sendall(encode_request(Hello("0" * 64)))
    assert b'"type":"challenge"' in _readline(sock)
    sock.sendall(forged(ControlRequest(ControlCommand.STATUS), encode_request))


def _version_1_request(command: str, credential: str) -> bytes:
    """What a client from before the handshake sends: the credential, in clear."""
    body = {"command": command, "credential": credential, "version": 1}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def _refused(supervisor: Supervisor) -> list[tuple[str, int]]:
    """The ``control.refused`` lines of a finished supervisor, as (cause, count)."""
    lines = [e for e in supervisor.logs if e["event"] == "control.refused"]
    return [(str(e["cause"]), int(str(e["count"]))) for e in lines]


def _answers(sock: socket.socket, count: int | None = None) -> list[tuple[str, str | None]]:
    """The next ``count`` answer lines (all of them, up to the close, if None), each as
    its type and phase. Unbuffered: nothing beyond those lines is taken off the socket."""
    answers: list[tuple[str, str | None]] = []
    with sock.makefile("rb", buffering=0) as stream:
        while count is None or len(answers) < count:
            line = stream.readline()
            if not line:
                break
            answer = json.loads(line)
            answers.append((answer["type"], answer.get("phase")))
    return answers


def _send_until_dropped(sock: socket.socket, limit: int) -> int | None:
    """Send bytes without a newline until the peer drops us: how many went, or None if
    ``limit`` bytes went without that happening."""
    chunk = b"x" * 4096
    sent = 0
    try:
        while sent < limit:
            sent += sock.send(chunk)
    except (BrokenPipeError, ConnectionResetError):
        return sent
    return None


class TestAuthentication:
    def test_wrong_proof_is_closed_silently(self, root: Path, supervisors: Supervisors) -> None:
        """A client that cannot prove itself gets no answer: the connection is closed."""
        supervisors(root).wait_running()
        with _connect(root) as sock:
            _ask_as_rogue(sock)
            assert sock.recv(4096) == b""

    def test_malformed_frames(self, root: Path, supervisors: Supervisors) -> None:
        """Malformed frames are closed silently too, and the pool keeps serving."""
        supervisors(root).wait_running()
        for payload in (b'{"command":"stop","version":2}\n', b"garbage\n", b"\xff\n"):
            with _connect(root) as sock:
                sock.sendall(payload)
                assert sock.recv(4096) == b""
        assert cli(root, "health").returncode == 0

    def test_right_credential_over_a_raw_socket(self, root: Path, supervisors: Supervisors) -> None:
        """The locator's credential is what the server accepts (the test is not vacuous)."""
        supervisors(root).wait_running()
        with _connect(root) as sock:
            _ask(sock, root, ControlCommand.STATUS)
            assert b'"type":"status"' in sock.recv(4096)

    def test_version_1_request_is_refused_with_its_own_cause(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """An old client's request line, right credential and all, gets a silent close
        and one ``control.refused`` with ``cause=version``."""
        supervisor = supervisors(root, "--log-format", "json")
        supervisor.wait_running()
        credential = json.loads((root / LOCATOR).read_text())["credential"]
        with _connect(root) as sock:
            sock.sendall(_version_1_request("status", credential))
            assert sock.recv(4096) == b""
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0
        assert _refused(supervisor) == [("version", 1)]


class TestRobustness:
    def test_idle_connection_is_closed_at_the_read_deadline(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A connection that never sends its request is closed after the read deadline."""
        supervisors(root).wait_running()
        with _connect(root) as sock:
            connected = time.monotonic()
            assert sock.recv(1) == b""
            waited = time.monotonic() - connected
        assert READ_DEADLINE_S * 0.9 <= waited < READ_DEADLINE_S + SLACK_S

    def test_connections_beyond_the_cap_drop_the_oldest(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """At the cap of waiting connections a new one drops the oldest at once, long
        before its read deadline; the others keep waiting, and status still answers."""
        supervisors(root).wait_running()
        extra = 4
        conns: list[socket.socket] = []
        try:
            opened = time.monotonic()
            conns.extend(_connect(root) for _ in range(MAX_PENDING + extra))
            closed: set[int] = set()
            deadline = opened + READ_DEADLINE_S * 0.75
            while len(closed) < extra and time.monotonic() < deadline:
                waiting = [conn for i, conn in enumerate(conns) if i not in closed]
                readable, _, _ = select.select(waiting, [], [], deadline - time.monotonic())
                for conn in readable:
                    assert conn.recv(1) == b""
                    closed.add(conns.index(conn))
            assert len(closed) == extra, "no connection was dropped at the cap"
            assert max(closed) < 2 * extra, closed  # the oldest ones (give or take a few)
            waiting = [conn for i, conn in enumerate(conns) if i not in closed]
            assert select.select(waiting, [], [], 0)[0] == []
            assert time.monotonic() - opened < READ_DEADLINE_S  # so none was due yet
            result = cli(root, "status", timeout=20)  # its connection drops one more
            assert result.returncode == 0, result.stderr
        finally:
            for sock in conns:
                sock.close()

    def test_request_line_without_end_is_dropped_at_the_frame_size(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """Bytes without a newline are read up to the frame size, then the connection is
        dropped (not buffered until the deadline); status still answers."""
        supervisors(root).wait_running()
        with _connect(root) as sock:
            # The frame plus what the socket buffers hold; far less than a deadline's worth.
            sent = _send_until_dropped(sock, 64 * MAX_FRAME_BYTES)
        assert sent is not None, "the connection took every byte"
        assert sent > MAX_FRAME_BYTES
        assert cli(root, "status").returncode == 0

    def test_client_disconnecting_mid_request(self, root: Path, supervisors: Supervisors) -> None:
        """A client that vanishes halfway through its hello or its request disturbs
        nothing."""
        supervisors(root).wait_running()
        for cut in (1, 20, 60):
            with _connect(root) as sock:
                sock.sendall(encode_request(Hello("0" * 64))[:cut])
            with _connect(root) as sock:
                request = _handshake(sock, root).send(ControlRequest(ControlCommand.STOP))
                sock.sendall(request[:cut])
        assert cli(root, "health").returncode == 0

    def test_stop_client_leaving_mid_stop(self, root: Path, supervisors: Supervisors) -> None:
        """A stop client that goes away mid-stop changes nothing: the shutdown goes on and
        another pending stop client still gets its progress and the final stopped."""
        write_root(
            root,
            task_source="lifecycle_app:stubborn",
            stop_timeout_ms=1000,
            force_kill_timeout_ms=1000,
        )
        supervisor = supervisors(root)
        supervisor.wait_running()
        with _connect(root) as leaving, _connect(root) as staying:
            _ask(leaving, root, ControlCommand.STOP)
            assert _answers(leaving, 1) == [("stop-progress", "cooperative")]
            _ask(staying, root, ControlCommand.STOP)
            assert _answers(staying, 1) == [("stop-progress", "terminate")]  # subscribed
            leaving.close()  # with the terminate frame unread: the server's next send fails
            assert _answers(staying) == [("stop-progress", "kill"), ("stopped", None)]
        assert supervisor.finish() == 8, supervisor.stderr  # forced: SIGKILL was needed
        assert processes_in(root) == []

    def test_status_client_disconnect_does_not_stop(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A status client that closes before reading its answer does not end the pool."""
        supervisors(root).wait_running()
        with _connect(root) as sock:
            _ask(sock, root, ControlCommand.STATUS)
        assert cli(root, "health").returncode == 0


class TestRefusalFlood:
    def test_a_flood_of_refusals_logs_a_bounded_number_of_lines(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """2,000 refused connections: a few counted lines per cause; status answers meanwhile."""
        supervisor = supervisors(root, "--log-format", "json")
        supervisor.wait_running()

        def garbage(sock: socket.socket) -> None:
            sock.sendall(b"garbage\n")

        flood = {"credential": _ask_as_rogue, "malformed": garbage}

        def flooding() -> None:
            for _ in range(1000):
                for refused in flood.values():
                    with _connect(root) as sock:
                        refused(sock)
                        assert sock.recv(4096) == b""

        flooder = threading.Thread(target=flooding)
        started = time.monotonic()
        flooder.start()
        answered = []
        try:
            while flooder.is_alive():  # real requests, each while the flood runs
                asked = time.monotonic()
                with _connect(root) as sock:
                    _ask(sock, root, ControlCommand.STATUS)
                    assert _answers(sock, 1) == [("status", None)]
                answered.append(time.monotonic() - asked)
        finally:
            flooder.join(timeout=60)
        elapsed = time.monotonic() - started
        assert not flooder.is_alive()
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0
        assert answered, "the flood ended before a status could be asked"
        assert max(answered) < READ_DEADLINE_S, sorted(answered)[-3:]  # never queued behind it
        refused = _refused(supervisor)
        for cause in flood:
            lines = [count for found, count in refused if found == cause]
            # Every refusal is counted once (the rest is logged when the server closes)...
            assert sum(lines) == 1000, lines
            # ...in at most one line per second of the flood, plus the one at close.
            assert len(lines) <= elapsed / INTERVAL_S + 2, (len(lines), elapsed)


class TestSecrets:
    def test_credential_appears_only_in_the_locator(
        self, root: Path, supervisors: Supervisors
    ) -> None:
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

    def test_workers_hold_only_their_own_descriptors(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A worker holds stdin/out/err, its channel, its stop pipe and the fence: no more
        inherited. Besides them only its own epoll set over the stop pipe and the channel
        (the stop descriptor its task source waits on), close-on-exec."""
        supervisor = supervisors(root)
        supervisor.wait_running()
        for worker in supervisor.workers():
            fds = sorted(int(fd) for fd in os.listdir(f"/proc/{worker.pid}/fd"))
            assert fds == [0, 1, 2, 3, 4, 5, 6], fds
            targets = [os.readlink(f"/proc/{worker.pid}/fd/{fd}") for fd in fds]
            assert targets[6] == "anon_inode:[eventpoll]"
            flags = (Path(f"/proc/{worker.pid}/fdinfo/6").read_text().split("flags:")[1]).split()
            assert int(flags[0], 8) & os.O_CLOEXEC
            assert targets[3].startswith("socket:")
            assert targets[4].startswith("pipe:")
            assert targets[5] == str(root / "var/tmp/worker.generation.lock")
            assert str(root / "var/tmp/worker.lock") not in targets
