"""The worker launcher, run for real: a fresh interpreter per test, real descriptors.

Each test publishes a generation into a temporary project root, starts
``python -m coretsia.supervisor.launcher`` there with one end of a real socketpair (the
worker channel) and the read end of a real pipe (the stop signal), and asserts on the
frames that arrive on the other end and on the exit status. Task sources are small
modules written into the root's ``apps/`` directory; they record what the launcher called
in ``calls.log`` so that stdout and stderr can be asserted empty.
"""

from __future__ import annotations

import itertools
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil
import pytest
from pools import install_app, wait_for

from coretsia.supervisor.generation import publish
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.worker_channel import (
    Failed,
    Heartbeat,
    Ready,
    Retiring,
    TaskFailed,
    WorkerFrame,
    decode_worker_frame,
    encode_retire,
)

WAIT = 10.0  # upper bound on any single wait; tests finish far sooner
REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "docs" / "examples" / "quickstart"


HEAVY = ("trio", "cattrs", "attrs", "psutil")

ArgvBuilder = Callable[[int, int], list[str]]
"""Builds the launcher's argv from the channel and stop descriptors it will inherit."""

CHANNEL = "<channel>"
STOP = "<stop>"


def contract_argv(
    changes: dict[str, str | None] | None = None, extra: list[str] | None = None
) -> ArgvBuilder:
    """The four contract arguments, with some changed (None: left out), then ``extra``."""

    def build(channel_fd: int, stop_fd: int) -> list[str]:
        values: dict[str, str | None] = {
            "artifact_root": "var/generations",
            "slot": "1",
            "channel_fd": CHANNEL,
            "stop_fd": STOP,
        }
        values.update(changes or {})
        fds = {CHANNEL: str(channel_fd), STOP: str(stop_fd)}
        return [
            f"--coretsia-worker-{key.replace('_', '-')}={fds.get(value, value)}"
            for key, value in values.items()
            if value is not None
        ] + (extra or [])

    return build


def _spec(**overrides: object) -> dict[str, object]:
    spec: dict[str, object] = {
        "workers": 2,
        "max_requests": 1000,
        "task_type": "queue",
        "task_source": "sources:blocking",
        "app_path": ["apps"],
        "driver": "auto",
        "control_transport": "auto",
        "tcp_host": "127.0.0.1",
        "tcp_port": 9327,
        "socket_path": "var/tmp/worker.sock",
        "state_path": "var/tmp/worker.state.json",
        "stop_flag_path": "var/tmp/worker.stop",
        "start_timeout_ms": 10000,
        "stop_timeout_ms": 10000,
        "force_kill_timeout_ms": 1000,
        "debug": False,
    }
    spec.update(overrides)
    return spec


@pytest.fixture
def root(short_root: Path) -> Path:
    """A project root with the test task sources on ``apps/`` (no generation yet)."""
    (short_root / "apps").mkdir()
    install_app(short_root / "apps", "launcher_sources.py", "sources.py")
    return short_root


def _calls(root: Path) -> list[str]:
    log = root / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


@dataclass
class Outcome:
    code: int
    frames: list[WorkerFrame]
    stdout: bytes
    stderr: bytes


