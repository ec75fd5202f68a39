"""The launcher's command-line contract with its spawner: a wrong, unknown or duplicate argument
exits 2 with no frame and no output; a missing or wrong parent pid, and a spawner that dies,
leave no worker behind.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from launcher_harness import (
    CHANNEL,
    STOP,
    WAIT,
    assert_quiet,
    contract_argv,
    launch,
    launch_spec,
    read_line,
    recorded_calls,
)

from coretsia.supervisor.generation.published import publish
from coretsia.worker_protocol.worker_channel import Ready, decode_worker_frame

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
    publish(root, launch_spec())
    outcome = launch(root, argv=contract_argv(extra=extra))
    assert (outcome.code, outcome.frames) == (2, [])
    assert_quiet(outcome)


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
        {"generation": None},
        {"generation": ""},
        {"generation": "0123456789abcdef-000001-0123456789abcdef"},  # an id without fingerprint
        {"generation": "x:" + "0" * 64},
    ],
)
def test_bad_contract_exits_2(root: Path, tmp_path: Path, changes: dict[str, str | None]) -> None:
    publish(root, launch_spec())
    (tmp_path / "outside").mkdir()
    (root / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    outcome = launch(root, argv=contract_argv(changes))
    assert (outcome.code, outcome.frames) == (2, [])
    assert_quiet(outcome)


def test_missing_parent_pid_exits_2(root: Path) -> None:
    publish(root, launch_spec())
    outcome = launch(root, parent_pid="")
    assert (outcome.code, outcome.frames) == (2, [])
    assert_quiet(outcome)


def test_parent_pid_mismatch_exits_1_without_ready(root: Path) -> None:
    """The spawner died before the watch was armed: leave at once, boot nothing."""
    publish(root, launch_spec())
    outcome = launch(root, parent_pid="1")
    assert (outcome.code, outcome.frames) == (1, [])
    assert_quiet(outcome)
    assert recorded_calls(root) == []


INTERMEDIATE = """
import os, subprocess, sys
channel_fd, stop_fd, pin = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
env = dict(os.environ, CORETSIA_WORKER_PARENT_PID=str(os.getpid()))
worker = subprocess.Popen(
    [sys.executable, "-m", "coretsia.supervisor.worker_side.launcher",
     "--coretsia-worker-artifact-root=var/generations", "--coretsia-worker-slot=0",
     f"--coretsia-worker-generation={pin}",
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
    pin = publish(root, launch_spec())
    channel, child_channel = socket.socketpair()
    stop_read, stop_write = os.pipe()
    spawner = subprocess.Popen(
        [sys.executable, "-c", INTERMEDIATE, str(child_channel.fileno()), str(stop_read), pin],
        cwd=root,
        pass_fds=(child_channel.fileno(), stop_read),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    child_channel.close()
    os.close(stop_read)
    try:
        assert spawner.stdout is not None
        worker_pid = int(read_line(spawner.stdout, WAIT))
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
