"""The guardian process on its own: handshake, version refusal, lock refusal, silence;
what it imports per driver, and which pids it signals."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from lock_holder import HoldLock
from peers import FramedPeer
from site_hooks import SIGNAL_LOG, SIGNAL_LOG_ENV, quick_and_slow_workers, signals_sent, site_env

from coretsia.guardian._version import __version__
from coretsia.supervisor.daemon.drivers import FORK_SERVER_CODE
from coretsia.worker_protocol import lock
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.internal.guardian import (
    Drained,
    Exited,
    GenerationFailed,
    Hello,
    HostStarted,
    Locked,
    Refused,
    Release,
    Released,
    Shutdown,
    Spawned,
    SpawnFailed,
    Welcome,
    decode_guardian_frame,
    encode_guardian_frame,
)
from coretsia.worker_protocol.internal.runtime.exit_kind import ExitKind
from coretsia.worker_protocol.vocabulary import Containment, Driver

WITHOUT_ADMIN_WITH_A_THREAD = """
import sys, threading, time
if "coretsia.guardian" in sys.orig_argv:
    from coretsia.worker_protocol.internal.runtime import userns
    userns.has_admin = lambda: False
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
"""
"""A guardian that looks unprivileged and is multithreaded from the start."""


class Guardian(FramedPeer):
    """A real guardian process talking to this test over a socketpair."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        ours, theirs = socket.socketpair()
        super().__init__(ours, encode_guardian_frame, decode_guardian_frame)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "coretsia.guardian", f"--channel-fd={theirs.fileno()}"],
            pass_fds=(theirs.fileno(),),
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        theirs.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def finish(self) -> tuple[int, bytes, bytes]:
        self.sock.close()
        out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, out, err


def _refused_claim(root: Path) -> Reason:
    """Why a guardian welcomed with a plain ``hello`` refused the lock claim, silently."""
    guardian = Guardian(root)
    guardian.send(hello())
    assert isinstance(guardian.receive(), Welcome)
    refused = guardian.receive()
    assert isinstance(refused, Refused)
    assert guardian.finish() == (1, b"", b"")
    return refused.reason


def hello(
    version: str = __version__,
    driver: Driver = Driver.FORK,
    stop_timeout_ms: int = 1000,
    containment: Containment = Containment.PROCESS,
    fork_server: tuple[str, ...] | None = None,
) -> bytes:
    return encode_guardian_frame(
        Hello(
            peer_version=version,
            driver=driver,
            stop_timeout_ms=stop_timeout_ms,
            force_kill_timeout_ms=500,
            umask=0o022,
            log_json=False,
            containment=containment,
            root_id="0" * 16,
            fork_server=fork_server,
        )
    )