class Launcher:
    """One launcher process and our ends of its channel and stop pipe; always reaped."""

    def __init__(
        self,
        root: Path,
        *,
        slot: int = 1,
        argv: ArgvBuilder | None = None,
        parent_pid: str | None = None,
        python_flags: tuple[str, ...] = (),
        artifact_root: str = "var/generations",
    ) -> None:
        self.channel, child_channel = socket.socketpair()
        stop_read, self.stop_write = os.pipe()
        self.buffer = b""
        self.frames: list[WorkerFrame] = []
        self.eof = False
        self.reaped = False
        env = dict(os.environ)
        env["CORETSIA_WORKER_PARENT_PID"] = str(os.getpid()) if parent_pid is None else parent_pid
        if parent_pid == "":
            del env["CORETSIA_WORKER_PARENT_PID"]
        build = argv or contract_argv({"artifact_root": artifact_root, "slot": str(slot)})
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    *python_flags,
                    "-m",
                    "coretsia.supervisor.launcher",
                    *build(child_channel.fileno(), stop_read),
                ],
                cwd=root,
                env=env,
                pass_fds=(child_channel.fileno(), stop_read),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        finally:
            child_channel.close()
            os.close(stop_read)

    def next_frame(self) -> WorkerFrame | None:
        """The next frame, or None at EOF; fails the test after ``WAIT`` seconds."""
        deadline = time.monotonic() + WAIT
        while b"\n" not in self.buffer and not self.eof:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "no frame within the wait"
            self.channel.settimeout(remaining)
            chunk = self.channel.recv(4096)
            self.eof = not chunk
            self.buffer += chunk
        if b"\n" not in self.buffer:
            assert self.buffer == b"", "truncated frame"
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        frame = decode_worker_frame(line + b"\n")
        self.frames.append(frame)
        if isinstance(frame, Retiring):
            self.channel.sendall(encode_retire())  # grant it, as the supervisor does
        return frame

    def stop(self) -> None:
        """Request a cooperative stop: close the only write end of the stop pipe."""
        if self.stop_write >= 0:
            os.close(self.stop_write)
            self.stop_write = -1

    def finish(self) -> Outcome:
        """Read the frames up to EOF, then reap the process."""
        while self.next_frame() is not None:
            pass
        stdout, stderr = self.proc.communicate(timeout=WAIT)
        self.reaped = True
        return Outcome(self.proc.returncode, self.frames, stdout, stderr)

    def __enter__(self) -> Launcher:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.reaped:
            self.proc.kill()  # harmless if it already exited; we reap it either way
            self.proc.communicate(timeout=WAIT)
        self.channel.close()
        self.stop()


def _launch(root: Path, **kwargs: Any) -> Outcome:
    """Run a launcher that is expected to end on its own, and return how it ended."""
    with Launcher(root, **kwargs) as launcher:
        return launcher.finish()


def _quiet(outcome: Outcome) -> None:
    assert outcome.stdout == b""
    assert outcome.stderr == b""


# --- clean endings ---------------------------------------------------------------------


def test_ready_then_clean_exit_on_stop(root: Path) -> None:
    publish(root, _spec())
    with Launcher(root) as launcher:
        assert launcher.next_frame() == Ready()
        launcher.stop()  # receive() is blocked in wait_for_stop(None): it must wake
        outcome = launcher.finish()
    assert outcome.code == 0
    assert outcome.frames == [Ready()]
    _quiet(outcome)
    assert _calls(root) == [
        "context True queue 1 False False",
        "env False",  # the parent pid variable is the launcher's, never the application's
        "path apps",  # app_path comes first; python -m's working-directory entry is gone
        "assert_ready",
    ]


def test_stop_requested_before_boot_exits_cleanly_after_ready(root: Path) -> None:
    publish(root, _spec(task_source="sources:immediate"))
    with Launcher(root) as launcher:
        launcher.stop()
        outcome = launcher.finish()
    assert (outcome.code, outcome.frames) == (0, [Ready()])
    assert "run" not in _calls(root)


def test_retires_after_max_requests(root: Path) -> None:
    publish(root, _spec(task_source="sources:immediate", max_requests=3))
    outcome = _launch(root)
    assert (outcome.code, outcome.frames) == (0, [Ready(), Retiring()])
    _quiet(outcome)
    calls = _calls(root)
    # It asks after 3 attempts, may take a 4th while the grant travels, never a 5th.
    assert calls in (
        ["assert_ready"] + ["run", "complete 42"] * 3,
        ["assert_ready"] + ["run", "complete 42"] * 4,
    )


