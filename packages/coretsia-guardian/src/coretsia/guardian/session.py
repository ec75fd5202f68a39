"""The guardian's conversation with its supervisor, from handshake to release."""

from __future__ import annotations

import os

import trio

from coretsia.guardian._version import __version__
from coretsia.guardian.runtime import receive_frame, run_generation
from coretsia.worker_protocol import lock
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import WorkerStartFailedError
from coretsia.worker_protocol.internal.guardian import (
    Hello,
    Locked,
    Refused,
    Released,
    Welcome,
    encode_guardian_frame,
)
from coretsia.worker_protocol.internal.handshake import check_peer_version
from coretsia.worker_protocol.internal.runtime.channel import FramedChannel
from coretsia.worker_protocol.internal.runtime.logs import configure, event
from coretsia.worker_protocol.internal.runtime.subreaper import become_subreaper
from coretsia.worker_protocol.lifecycle import FENCE_PATH, LOCK_PATH

HANDSHAKE_TIMEOUT_S = 30.0
"""How long the guardian waits for ``hello`` before giving up on its supervisor."""


def run(channel_fd: int) -> int:
    """Run the guardian on an inherited channel; returns the exit status."""
    return trio.run(_run, channel_fd)


async def _run(channel_fd: int) -> int:
    channel = FramedChannel.from_fd(channel_fd)
    try:
        with trio.move_on_after(HANDSHAKE_TIMEOUT_S):
            hello = await receive_frame(channel)
        if not isinstance(hello, Hello):
            return 1
        try:
            check_peer_version(__version__, hello.peer_version)
        except WorkerStartFailedError as exc:
            await _send(channel, Refused(reason=exc.reason))
            return 1
        os.umask(hello.umask)
        configure("json" if hello.log_json else "text")
        await _send(channel, Welcome(peer_version=__version__, pid=os.getpid()))
        become_subreaper()
        try:
            lock_fd = lock.acquire(LOCK_PATH)
        except OSError:  # not a busy lock: the file cannot be created or locked at all
            await _send(channel, Refused(reason=Reason.LIFECYCLE_LOCK_FAILED))
            return 1
        if lock_fd is None:
            await _send(channel, Refused(reason=Reason.ALREADY_RUNNING))
            return 1
        try:
            try:
                fence_fd = _claim_fence()
            except OSError:
                await _send(channel, Refused(reason=Reason.LIFECYCLE_LOCK_FAILED))
                return 1
            if fence_fd is None:
                # The lock was free but a previous generation's workers still hold the
                # fence (its guardian was killed): no overlap, ever.
                await _send(channel, Refused(reason=Reason.GENERATION_DRAINING))
                return 1
            try:
                await _send(channel, Locked())
                await run_generation(channel, hello, fence_fd)
            finally:
                os.close(fence_fd)
        finally:
            os.close(lock_fd)  # the lock is released last, after every worker is gone
        await _send(channel, Released())
        event("guardian.released")
        return 0
    finally:
        channel.close()


def _claim_fence() -> int | None:
    """Take the generation fence under the lock, unless old workers still hold it."""
    if lock.probe(FENCE_PATH):
        return None
    return lock.acquire_shared(FENCE_PATH)


async def _send(
    channel: FramedChannel, frame: Hello | Welcome | Refused | Locked | Released
) -> None:
    try:
        await channel.send(encode_guardian_frame(frame))
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
        pass
