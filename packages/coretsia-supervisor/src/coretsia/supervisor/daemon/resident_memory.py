"""Each slot's resident memory, as ``status`` and the metrics endpoint report it.

Read with psutil from ``/proc/<pid>`` of the pids the guardian reported at ``spawned``
(its own namespace's view, the supervisor's too), never of a pid a worker would tell:
with the ``namespace`` containment a worker sees only its own namespace's numbers. The
slot keeps its worker's pid from ``spawned`` to ``exited``; a pid the kernel reused in
the instant between the guardian's reap and its report can only make one reading wrong.
"""

from __future__ import annotations

import psutil

from coretsia.supervisor.daemon.pool import Pool
from coretsia.worker_protocol.control import MAX_RSS_KIB


def slot_resident_bytes(pool: Pool) -> tuple[int | None, ...]:
    """Each slot's current worker's resident set size in bytes, in slot order; None for a
    slot without a worker now (spawning, exited) or one whose ``/proc`` cannot be read."""
    return tuple(_resident(slot.pid) for slot in pool.slots)


def slot_resident_kib(pool: Pool) -> tuple[int | None, ...]:
    """The same in KiB, as ``status`` carries it (bounded by the frame's limit)."""
    return tuple(
        None if size is None else min(size // 1024, MAX_RSS_KIB)
        for size in slot_resident_bytes(pool)
    )


def _resident(pid: int | None) -> int | None:
    if pid is None:
        return None
    try:
        rss: int = psutil.Process(pid).memory_info().rss
    except psutil.Error:
        return None  # gone meanwhile, or not ours to read
    return rss