def test_retirement_takes_one_more_task_then_waits_for_the_grant(root: Path) -> None:
    publish(root, _spec(task_source="sources:immediate", max_requests=2))
    with Launcher(root) as launcher:
        _read_ready_and_retiring(launcher)
        # Without the grant it serves one more (max_requests + 1), then waits alive. The
        # source hands out tasks in microseconds: a worker that served on would be far
        # past 3 attempts by the time the grant below arrives.
        wait_for(lambda: _calls(root).count("complete 42") == 3)
        _assert_waiting(launcher)
        launcher.channel.sendall(encode_retire())
        outcome = launcher.finish()
        assert outcome.code == 0
    assert _calls(root) == ["assert_ready"] + ["run", "complete 42"] * 3


def _read_ready_and_retiring(launcher: Launcher) -> None:
    """Read ``ready``, then ``retiring`` by hand: ``next_frame`` would grant it."""
    launcher.channel.settimeout(WAIT)
    assert launcher.next_frame() == Ready()
    data = launcher.buffer  # retiring may already sit here, read with ready
    while b"\n" not in data:
        data += launcher.channel.recv(4096)
    line, launcher.buffer = data.split(b"\n", 1)
    assert decode_worker_frame(line + b"\n") == Retiring()


def _assert_waiting(launcher: Launcher) -> None:
    """The worker is alive, blocked (asleep in the kernel), and has sent nothing more."""
    process = psutil.Process(launcher.proc.pid)
    wait_for(lambda: process.status() == psutil.STATUS_SLEEPING, timeout=WAIT)
    assert launcher.proc.poll() is None, "it left without the grant"
    assert select.select([launcher.channel], [], [], 0)[0] == [], "it sent another frame"


def test_a_stop_ends_the_wait_for_the_grant(root: Path) -> None:
    publish(root, _spec(task_source="sources:immediate", max_requests=1))
    with Launcher(root) as launcher:
        _read_ready_and_retiring(launcher)
        wait_for(lambda: _calls(root).count("complete 42") == 2)
        _assert_waiting(launcher)
        launcher.stop()  # no grant: the stop alone must end the wait
        _, stderr = launcher.proc.communicate(timeout=WAIT)
        launcher.reaped = True
    assert launcher.proc.returncode == 0, stderr
    assert _calls(root) == ["assert_ready"] + ["run", "complete 42"] * 2


def test_failed_task_is_settled_with_fail_and_counts_as_an_attempt(root: Path) -> None:
    publish(root, _spec(task_source="sources:run_fails", max_requests=2))
    outcome = _launch(root)
    failed = TaskFailed("ValueError")  # this test source's task has no attempt/retried
    assert outcome.code == 0
    assert outcome.frames in (
        [Ready(), failed, failed, Retiring()],
        [Ready(), failed, failed, Retiring(), failed],
    )
    _quiet(outcome)
    assert _calls(root) in (
        ["assert_ready"] + ["run", "fail ValueError"] * 2,
        ["assert_ready"] + ["run", "fail ValueError"] * 3,
    )


@pytest.mark.parametrize(
    ("factory", "frame"),
    [
        ("says_attempt", TaskFailed("ValueError", 2, retried=False)),
        ("says_nonsense", TaskFailed("ValueError")),  # True is no attempt, "yes" no bool
    ],
)
def test_task_failed_carries_only_well_typed_attempt_and_retried(
    root: Path, factory: str, frame: TaskFailed
) -> None:
    publish(root, _spec(task_source=f"sources:{factory}", max_requests=1))
    outcome = _launch(root)
    assert outcome.code == 0
    assert outcome.frames[:2] == [Ready(), frame]


def test_dotted_factory_path_resolves(root: Path) -> None:
    publish(root, _spec(task_source="sources:Nested.factory", max_requests=1))
    outcome = _launch(root)
    assert (outcome.code, outcome.frames) == (0, [Ready(), Retiring()])


# --- failures: a reason frame, then status 1 -------------------------------------------


@pytest.mark.parametrize(
    "task_source",
    [
        None,
        "sources",
        ":blocking",
        "sources:",
        "no_such_module:make",
        "sources:no_such_attr",
        "sources:raising",
        "sources:not_callable",
    ],
)
def test_unresolvable_task_source(root: Path, task_source: str | None) -> None:
    publish(root, _spec(task_source=task_source))
    outcome = _launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.TASK_SOURCE_UNRESOLVABLE)])
    _quiet(outcome)


