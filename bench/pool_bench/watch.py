"""Waiting for processes to end and for a pool's lock to be free, without polling pids."""

from __future__ import annotations

import os
import select
import time
from pathlib import Path

from coretsia.worker_protocol import lock
from coretsia.worker_protocol.lifecycle import LOCK_PATH


class Watch:
    """pidfds of processes, opened before they are made to exit (no pid reuse race)."""

    def __init__(self, pids: list[int]) -> None:
        self.fds: dict[int, int] = {}
        for pid in pids:
            try:
                self.fds[os.pidfd_open(pid)] = pid
            except ProcessLookupError:
                continue

    def wait(self, deadline: float) -> list[int]:
        """Block until every process exited (or the deadline); the pids still alive."""
        poller = select.poll()
        for fd in self.fds:
            poller.register(fd, select.POLLIN)
        left = set(self.fds)
        while left:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            for fd, _ in poller.poll(remaining * 1000):
                poller.unregister(fd)
                left.discard(fd)
        return sorted(self.fds[fd] for fd in left)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()


def wait_lock_free(root: Path, deadline: float) -> bool:
    path = str(root / LOCK_PATH)
    while lock.probe(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0005)
    return True
