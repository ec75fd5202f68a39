"""The supervisor's side of the guardian handshake, against a scripted peer."""

from __future__ import annotations

import contextlib
import socket
from types import SimpleNamespace
from typing import Any, cast

import pytest
import trio
from internal_pairs import hello

from coretsia.supervisor.daemon.guardian_link import GuardianLink
from coretsia.supervisor.daemon.guardian_process import TREE_ENV, TREE_MARK, guardian_env
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    WorkerAlreadyRunningError,
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.internal.guardian import (
    GuardianFrame,
    Hello,
    Locked,
    Refused,
    Welcome,
    encode_guardian_frame,
)
from coretsia.worker_protocol.internal.guardian_conversation import SupervisorEnd
from coretsia.worker_protocol.internal.runtime.channel import FramedChannel
from coretsia.worker_protocol.vocabulary import Containment, Driver

HELLO = Hello(
    peer_version="0.1.0",
    driver=Driver.FORK,
    stop_timeout_ms=1000,
    force_kill_timeout_ms=500,
    umask=0o022,
    log_json=False,
    containment=Containment.PROCESS,
    root_id="0" * 16,
)


async def _handshake_against(*answers: GuardianFrame, sent: bytes | None = None) -> bytes:
    """Run the supervisor's handshake against a peer whose answers are already queued;
    what the peer received. ``sent``: written before the link existed, as
    :meth:`~coretsia.supervisor.daemon.guardian_process.EarlyGuardian.send` writes ``hello``."""
    a, b = socket.socketpair()
    if sent is not None:
        a.sendall(sent)
    ours = FramedChannel(trio.socket.from_stdlib_socket(a))
    link = GuardianLink(cast(Any, SimpleNamespace(sent=sent)), ours)
    try:
        for frame in answers:
            b.sendall(encode_guardian_frame(frame))
        with trio.fail_after(10):
            await link._handshake(HELLO)
    finally:
        ours.close()
        received = _drained(b)
        b.close()
    return received


def _drained(sock: socket.socket) -> bytes:
    """Everything ``sock`` received until the other end closed (or reset: it closed with
    our answers unread)."""
    received = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            received += chunk
    return received


def _hello() -> bytes:
    return SupervisorEnd().send(HELLO)


class TestHandshake:
    async def test_guardian_of_another_version_is_refused(self) -> None:
        """The supervisor refuses a guardian whose version differs from its own."""
        with pytest.raises(WorkerStartFailedError) as info:
            await _handshake_against(Welcome(peer_version="0.0.0-other", pid=1))
        assert info.value.reason is Reason.PEER_VERSION_MISMATCH

    async def test_matching_guardian_is_accepted(self) -> None:
        """A guardian of the same version that claims the lock completes the handshake;
        it heard ``hello``, once."""
        received = await _handshake_against(Welcome(peer_version="0.1.0", pid=1), Locked())
        assert received == _hello()

    async def test_a_hello_sent_early_is_not_sent_again(self) -> None:
        """``hello`` written before trio (the same bytes) is the handshake's ``hello``."""
        received = await _handshake_against(
            Welcome(peer_version="0.1.0", pid=1), Locked(), sent=_hello()
        )
        assert received == _hello()

    async def test_another_hello_sent_early_fails_the_start(self) -> None:
        """A guardian that got another ``hello`` early is not this generation's."""
        other = SupervisorEnd().send(hello("0.0.0-other"))
        with pytest.raises(WorkerLifecycleFailedError) as info:
            await _handshake_against(Welcome(peer_version="0.1.0", pid=1), sent=other)
        assert info.value.reason is Reason.LIFECYCLE_FAILED

    async def test_refused_lock_is_already_running(self) -> None:
        """A refused lock claim becomes ALREADY_RUNNING."""
        with pytest.raises(WorkerAlreadyRunningError):
            await _handshake_against(
                Welcome(peer_version="0.1.0", pid=1), Refused(reason=Reason.ALREADY_RUNNING)
            )

    async def test_unexpected_answer(self) -> None:
        """Anything but welcome is a process-host failure."""
        with pytest.raises(WorkerLifecycleFailedError) as info:
            await _handshake_against(Locked())
        assert info.value.reason is Reason.PROCESS_HOST_FAILED


def test_service_manager_variables_are_not_inherited() -> None:
    """NOTIFY_SOCKET and friends never reach the guardian or the workers; the tree mark
    (what the sweep after a lost guardian goes by) always does."""
    env = guardian_env(
        {
            "NOTIFY_SOCKET": "/run/x",
            "WATCHDOG_USEC": "1",
            "LISTEN_FDS": "1",
            "LISTEN_PID": "1",
            "WATCHDOG_PID": "1",
            "PATH": "/bin",
        }
    )
    assert env == {"PATH": "/bin", TREE_ENV: TREE_MARK}