def test_source_outside_app_path_is_unresolvable(root: Path) -> None:
    """Only app_path is searched: not the working directory ``python -m`` would add."""
    shutil.copy(root / "apps" / "sources.py", root / "rootsources.py")
    publish(root, _spec(task_source="rootsources:blocking"))
    outcome = _launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.TASK_SOURCE_UNRESOLVABLE)])


@pytest.mark.parametrize(
    ("task_source", "reason", "calls"),
    [
        ("sources:invalid", Reason.TASK_SOURCE_INVALID, []),
        ("sources:other_type", Reason.TASK_SOURCE_INVALID, []),
        ("sources:not_ready", Reason.TASK_SOURCE_NOT_READY, ["assert_ready"]),
    ],
)
def test_boot_failures_before_ready(
    root: Path, task_source: str, reason: Reason, calls: list[str]
) -> None:
    publish(root, _spec(task_source=task_source))
    outcome = _launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(reason)])
    _quiet(outcome)
    assert _calls(root) == calls


@pytest.mark.parametrize(
    ("task_source", "reason", "calls"),
    [
        ("sources:receive_fails", Reason.TASK_SOURCE_RECEIVE_FAILED, []),
        ("sources:terminates", Reason.TASK_SOURCE_TERMINATED, []),
        # complete() failing is a settlement failure and never falls through to fail().
        ("sources:complete_fails", Reason.TASK_SETTLEMENT_FAILED, ["run", "complete 42"]),
        ("sources:fail_fails", Reason.TASK_SETTLEMENT_FAILED, ["run", "fail ValueError"]),
    ],
)
def test_failures_after_ready(
    root: Path, task_source: str, reason: Reason, calls: list[str]
) -> None:
    publish(root, _spec(task_source=task_source))
    outcome = _launch(root)
    assert (outcome.code, outcome.frames) == (1, [Ready(), Failed(reason)])
    _quiet(outcome)
    assert _calls(root) == ["assert_ready", *calls]


def test_system_exit_from_application_code_is_a_boot_failure(root: Path) -> None:
    publish(root, _spec(task_source="sources:exits"))
    outcome = _launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.CHILD_START_FAILED)])
    _quiet(outcome)


def test_missing_generation_is_a_boot_failure(root: Path) -> None:
    outcome = _launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.CHILD_START_FAILED)])
    _quiet(outcome)


def test_tampered_generation_is_a_boot_failure(root: Path) -> None:
    publish(root, _spec())
    base = root / "var" / "generations"
    path = base / (base / "current").read_text().strip() / "generation.json"
    path.chmod(0o600)
    path.write_bytes(path.read_bytes().replace(b'"workers":2', b'"workers":3'))
    outcome = _launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.CHILD_START_FAILED)])
    _quiet(outcome)


@pytest.mark.parametrize(
    "override",
    [
        {"workers": "2"},
        {"max_requests": 0},
        {"task_type": "cron"},
        {"app_path": "apps"},
        {"app_path": ["../elsewhere"]},
    ],
)
def test_spec_the_launcher_cannot_use_is_a_boot_failure(
    root: Path, override: dict[str, object]
) -> None:
    publish(root, _spec(**override))
    outcome = _launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.CHILD_START_FAILED)])
    _quiet(outcome)


def test_debug_writes_the_traceback_to_stderr(root: Path) -> None:
    publish(root, _spec(task_source="sources:raising", debug=True))
    outcome = _launch(root)
    assert (outcome.code, outcome.frames) == (1, [Failed(Reason.TASK_SOURCE_UNRESOLVABLE)])
    assert b"Traceback" in outcome.stderr
    assert b"factory failed" in outcome.stderr
    assert outcome.stdout == b""


