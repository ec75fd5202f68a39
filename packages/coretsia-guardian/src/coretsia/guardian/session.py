"""The guardian's conversation with its supervisor, from handshake to release."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

import trio

from coretsia.guardian import leftovers
from coretsia.guardian._version import __version__
from coretsia.guardian.containers import prepare_container
from coretsia.guardian.runtime import run_generation
from coretsia.guardian.supervisor_link import SupervisorLink
from coretsia.worker_protocol import lock, trusted_paths
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import WorkerConfigError, WorkerStartFailedError
from coretsia.worker_protocol.internal.guardian import (
    GuardianFrame,
    Hello,
    Locked,
    Refused,
    Released,
    Welcome,
)
from coretsia.worker_protocol.internal.runtime.logs import configure, event
from coretsia.worker_protocol.internal.runtime.subreaper import become_subreaper
from coretsia.worker_protocol.lifecycle import FENCE_PATH, LOCK_PATH

HANDSHAKE_TIMEOUT_S = 30.0
"""How long the guardian waits for ``hello`` before giving up on its supervisor."""


def run(channel_fd: int) -> int:
    """Run the guardian on an inherited channel; returns the exit status."""
    return trio.run(_run, channel_fd)


async def _run(channel_fd: int) -> int:
    link = SupervisorLink.from_fd(channel_fd)
    try:
        hello: GuardianFrame | None = None
        try:
            with trio.move_on_after(HANDSHAKE_TIMEOUT_S):
                hello = await link.receive()
        except WorkerStartFailedError as exc:  # another version: refused is the one answer
            await link.send(Refused(reason=exc.reason))
            return 1
        if not isinstance(hello, Hello):
            return 1
        os.umask(hello.umask)
        configure("json" if hello.log_json else "text")
        try:
            prepare_container(hello.containment)  # before the guardian's first thread
        except OSError:
            await link.send(Refused(reason=Reason.CONTAINMENT_FAILED))
            return 1
        await link.send(Welcome(peer_version=__version__, pid=os.getpid()))
        become_subreaper()
        claim = await _claim_lock(hello)
        if isinstance(claim, Reason):
            await link.send(Refused(reason=claim))
            return 1
        lock_fd, fence_fd = claim
        try:
            try:
                await link.send(Locked())
                await run_generation(link, hello, fence_fd)
            finally:
                os.close(fence_fd)
        finally:
            os.close(lock_fd)  # the lock is released last, after every worker is gone
        await link.send(Released())
        event("guardian.released")
        return 0
    finally:
        link.close()


async def _claim_lock(hello: Hello) -> tuple[int, int] | Reason:
    """The lock and the generation fence, or why the guardian must refuse the claim.

    Between the two, under the lock, whatever earlier generations of this root left
    behind is killed (:mod:`coretsia.guardian.leftovers`): a new generation never runs
    beside an old one's process.
    """
    try:
        lock_fd = _trusted(lock.acquire, LOCK_PATH)
    except (OSError, WorkerConfigError):  # not a busy lock: cannot be created, locked, trusted
        return Reason.LIFECYCLE_LOCK_FAILED
    if lock_fd is None:
        return Reason.ALREADY_RUNNING
    budget_s = hello.force_kill_timeout_ms / 1000
    killed = await trio.to_thread.run_sync(leftovers.clear, hello.root_id, budget_s)
    if killed is None:
        os.close(lock_fd)
        return Reason.GENERATION_UNKILLABLE
    if killed:
        event("guardian.left-behind-killed", logging.WARNING, count=killed)
    try:
        fence_fd = _claim_fence()
    except (OSError, WorkerConfigError):
        os.close(lock_fd)
        return Reason.LIFECYCLE_LOCK_FAILED
    if fence_fd is None:
        # The lock was free but a previous generation's processes still hold the fence
        # (its guardian was killed, and they could not be recognised): no overlap, ever.
        os.close(lock_fd)
        return Reason.GENERATION_DRAINING
    return lock_fd, fence_fd


def _claim_fence() -> int | None:
    """Take the generation fence under the lock, unless old workers still hold it."""
    if lock.probe(FENCE_PATH):
        return None
    return _trusted(lock.acquire_shared, FENCE_PATH)


def _trusted(acquire: Callable[[str], int | None], path: str) -> int | None:
    """Take a lock file, only in trusted directories and only if what was opened is
    trusted (:mod:`~coretsia.worker_protocol.trusted_paths`); ``start`` checked all this
    already, so a refusal here means the root changed since (``LIFECYCLE_LOCK_FAILED``).
    """
    trusted_paths.check_path(os.path.dirname(os.path.dirname(path)), trusted_paths.VAR_DIR)
    trusted_paths.check_path(os.path.dirname(path), trusted_paths.RUNTIME_DIR)
    fd = acquire(path)
    if fd is not None:
        try:
            trusted_paths.check_fd(fd, trusted_paths.LOCK_FILE)
        except WorkerConfigError:
            os.close(fd)
            raise
    return fd