class TestHandshake:
    def test_welcome_lock_and_clean_exit(self, runtime_root: Path) -> None:
        """A matching hello is welcomed, the lock claimed, and shutdown releases it."""
        guardian = Guardian(runtime_root)
        guardian.send(hello())
        welcome = guardian.receive()
        assert isinstance(welcome, Welcome)
        assert welcome.pid == guardian.proc.pid
        assert isinstance(guardian.receive(), Locked)
        guardian.send(encode_guardian_frame(Shutdown()))
        # Nothing but its own log line (text: the hello asked for no JSON).
        assert guardian.finish() == (0, b"", b"coretsia: guardian.released\n")

    def test_peer_of_another_version_is_refused(self, runtime_root: Path) -> None:
        """A supervisor of another version is refused with a clear token."""
        guardian = Guardian(runtime_root)
        guardian.send(hello("0.0.0-other"))
        refused = guardian.receive()
        assert isinstance(refused, Refused)
        assert refused.reason is Reason.PEER_VERSION_MISMATCH
        assert guardian.finish() == (1, b"", b"")
        assert not (runtime_root / "var/tmp/worker.lock").exists()

    def test_lock_already_held_is_refused(self, runtime_root: Path, hold_lock: HoldLock) -> None:
        """A second guardian for the same root is refused: already running."""
        hold_lock(str(runtime_root / "var/tmp/worker.lock"))
        assert _refused_claim(runtime_root) is Reason.ALREADY_RUNNING

    @pytest.mark.parametrize(
        ("path", "mode"),
        [
            ("var/tmp", 0o1777),
            ("var", 0o777),
            ("var/tmp/worker.lock", 0o666),
            ("var/tmp/worker.generation.lock", 0o606),
        ],
    )
    def test_an_untrusted_lock_or_directory_is_a_lock_failure(
        self, runtime_root: Path, path: str, mode: int
    ) -> None:
        """The guardian takes no lock in a directory others may write into, nor keeps one
        whose file they may write: ``start`` refuses that first (by its role), so here
        the root changed since; the claim is refused and no lock stays held."""
        target = runtime_root / path
        if not target.exists():
            target.touch()
        target.chmod(mode)
        assert _refused_claim(runtime_root) is Reason.LIFECYCLE_LOCK_FAILED
        assert not lock.probe(str(runtime_root / "var/tmp/worker.lock"))

    def test_a_user_namespace_refused_is_a_containment_failure(
        self, runtime_root: Path, tmp_path: Path
    ) -> None:
        """Without ``CAP_SYS_ADMIN`` the guardian enters a user namespace right after
        ``hello``; the kernel refuses one to a multithreaded process, so a guardian that
        already runs a thread (the hook starts one) is refused ``worker-containment-failed``
        before it claims anything."""
        env = site_env(tmp_path / "site", WITHOUT_ADMIN_WITH_A_THREAD)
        guardian = Guardian(runtime_root, env)
        guardian.send(hello(containment=Containment.NAMESPACE))
        refused = guardian.receive()
        assert isinstance(refused, Refused)
        assert refused.reason is Reason.CONTAINMENT_FAILED
        assert guardian.finish() == (1, b"", b"")
        assert not (runtime_root / "var/tmp/worker.lock").exists()

    def test_garbage_instead_of_hello(self, runtime_root: Path) -> None:
        """A peer that speaks garbage gets nothing and no traceback is printed."""
        guardian = Guardian(runtime_root)
        guardian.send(b'{"type":"hello","version":1,"secret":"s3cr3t"}\n')
        assert guardian.receive() is None
        assert guardian.finish() == (1, b"", b"")

    def test_bad_arguments(self, runtime_root: Path) -> None:
        """Without a valid --channel-fd the guardian exits 2, silently."""
        result = subprocess.run(
            [sys.executable, "-m", "coretsia.guardian", "--channel-fd=x"],
            capture_output=True,
            cwd=runtime_root,
            timeout=30,
            check=False,
        )
        assert (result.returncode, result.stdout, result.stderr) == (2, b"", b"")

    def test_channel_loss_before_hello(self, runtime_root: Path) -> None:
        """A supervisor that dies before its hello leaves a guardian that just exits."""
        guardian = Guardian(runtime_root)
        code, out, err = guardian.finish()
        assert (code, out, err) == (1, b"", b"")
        assert os.listdir(runtime_root / "var/tmp") == []


PROC_DRIVER_MODULES = {
    "coretsia.guardian.proc_backend",
    "coretsia.worker_protocol.internal.proc_host",
    "coretsia.worker_protocol.internal.proc_host_conversation",
}


@pytest.mark.parametrize("driver", [Driver.FORK, Driver.PROC])
def test_only_the_selected_driver_is_imported(runtime_root: Path, driver: Driver) -> None:
    """A ``fork`` guardian never imports the proc driver's backend nor its frames.

    Observed with ``-X importtime`` (its environment form) on the real guardian's stderr;
    the ``proc`` case shows the observation sees those modules when they are imported.
    """
    guardian = Guardian(runtime_root, dict(os.environ, PYTHONPROFILEIMPORTTIME="1"))
    guardian.send(hello(driver=driver))
    assert isinstance(guardian.receive(), Welcome)
    assert isinstance(guardian.receive(), Locked)
    guardian.send(encode_guardian_frame(Shutdown()))
    code, _out, err = guardian.finish()
    assert code == 0
    lines = [line for line in err.decode().splitlines() if line.startswith("import time:")]
    modules = {line.rsplit("|", 1)[1].strip() for line in lines}
    assert "coretsia.guardian.runtime" in modules
    expected = PROC_DRIVER_MODULES if driver is Driver.PROC else set()
    assert modules & PROC_DRIVER_MODULES == expected