def test_closed_channel_does_not_crash_the_launcher(root: Path) -> None:
    publish(root, _spec(task_source="sources:not_ready"))
    with Launcher(root) as launcher:
        launcher.channel.close()
        stdout, stderr = launcher.proc.communicate(timeout=WAIT)
        launcher.reaped = True
    assert launcher.proc.returncode == 1
    assert (stdout, stderr) == (b"", b"")


# --- contract violations: status 2, no frame, no output --------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        ["--coretsia-worker-module-manifest=var/x.json"],
        ["--coretsia-worker-module-manifest"],
        ["--coretsia-worker-config=coretsia.toml"],
        ["--coretsia-worker-config"],
        ["--coretsia-worker-container=var/c"],
        ["--coretsia-worker-container"],
        ["--coretsia-worker-unknown=1"],
        ["--verbose"],
        ["positional"],
        ["--coretsia-worker-slot=1"],  # duplicate
        ["--coretsia-worker-artifact-root=var/generations"],  # duplicate, same value
    ],
)
def test_forbidden_unknown_and_duplicate_arguments_exit_2(root: Path, extra: list[str]) -> None:
    publish(root, _spec())
    outcome = _launch(root, argv=contract_argv(extra=extra))
    assert (outcome.code, outcome.frames) == (2, [])
    _quiet(outcome)


