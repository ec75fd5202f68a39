"""What earlier generations of this root left behind, killed before a new one may run.

A generation whose guardian and supervisor were both killed may leave processes that
nobody is left to stop: a task's ``setsid`` child that closed every descriptor holds
neither the lock nor the fence, so without this a new generation would run beside it.
At every containment level the new guardian therefore looks, under the lock and before
it claims the fence, for two kinds of leftovers of its own root and kills them:

- the cgroups of earlier generations (``cgroup`` level: named after the root, see
  :mod:`~coretsia.worker_protocol.internal.runtime.cgroup`), killed whole;
- every process whose environment carries this root's mark (:data:`ROOT_ENV`, given to
  everything a generation spawns), the ``process`` level: this finds whatever kept its
  environment, at any level, by whatever means it escaped.

Only under the lock: a guardian still draining its generation holds the lock, so what
it contains is never "left behind" (that start is refused ``worker-already-running``).
A guardian's own environment has no mark (only its children get it), so the guardian of
a concurrent ``start``, not yet refused, is never taken for a leftover.

What cannot be killed (another user's process, one stuck in uninterruptible sleep past
the force-kill budget) refuses the start with ``worker-generation-unkillable``. What
cannot be recognised (an environment cleared or unreadable) is not touched; if it holds
the fence the start is still refused ``worker-generation-draining``.
"""

from __future__ import annotations

import os
import time
from typing import Final

import psutil

from coretsia.worker_protocol.internal.runtime import cgroup

ROOT_ENV: Final = "CORETSIA_WORKER_ROOT"
"""Set by the guardian on everything it spawns: the root's identity (see ``Hello.root_id``)."""

_POLL_S: Final = 0.01


def clear(root_id: str, budget_s: float) -> int | None:
    """Kill what earlier generations of this root left; how many, or None if some resisted.

    Blocking (run it in a thread): it reads every process's environment and waits up
    to ``budget_s`` for what it killed to be gone.
    """
    cgroups_cleared = _clear_cgroups(root_id, budget_s)
    marked = _marked(root_id)
    for proc in marked:
        try:
            proc.kill()  # psutil checks the process's identity first
        except psutil.NoSuchProcess:
            continue
        except psutil.AccessDenied:
            return None
    if not _wait_gone(marked, budget_s) or not cgroups_cleared:
        return None
    return len(marked)


def _clear_cgroups(root_id: str, budget_s: float) -> bool:
    parent = cgroup.base()
    if parent is None:
        return True
    left = cgroup.GenerationCgroup.left_behind(parent, root_id)
    return all(group.kill(budget_s) and group.remove() for group in left)


def _marked(root_id: str) -> list[psutil.Process]:
    """Every live process (but us) whose environment carries this root's mark.

    Decided by psutil, which records each process's identity, but only for the processes
    whose environment holds the mark at all (:func:`_carrying`): this scan runs at every
    start, over every process of the machine, and psutil reads each one's environment at
    about three times the cost of reading ``/proc`` (measured:
    ``docs/performance.md#timings-the-code-refers-to``).
    """
    found = []
    for pid in _carrying(f"{ROOT_ENV}={root_id}".encode()):
        try:
            proc = psutil.Process(pid)
            if proc.environ().get(ROOT_ENV) == root_id and is_live(proc):
                found.append(proc)
        except psutil.Error:
            continue  # gone, a zombie, or not ours to read: not known to be a leftover
    return found


def _carrying(entry: bytes) -> list[int]:
    """The pids (but ours) whose ``/proc/<pid>/environ`` holds ``entry`` as a whole entry.

    Unreadable environments (gone, a zombie's, not ours) are skipped, as psutil's
    ``environ()`` errors are.
    """
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                block = environ.read()
        except OSError:
            continue
        if entry in block.split(b"\0"):
            found.append(int(name))
    return found


def is_live(proc: psutil.Process) -> bool:
    """Alive and still the same process (psutil compares its creation time), not a zombie."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait_gone(procs: list[psutil.Process], budget_s: float) -> bool:
    """Wait until each is gone or a zombie (not our child: its own parent reaps it)."""
    deadline = time.monotonic() + budget_s
    while any(is_live(proc) for proc in procs):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)
    return True