def test_signals_only_its_unreaped_workers(runtime_root: Path, tmp_path: Path) -> None:
    """A worker already reaped is never signalled again; a live one is, as a group.

    A reaped pid may belong to another process at any moment, so the guardian must forget
    it at the reap. Every ``kill`` and ``killpg`` of the real guardian is recorded.
    """
    log = tmp_path / "signals.log"
    env = site_env(tmp_path / "site", SIGNAL_LOG, {**os.environ, SIGNAL_LOG_ENV: str(log)})
    guardian = Guardian(runtime_root, env)
    guardian.send(hello(stop_timeout_ms=100))
    assert isinstance(guardian.receive(), Welcome)
    assert isinstance(guardian.receive(), Locked)
    channels, pids, exited = quick_and_slow_workers(guardian)
    guardian.send(encode_guardian_frame(Shutdown()))
    while not isinstance(frame := guardian.receive(), Drained):
        if isinstance(frame, Exited):
            exited[frame.slot] = frame.exit_kind
    assert frame.clean
    guardian.send(encode_guardian_frame(Release()))
    assert isinstance(guardian.receive(), Released)
    assert guardian.finish()[0] == 0
    for channel in channels:
        channel.close()
    assert exited == {0: "exit-0", 1: "signal-term"}
    assert signals_sent(log) == [(pids[1], signal.SIGTERM)]


LATE_SPAWN_RESULT = """
import sys, time
if "coretsia.guardian" in sys.orig_argv:
    import coretsia.guardian.spawner as spawner
    import coretsia.guardian.proc_backend as proc_backend
    import trio

    real_spawn = spawner._spawn

    def late_spawn(request):  # fork: the spawner thread returns after the worker is gone
        pid = real_spawn(request)
        time.sleep(0.5)
        return pid

    spawner._spawn = late_spawn
    real_host_spawn = proc_backend.ProcBackend.spawn

    async def late_host_spawn(self, slot, argv, channel_fd):  # proc: the reply waits
        result = await real_host_spawn(self, slot, argv, channel_fd)
        await trio.sleep(0.5)
        return result

    proc_backend.ProcBackend.spawn = late_host_spawn
"""
"""Makes every spawn's result reach the guardian's loop half a second late: a worker
that exits at once is gone (reaped, or reported by the proc host) before its ``spawned``."""


@pytest.mark.parametrize("driver", [Driver.FORK, Driver.PROC])
def test_a_worker_that_exits_before_its_spawn_returns(
    runtime_root: Path, tmp_path: Path, driver: Driver
) -> None:
    """Its exit is reported after its ``spawned``, and its pid is never signalled.

    Without care the reaped pid would be registered as a live worker (and signalled as a
    group at the stop, when it may be another process's), and its exit never told.
    """
    log = tmp_path / "signals.log"
    env = site_env(
        tmp_path / "site", SIGNAL_LOG + LATE_SPAWN_RESULT, {**os.environ, SIGNAL_LOG_ENV: str(log)}
    )
    guardian = Guardian(runtime_root, env)
    try:
        guardian.send(hello(driver=driver, stop_timeout_ms=100))
        assert isinstance(guardian.receive(), Welcome)
        assert isinstance(guardian.receive(), Locked)
        channel = guardian.spawn(0, "pass")
        frames = []
        while not isinstance(frame := guardian.receive(), Exited):
            frames.append(frame)
        frames.append(frame)
        spawned = [f for f in frames if isinstance(f, Spawned)]
        assert [type(f) for f in frames][-2:] == [Spawned, Exited]
        assert frame == Exited(slot=0, exit_kind=ExitKind.EXIT_0)
        guardian.send(encode_guardian_frame(Shutdown()))
        while not isinstance(drained := guardian.receive(), Drained):
            assert not isinstance(drained, Exited), drained  # told once, already
        assert drained.clean
        guardian.send(encode_guardian_frame(Release()))
        assert isinstance(guardian.receive(), Released)
        assert guardian.finish()[0] == 0
        channel.close()
        assert spawned[0].pid not in {pid for pid, _ in signals_sent(log)}
    finally:
        if guardian.proc.poll() is None:  # a failed assertion above: end it, and its pipes
            guardian.proc.kill()
            guardian.finish()