@pytest.mark.parametrize(
    "changes",
    [
        {"slot": None},
        {"artifact_root": None},
        {"stop_fd": None},
        {"slot": "x"},
        {"slot": "-1"},
        {"slot": "+1"},
        {"slot": "01"},
        {"slot": "1.0"},
        {"slot": "\u0661"},  # ARABIC-INDIC DIGIT ONE: a digit, but not ASCII
        {"slot": ""},
        {"slot": "2"},  # not below workers
        {"slot": "99999999999"},
        {"channel_fd": "abc"},
        {"channel_fd": "1"},  # stdout is never the channel
        {"channel_fd": STOP},  # the pipe is not a socket
        {"stop_fd": CHANNEL},  # the same descriptor twice
        {"stop_fd": "999"},  # not open
        {"artifact_root": ""},
        {"artifact_root": "/tmp"},
        {"artifact_root": "../outside"},
        {"artifact_root": "var/../var/generations"},
        {"artifact_root": "."},
        {"artifact_root": "link"},  # a symlink out of the root
    ],
)
def test_bad_contract_exits_2(root: Path, tmp_path: Path, changes: dict[str, str | None]) -> None:
    publish(root, _spec())
    (tmp_path / "outside").mkdir()
    (root / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    outcome = _launch(root, argv=contract_argv(changes))
    assert (outcome.code, outcome.frames) == (2, [])
    _quiet(outcome)


def test_missing_parent_pid_exits_2(root: Path) -> None:
    publish(root, _spec())
    outcome = _launch(root, parent_pid="")
    assert (outcome.code, outcome.frames) == (2, [])
    _quiet(outcome)


def test_parent_pid_mismatch_exits_1_without_ready(root: Path) -> None:
    """The spawner died before the watch was armed: leave at once, boot nothing."""
    publish(root, _spec())
    outcome = _launch(root, parent_pid="1")
    assert (outcome.code, outcome.frames) == (1, [])
    _quiet(outcome)
    assert _calls(root) == []


INTERMEDIATE = """
import os, subprocess, sys
channel_fd, stop_fd = int(sys.argv[1]), int(sys.argv[2])
env = dict(os.environ, CORETSIA_WORKER_PARENT_PID=str(os.getpid()))
worker = subprocess.Popen(
    [sys.executable, "-m", "coretsia.supervisor.launcher",
     "--coretsia-worker-artifact-root=var/generations", "--coretsia-worker-slot=0",
     f"--coretsia-worker-channel-fd={channel_fd}", f"--coretsia-worker-stop-fd={stop_fd}"],
    pass_fds=(channel_fd, stop_fd), env=env,
)
os.close(channel_fd)
print(worker.pid, flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_worker_dies_with_its_spawner(root: Path) -> None:
    """SIGKILL the process that spawned the worker: the worker must not survive it."""
    publish(root, _spec())
    channel, child_channel = socket.socketpair()
    stop_read, stop_write = os.pipe()
    spawner = subprocess.Popen(
        [sys.executable, "-c", INTERMEDIATE, str(child_channel.fileno()), str(stop_read)],
        cwd=root,
        pass_fds=(child_channel.fileno(), stop_read),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    child_channel.close()
    os.close(stop_read)
    try:
        assert spawner.stdout is not None
        worker_pid = int(_read_line(spawner.stdout, WAIT))
        channel.settimeout(WAIT)
        assert decode_worker_frame(channel.recv(4096)) == Ready()
        spawner.kill()
        spawner.communicate(timeout=WAIT)
        # The worker held the last copy of its channel end: EOF means it is gone.
        assert channel.recv(4096) == b""
        deadline = time.monotonic() + WAIT
        while _alive(worker_pid):  # reaped by whoever inherited it; bounded wait
            assert time.monotonic() < deadline, "worker outlived its spawner"
            time.sleep(0.01)
    finally:
        if spawner.poll() is None:
            spawner.kill()
            spawner.communicate(timeout=WAIT)
        channel.close()
        os.close(stop_write)


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its new parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False


# --- boot cost and the quick start -----------------------------------------------------


def test_boot_path_imports_nothing_heavy(root: Path) -> None:
    publish(root, _spec())
    with Launcher(root, python_flags=("-X", "importtime")) as launcher:
        assert launcher.next_frame() == Ready()
        launcher.stop()
        outcome = launcher.finish()
    assert outcome.code == 0
    lines = [ln for ln in outcome.stderr.decode().splitlines() if ln.startswith("import time:")]
    modules = {ln.rsplit("|", 1)[1].strip() for ln in lines[1:]}  # first line is the header
    assert "coretsia.supervisor.generation" in modules
    assert "coretsia.worker_protocol.worker_channel" in modules
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == []
    # Slow standard modules too: OpenSSL through hashlib (the built-in SHA-256 digests
    # the generation), dataclasses with inspect, and socket with selectors (the channel
    # is a C-level _socket.socket). And discovery: a worker imports the one frozen
    # target, it never reads package metadata or entry points (seed 000).
    banned = {"hashlib", "_hashlib", "dataclasses", "inspect", "socket", "selectors"}
    banned |= {
        "importlib.metadata",
        "coretsia.supervisor.entry_points",
        "coretsia.supervisor.task_sources",
    }
    assert modules & banned == set()


def _read_line(stream: object, timeout: float) -> bytes:
    assert hasattr(stream, "fileno")
    assert hasattr(stream, "readline")
    ready, _, _ = select.select([stream], [], [], timeout)
    assert ready, "no output within the wait"
    line: bytes = stream.readline()
    return line


@pytest.fixture
def quickstart(tmp_path: Path) -> Path:
    """A copy of docs/examples/quickstart, so the test never writes into the repository."""
    project = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, project, ignore=shutil.ignore_patterns("var", "__pycache__"))
    return project


def test_quickstart_example_boots_and_works(quickstart: Path) -> None:
    from coretsia.sources.sqlite_queue import SqliteQueue
    from coretsia.supervisor.config import load_config
    from coretsia.supervisor.task_sources import generation_spec

    publish(quickstart, generation_spec(quickstart, load_config(quickstart)))
    with SqliteQueue(str(quickstart / "var/queue.sqlite3")) as queue:
        queue.enqueue(["hello"])
    with Launcher(quickstart, slot=0) as launcher:
        assert launcher.next_frame() == Ready()
        line = _read_line(launcher.proc.stdout, WAIT)
        launcher.stop()
        outcome = launcher.finish()
    assert line.endswith(b": 'hello' has 5 letters\n")
    assert (outcome.code, outcome.frames) == (0, [Ready()])


# --- the heartbeat ---------------------------------------------------------------------

HEARTBEAT_MS = 300


def _thread_ids(pid: int) -> list[int]:
    return sorted(thread.id for thread in psutil.Process(pid).threads())


def _blocked_signals(pid: int, tid: int) -> int:
    """The signal mask of one thread of ``pid`` (Linux's ``SigBlk``)."""
    for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines():
        if line.startswith("SigBlk:"):
            return int(line.split()[1], 16)
    raise AssertionError("no SigBlk line")


def _silent_for(launcher: Launcher, seconds: float) -> bool:
    """Whether nothing arrives on the channel for ``seconds`` (a negative observation)."""
    return not select.select([launcher.channel], [], [], seconds)[0]


def test_off_no_heartbeat_no_thread_no_import(root: Path) -> None:
    """heartbeat_timeout_ms = 0 (the default): ready alone, one thread, and the heartbeat
    code is never imported."""
    publish(root, _spec(heartbeat_timeout_ms=0))
    with Launcher(root, python_flags=("-X", "importtime")) as launcher:
        assert launcher.next_frame() == Ready()
        assert len(_thread_ids(launcher.proc.pid)) == 1
        assert _silent_for(launcher, HEARTBEAT_MS * 2 / 1000)
        launcher.stop()
        outcome = launcher.finish()
    assert (outcome.code, outcome.frames) == (0, [Ready()])
    lines = outcome.stderr.decode().splitlines()
    modules = {ln.rsplit("|", 1)[1].strip() for ln in lines if ln.startswith("import time:")}
    assert "coretsia.supervisor.worker.channel" in modules
    assert {"coretsia.supervisor.worker.heartbeat", "threading"} & modules == set()


def test_beats_from_ready_on_in_a_thread_that_blocks_every_signal(root: Path) -> None:
    """On: a heartbeat right after ready, then every third of the timeout, from one more
    thread, which leaves the process's signals to the main thread."""
    publish(root, _spec(heartbeat_timeout_ms=HEARTBEAT_MS))
    with Launcher(root) as launcher:
        assert launcher.next_frame() == Ready()
        assert launcher.next_frame() == Heartbeat()
        beats = [time.monotonic()]
        while len(beats) < 4:
            assert launcher.next_frame() == Heartbeat()
            beats.append(time.monotonic())
        gaps = [b - a for a, b in itertools.pairwise(beats)]
        assert all(0.05 < gap < HEARTBEAT_MS / 1000 for gap in gaps), gaps
        pid = launcher.proc.pid
        main, beating = _thread_ids(pid)
        assert main == pid
        term = 1 << (signal.SIGTERM - 1)
        assert _blocked_signals(pid, beating) & term
        assert not _blocked_signals(pid, main) & term
        launcher.stop()
        outcome = launcher.finish()
    assert outcome.code == 0
    assert outcome.frames[0] == Ready()
    assert set(outcome.frames[1:]) == {Heartbeat()}
    _quiet(outcome)


@pytest.mark.parametrize("busy", [True, False], ids=["python", "sleep"])
def test_a_task_ten_times_the_timeout_keeps_beating(root: Path, busy: bool) -> None:
    """A task busy in Python bytecode, or asleep in C, for ten timeouts: the beats go on,
    never further apart than the timeout."""
    options = {"task_ms": HEARTBEAT_MS * 10, "busy": busy}
    publish(
        root,
        _spec(
            task_source="sources:long_task",
            source_options=options,
            heartbeat_timeout_ms=HEARTBEAT_MS,
        ),
    )
    with Launcher(root) as launcher:
        assert launcher.next_frame() == Ready()
        wait_for(lambda: "run" in _calls(root))
        beats = [time.monotonic()]
        while "complete" not in _calls(root):
            assert launcher.next_frame() == Heartbeat()
            beats.append(time.monotonic())
        launcher.stop()
        outcome = launcher.finish()
    gaps = [b - a for a, b in itertools.pairwise(beats)]
    assert len(gaps) >= 15, gaps  # about 30 in three seconds
    assert max(gaps) < HEARTBEAT_MS / 1000, gaps
    assert outcome.code == 0
    _quiet(outcome)
