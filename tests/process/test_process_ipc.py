"""Seed 003's pool-wide IPC, run for real: ProcessManager pools whose entries talk.

Each test writes a small application into a fresh root and runs it with this
environment's interpreter, so the supervisor, the guardian and every entry worker are
real processes. The entries report what they saw in ``result.json``; the test checks
that and what is left on the machine afterwards (the IPC directory, the queue, any
process). Every wait is bounded; no process outlives its test.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from commands import run_process
from pools import install_app, processes_in, wait_for, wait_gone

from coretsia.supervisor.config import parse_config
from coretsia.supervisor.generation.spec import IpcRecord
from coretsia.supervisor.process import ProcessArgumentError, ProcessManager
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError

sysv_ipc = pytest.importorskip("sysv_ipc")

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc, uses SysV IPC")


@pytest.mark.parametrize("ipc_type", ["unixsock", "msgqueue"])
def test_a_blocked_send_ends_when_the_pool_stops(root: Path, ipc_type: str) -> None:
    """A send waiting for room never outlives the stop (SIGTERM reaches it too)."""
    configure(root)
    proc = subprocess.Popen(
        [sys.executable, "app.py", ipc_type, "0", "deaf", "flooder"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        # SIGTERM while starting would be an operator's cancel: wait for running first.
        assert proc.stdout is not None
        assert select.select([proc.stdout], [], [], 30)[0], "the pool did not start"
        assert proc.stdout.readline().startswith(b"running:")
        wait_for((root / "flooder.log").exists)  # no event announces a full buffer
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
    assert result(root) == {"blocked_send_ended": "PeerUnavailableError", "stopping": True}


@pytest.fixture
def root(short_root: Path) -> Path:
    """A short root with the app (``tests/support/apps/ipc_app.py``) as ``app.py``."""
    install_app(short_root, "ipc_app.py", "app.py")
    return short_root


def configure(root: Path, event_loop: str = "asyncio") -> None:
    (root / "coretsia.toml").write_text(
        "[worker]\n"
        f'event_loop = "{event_loop}"\n'
        "start_timeout_ms = 20000\n"
        "stop_timeout_ms = 3000\n"
        "force_kill_timeout_ms = 1000\n"
    )


def run_app(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``app.py`` to completion: ``start`` returns only after every worker is reaped."""
    return run_process([sys.executable, "app.py", *args], cwd=root, env=env, timeout=90)


def ipc_record(root: Path) -> IpcRecord:
    """The ``ipc`` record of the root's current generation (kept on disk after a stop)."""
    from coretsia.supervisor.generation.published import load_current_generation

    _, spec = load_current_generation(root, "var/generations")
    assert spec.ipc is not None
    return spec.ipc


def queue_exists(record: IpcRecord) -> bool:
    key, msqid = record.msgqueue_key, record.msgqueue_id
    assert key is not None
    try:
        return bool(sysv_ipc.MessageQueue(key).id == msqid)
    except sysv_ipc.ExistentialError:
        return False


