"""The early guardian: adopted only for its own root and environment, else let go: killed
if it never got ``hello``, released through its channel if it did."""

from __future__ import annotations

import os
from pathlib import Path

import trio
from internal_pairs import hello
from pools import wait_for

from coretsia.supervisor.daemon.guardian_process import EarlyGuardian, GuardianProcess, guardian_env
from coretsia.worker_protocol import lock
from coretsia.worker_protocol.internal.guardian_conversation import SupervisorEnd
from coretsia.worker_protocol.lifecycle import LOCK_PATH, RUNTIME_DIR


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _process(early: EarlyGuardian) -> GuardianProcess:
    process = early._process
    assert process is not None  # spawned
    return process


def test_nothing_to_adopt_when_the_early_spawn_failed(tmp_path: Path) -> None:
    """An early guardian whose spawn failed hands over nothing: the link spawns its own."""
    with EarlyGuardian(tmp_path, guardian_env(os.environ), None) as nothing:
        assert nothing.take(tmp_path, guardian_env(os.environ)) is None


def test_the_early_guardian_is_adopted_once(tmp_path: Path) -> None:
    """Same root, same environment: the early guardian is handed over, and only once."""
    with EarlyGuardian.spawn(tmp_path, os.environ) as early:
        adopted = early.take(tmp_path, guardian_env(os.environ))
        assert adopted is not None
        try:
            assert early.take(tmp_path, guardian_env(os.environ)) is None
        finally:
            adopted.kill()


def test_a_guardian_for_another_environment_is_killed(tmp_path: Path) -> None:
    """An early guardian that does not match what the launch asks for is not used."""
    with EarlyGuardian.spawn(tmp_path, os.environ) as early:
        pid = _process(early).pid
        other = {**guardian_env(os.environ), "CORETSIA_TEST_OTHER": "1"}
        assert early.take(tmp_path, other) is None
        assert not _alive(pid)  # killed and reaped


def test_an_unadopted_guardian_is_discarded(tmp_path: Path) -> None:
    """A start that ends before the launch (leaving the block) kills and reaps its early
    guardian."""
    with EarlyGuardian.spawn(tmp_path, os.environ) as early:
        process = _process(early)
    assert not _alive(process.pid)
    assert early._process is None


def test_a_guardian_that_got_hello_is_let_go_through_its_channel(tmp_path: Path) -> None:
    """``hello`` sent early, then the start ends before the launch: the guardian, which
    claimed the lock, is not SIGKILLed but let go as a lost supervisor lets it go; it
    exits on its own and the lock is free."""
    from coretsia.supervisor.shared._version import __version__

    (tmp_path / RUNTIME_DIR).mkdir(parents=True)
    with EarlyGuardian.spawn(tmp_path, os.environ) as early:
        process = _process(early)
        early.send(SupervisorEnd().send(hello(__version__)))
        assert process.sent is not None
        wait_for(lambda: lock.probe(str(tmp_path / LOCK_PATH)))  # claimed
    assert process._popen.returncode not in (None, -9)  # it exited, not killed
    assert not lock.probe(str(tmp_path / LOCK_PATH))


async def test_wait_reaps_a_guardian_that_lost_its_supervisor(tmp_path: Path) -> None:
    """Closing the channel before hello makes the guardian exit; wait reaps it."""
    process = GuardianProcess.start(tmp_path, guardian_env(os.environ))
    process.channel.close()
    with trio.fail_after(30):
        status = await process.wait()
    assert status == 1  # no hello: the guardian gives up with status 1
    assert not _alive(process.pid)