FORK_SERVER = (sys.executable, "-c", FORK_SERVER_CODE)


def _released(guardian: Guardian) -> None:
    """Shutdown, drained clean, release, released, exit 0."""
    guardian.send(encode_guardian_frame(Shutdown()))
    while not isinstance(drained := guardian.receive(), Drained):
        assert isinstance(drained, Exited), drained
    assert drained.clean
    guardian.send(encode_guardian_frame(Release()))
    assert isinstance(guardian.receive(), Released)
    assert guardian.finish()[0] == 0


def _with_fork_server(
    root: Path, argv: tuple[str, ...], env: dict[str, str] | None = None
) -> tuple[Guardian, HostStarted]:
    """A guardian past ``locked`` with a fork server started from ``argv``, and its pid."""
    guardian = Guardian(root, env)
    guardian.send(hello(fork_server=argv))
    assert isinstance(guardian.receive(), Welcome)
    assert isinstance(guardian.receive(), Locked)
    server = guardian.receive()
    assert isinstance(server, HostStarted)
    return guardian, server


class TestForkServer:
    """The guardian's side of ``spawn = "forkserver"``: it owns the forked workers, and a
    fork server that is gone fails the generation and every spawn after it."""

    def test_the_guardian_reaps_what_the_server_forked(self, runtime_root: Path) -> None:
        """A forked worker (here, one that breaks the launcher's contract: exit 2) is the
        guardian's: reported ``spawned`` with its pid, then ``exited`` by its reaper."""
        guardian, server = _with_fork_server(runtime_root, FORK_SERVER)
        channel = guardian.spawn(0, "pass")
        spawned = guardian.receive()
        assert isinstance(spawned, Spawned)
        assert spawned.pid not in {server.pid, guardian.proc.pid}
        assert guardian.receive() == Exited(slot=0, exit_kind=ExitKind.EXIT_NONZERO)
        channel.close()
        _released(guardian)

    @pytest.mark.parametrize("how", ["killed", "refused"])
    def test_a_server_gone_fails_the_generation_and_later_spawns(
        self, runtime_root: Path, how: str
    ) -> None:
        """SIGKILLed mid-run, or refusing to serve (a broken argv: exit 2 before its first
        request): ``generation-failed`` and ``spawn-failed``, both
        ``worker-process-host-failed``; the shutdown still drains and releases."""
        argv = FORK_SERVER if how == "killed" else (*FORK_SERVER, "--no-such-argument")
        guardian, server = _with_fork_server(runtime_root, argv)
        if how == "killed":
            os.kill(server.pid, signal.SIGKILL)
        failed = GenerationFailed(reason=Reason.PROCESS_HOST_FAILED)
        assert guardian.receive() == failed
        channel = guardian.spawn(0, "pass")
        assert guardian.receive() == SpawnFailed(slot=0, reason=Reason.PROCESS_HOST_FAILED)
        channel.close()
        _released(guardian)


PIPELINE_LOG_ENV = "CORETSIA_TEST_PIPELINE_LOG"