def result(root: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((root / "result.json").read_text())
    return data


class TestExchange:
    @pytest.mark.parametrize(
        ("ipc_type", "ponger", "event_loop"),
        [
            ("unixsock", "ponger", "asyncio"),
            ("msgqueue", "ponger", "asyncio"),
            ("unixsock", "ponger_async", "trio"),
            ("msgqueue", "ponger_async", "asyncio"),
        ],
    )
    def test_entries_exchange_messages_then_everything_is_removed(
        self, root: Path, ipc_type: str, ponger: str, event_loop: str
    ) -> None:
        """Workers talk by id, a replaced one gets its endpoint back, and stop cleans up."""
        configure(root, event_loop)
        done = run_app(root, ipc_type, "0", "pinger", ponger)
        assert done.returncode == 0, done.stderr
        seen = result(root)
        assert "error" not in seen, seen
        assert seen["ipc_type"] == ipc_type
        replies = seen["replies"]
        assert isinstance(replies, list)
        (pid_one, size_one), (pid_two, size_two) = (r.split(":") for r in replies)
        assert (size_one, size_two) == ("3", "8192")
        assert pid_one != pid_two  # each answer came from a new worker of the same slot
        assert seen["empty"] is None
        assert seen["refused"] == ["MessageTooLargeError", "ProcessArgumentError"]
        ours, child = seen["ours"], seen["child"]
        assert isinstance(ours, list)
        assert isinstance(child, list)
        assert ours
        assert not set(ours) & set(child)  # the entry's own children inherit none of them
        record = ipc_record(root)
        if ipc_type == "unixsock":
            assert seen["dir_mode"] == "0o700"
            assert record == IpcRecord(unixsock_dir="var/tmp/worker.ipc")
            assert not (root / "var/tmp/worker.ipc").exists()
        else:
            assert seen["queue_mode"] == "0o600"
            assert not queue_exists(record)
            ipcs = subprocess.run(["ipcs", "-q"], capture_output=True, text=True, check=True)
            assert f" {record.msgqueue_id} " not in ipcs.stdout


class TestWithoutIpc:
    def test_none_refuses_messages_and_loads_nothing_of_ipc(self, root: Path) -> None:
        """With ipc_type none the API raises and no IPC module reaches the worker."""
        configure(root)
        done = run_app(root, "none", "0", "without_ipc")
        assert done.returncode == 0, done.stderr
        assert result(root) == {
            "ipc_type": "none",
            "refused": "IpcUnavailableError",
            "loaded": [],
        }


class TestRefusals:
    def test_socket_mode_is_refused_by_the_manager(self) -> None:
        """seed 003's socket mode needs a listen step this contract does not have."""
        with pytest.raises(ProcessArgumentError, match="socket IPC type is not supported"):
            ProcessManager(ipc_type="socket")
        with pytest.raises(ProcessArgumentError):
            ProcessManager().set_ipc_type("socket")

    def test_socket_mode_is_refused_by_the_config(self) -> None:
        """The same refusal from coretsia.toml names the key and the rule."""
        with pytest.raises(WorkerConfigError) as caught:
            parse_config({"ipc_type": "socket"})
        assert (caught.value.key, caught.value.rule) == ("worker.ipc_type", ConfigRule.NOT_ONE_OF)

    def test_missing_sysv_ipc_is_a_config_error_before_anything_starts(
        self, root: Path, tmp_path: Path
    ) -> None:
        """A real failing ``import sysv_ipc``: unavailable on worker.ipc_type, no process."""
        shim = tmp_path / "shim"
        shim.mkdir()
        (shim / "sysv_ipc.py").write_text('raise ImportError("no System V IPC here")\n')
        env = {**os.environ, "PYTHONPATH": str(shim)}
        configure(root)
        done = run_app(root, "msgqueue", "0", "quit_at_once", env=env)
        assert done.returncode == 1
        assert done.stdout.split() == [
            "failed:",
            "WorkerConfigError",
            "worker.ipc_type",
            "unavailable",
        ]
        assert not (root / "var").exists()  # no guardian, no lock, no generation
        assert not (root / "result.json").exists()

    def test_a_key_held_by_another_queue_is_refused_and_left_alone(self, root: Path) -> None:
        """A fixed key already in use is not taken over: duplicate on worker.msg_queue_key."""
        foreign = sysv_ipc.MessageQueue(None, sysv_ipc.IPC_CREX, mode=0o600)
        try:
            configure(root)
            done = run_app(root, "msgqueue", str(foreign.key), "quit_at_once")
            assert done.returncode == 1
            assert done.stdout.split()[-2:] == ["worker.msg_queue_key", "duplicate"]
            assert sysv_ipc.MessageQueue(foreign.key).id == foreign.id
            assert not (root / "result.json").exists()
        finally:
            foreign.remove()


class TestKilledSupervisor:
    def test_the_next_start_removes_the_queue_a_killed_supervisor_left(self, root: Path) -> None:
        """SIGKILL leaves the queue (the guardian knows no IPC); the next start removes it."""
        configure(root)
        proc = subprocess.Popen(
            [sys.executable, "app.py", "msgqueue", "0", "idle"],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            assert ready, "the pool did not start in time"
            assert proc.stdout.readline().startswith(b"running:")
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
            assert proc.stdout is not None
            proc.stdout.close()
        assert not wait_gone(root, timeout=20)  # the guardian contained the generation
        stale = ipc_record(root)
        assert queue_exists(stale)
        done = run_app(root, "msgqueue", "0", "quit_at_once")
        assert done.returncode == 0, done.stderr
        assert not queue_exists(stale)
        assert not queue_exists(ipc_record(root))
        assert not processes_in(root)


def test_a_send_to_a_removed_queue_is_peer_unavailable() -> None:
    """sysv_ipc reports a removed queue as EINVAL, like a message over msgmax: told apart."""
    from coretsia.supervisor.process import PeerUnavailableError
    from coretsia.supervisor.worker_side.entry_ipc import QueueEndpoint

    queue = sysv_ipc.MessageQueue(None, sysv_ipc.IPC_CREX, mode=0o600)
    endpoint = QueueEndpoint(queue.key, queue.id, 0, 1)
    try:
        endpoint.send(0, b"before")
        assert endpoint._queue.current_messages == 1
    finally:
        queue.remove()
    with pytest.raises(PeerUnavailableError):
        endpoint.send(0, b"after")