WATCHED_FORK_SERVER = """
import os, sys, time
if any("coretsia.supervisor.worker_side.fork_server" in arg for arg in sys.orig_argv):
    import coretsia.supervisor.worker_side.fork_server as server

    log = os.environ["CORETSIA_TEST_PIPELINE_LOG"]
    start, worker, fresh = server._start, server._worker, server._fresh
    started = []

    def note(line):
        with open(log, "a") as out:
            out.write(line + "\\n")

    def watched_start(tag, argv, *rest):
        started.append(argv[-1])  # before the fork: the worker inherits the count
        note(f"asked {argv[-1]}")
        return start(tag, argv, *rest)

    def watched_worker(tag, argv, *rest):
        note(f"forked {os.getpid()} {argv[-1]}")
        if len(started) == 1:  # the first worker tells only once the second one has
            deadline = time.monotonic() + 5
            while "told" not in open(log).read():
                if time.monotonic() > deadline:
                    note("the second worker was not forked before the first told")
                    break
                time.sleep(0.01)
        worker(tag, argv, *rest)

    def watched_fresh(argv, parent):
        note(f"told {argv[-1]}")
        fresh(argv, parent)

    server._start, server._worker, server._fresh = watched_start, watched_worker, watched_fresh
"""
"""A fork server whose first worker tells only once the second one has: one that waited
for each worker to tell before it forked the next never forks the second in time."""


def test_a_worker_slow_to_tell_holds_up_no_other(runtime_root: Path, tmp_path: Path) -> None:
    """Two spawns at once, the first worker slow to tell its pid: the server forks the
    second meanwhile (it neither waits for the guardian's round trip nor for a worker to
    tell), and each ``spawned`` names the pid of the worker forked for its own slot,
    whatever the order of the answers."""
    log = tmp_path / "pipeline.log"
    env = site_env(tmp_path / "site", WATCHED_FORK_SERVER, dict(os.environ))
    env[PIPELINE_LOG_ENV] = str(log)
    guardian, _server = _with_fork_server(runtime_root, FORK_SERVER, env)
    channels = [guardian.spawn(0, "slot-0"), guardian.spawn(1, "slot-1")]
    pids: dict[int, int] = {}
    exits: set[int] = set()
    while len(pids) < 2 or len(exits) < 2:
        frame = guardian.receive()
        if isinstance(frame, Spawned):
            pids[frame.slot] = frame.pid
        else:
            assert isinstance(frame, Exited), frame
            exits.add(frame.slot)
    lines = log.read_text().splitlines()
    assert "the second worker was not forked before the first told" not in lines
    forked = [line.split()[1:] for line in lines if line.startswith("forked ")]
    assert sorted(forked) == sorted([[str(pids[0]), "slot-0"], [str(pids[1]), "slot-1"]])
    asked = [line.split()[1] for line in lines if line.startswith("asked ")]
    told = [line.split()[1] for line in lines if line.startswith("told ")]
    assert told == asked[::-1]  # the second one forked told first
    for channel in channels:
        channel.close()
    _released(guardian)


HUNG_FORK_SERVER = """
import sys
if "coretsia.guardian" in sys.orig_argv:
    import coretsia.guardian.fork_server_backend as backend
    backend.REPLY_TIMEOUT_S = 0.5
elif any("coretsia.supervisor.worker_side.fork_server" in arg for arg in sys.orig_argv):
    import time
    import coretsia.supervisor.worker_side.fork_server as server
    server._start = lambda *args: time.sleep(3600)
"""
"""A fork server that never answers, and a guardian that waits half a second for it."""


def test_a_hung_fork_server_is_killed_and_fails_the_generation(
    runtime_root: Path, tmp_path: Path
) -> None:
    """No reply within the bound: the spawn fails, the server is SIGKILLed (never asked
    again, so no late reply is misread), and its reap fails the generation."""
    guardian = Guardian(
        runtime_root, site_env(tmp_path / "site", HUNG_FORK_SERVER, dict(os.environ))
    )
    guardian.send(hello(fork_server=FORK_SERVER))
    assert isinstance(guardian.receive(), Welcome)
    assert isinstance(guardian.receive(), Locked)
    server = guardian.receive()
    assert isinstance(server, HostStarted)
    channel = guardian.spawn(0, "pass")
    frames = {guardian.receive(), guardian.receive()}
    assert frames == {
        SpawnFailed(slot=0, reason=Reason.PROCESS_HOST_FAILED),
        GenerationFailed(reason=Reason.PROCESS_HOST_FAILED),
    }
    channel.close()
    _released(guardian)
