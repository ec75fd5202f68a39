"""The generation's container, per containment level: set up before the first spawn,
torn down at the end of the shutdown.

- ``process``: nothing to set up; what escapes is found by the next ``start``
  (:mod:`coretsia.guardian.leftovers`).
- ``cgroup``: the guardian moves itself into a fresh cgroup of the generation before it
  spawns anything, so everything the generation starts is born inside; at the end it
  moves back out, kills the cgroup whole and removes it.
- ``namespace``: the spawner thread enters a new PID (and mount) namespace (any user but
  root, inside a user namespace the guardian entered first: :func:`prepare_container`),
  and its first child is the namespace's init (:mod:`coretsia.guardian.pid_init`), which
  dies with the guardian (its parent-death signal) and takes every process inside with
  it, whatever killed the guardian. The guardian stays outside: the pids it sees, spawns,
  signals and reaps are its own namespace's, as before. Children it spawns inside see
  their parent as pid 0 (it is outside their namespace), which is what the parent-death
  check is told to expect.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Final

import psutil
import trio

from coretsia.guardian.leftovers import is_live
from coretsia.guardian.spawner import Spawner, SpawnRequest
from coretsia.worker_protocol.internal.runtime import cgroup, pidns, userns
from coretsia.worker_protocol.parent_watch import PARENT_PID_ENV
from coretsia.worker_protocol.vocabulary import Containment

INIT_TIMEOUT_S: Final = 30.0
"""Bound on the namespace init's start (an interpreter) until its ``/proc`` is mounted."""

INIT_MODULE: Final = "coretsia.guardian.pid_init"

_POLL_S: Final = 0.005


class Container:
    """The ``process`` level, and the surface every level offers the guardian's runtime."""

    def __init__(self) -> None:
        self.parent_pid = os.getpid()
        """What a child the guardian spawns sees as its parent's pid (``getppid()``)."""

    def helper_pids(self) -> frozenset[int]:
        """Processes of the container itself, which the shutdown phases must spare."""
        return frozenset()

    def outer_pid(self, parent: int, pid: int) -> int:
        """The guardian's pid for a process its child ``parent`` reports as ``pid``."""
        return pid

    async def ready(self) -> None:
        """Wait until a worker may start inside (the ``namespace`` level's ``/proc``);
        OSError if it never may. Every level but ``namespace`` is ready once open."""

    async def end(self, budget_s: float) -> None:
        """Once the shutdown phases are over: kill what is left inside, and let go."""


class CgroupContainer(Container):
    """The generation's own cgroup, with the guardian in it until the end."""

    def __init__(self, group: cgroup.GenerationCgroup, parent: Path) -> None:
        super().__init__()
        self._group = group
        self._parent = parent

    @classmethod
    def open(cls, root_id: str) -> CgroupContainer:
        """Make the cgroup and move in; OSError if the kernel refuses either."""
        parent = cgroup.base()
        if parent is None:
            raise FileNotFoundError("cgroup2")
        group = cgroup.GenerationCgroup.named(parent, root_id, os.getpid())
        group.create()
        try:
            group.enter()
        except OSError:
            group.remove()
            raise
        return cls(group, parent)

    async def end(self, budget_s: float) -> None:
        try:
            cgroup.leave(self._parent)
        except OSError:
            return  # still inside: killing the cgroup would kill us; the next start does
        await trio.to_thread.run_sync(self._group.kill, budget_s)
        self._group.remove()


class NamespaceContainer(Container):
    """A PID namespace entered by the spawner thread, and its init."""

    def __init__(self, init_pid: int, mounted: int) -> None:
        super().__init__()
        self.parent_pid = 0  # the guardian is outside its children's namespace
        self._init = init_pid
        self._mounted: int | None = mounted
        """The read end of the pipe on which the init says its ``/proc`` is mounted."""
        try:
            self._init_process: psutil.Process | None = psutil.Process(init_pid)
        except psutil.Error:
            self._init_process = None  # already gone: its namespace with it

    @classmethod
    async def open(cls, spawner: Spawner, env: dict[str, str]) -> NamespaceContainer:
        """Enter the namespace on the spawner thread and start its init (:meth:`ready`
        waits for its ``/proc``); OSError if refused."""
        await spawner.call(pidns.unshare_for_children)
        mounted, mounted_w = os.pipe()
        try:
            init = await _spawn_init(spawner, env, mounted_w)
        except BaseException:
            os.close(mounted)
            raise
        finally:
            os.close(mounted_w)
        return cls(init, mounted)

    async def ready(self) -> None:
        """Wait (bounded) until the init mounted the namespace's ``/proc``: a worker's
        ``os.getpid()`` and ``/proc/<pid>`` must agree from its first instant. Until then
        the guardian may start the fork server inside (it forks nothing before it is
        asked), so that its interpreter boots meanwhile."""
        fd, self._mounted = self._mounted, None
        if fd is None:
            return
        try:
            with trio.move_on_after(INIT_TIMEOUT_S) as waited:
                await trio.lowlevel.wait_readable(fd)
            mounted = not waited.cancelled_caught and os.read(fd, 1) == b"1"
        finally:
            os.close(fd)
        if not mounted:
            self.kill_init()
            raise ChildProcessError("the namespace init did not start")

    def helper_pids(self) -> frozenset[int]:
        return frozenset({self._init})

    def outer_pid(self, parent: int, pid: int) -> int:
        """Look ``pid`` (as seen inside the namespace) up among ``parent``'s children.

        The proc host runs inside and reports its workers' pids as it sees them; the
        last ``NSpid`` entry of a process's status is its pid in its own namespace.
        """
        try:
            children = psutil.Process(parent).children()
        except psutil.Error:
            return pid
        for child in children:
            if _innermost_pid(child.pid) == pid:
                return child.pid
        return pid  # already gone (its exit is reported by slot, not pid)

    def kill_init(self) -> None:
        """SIGKILL the init (psutil checks it is still the same process first)."""
        if self._init_process is not None:
            try:
                self._init_process.kill()
            except psutil.Error:
                pass

    async def end(self, budget_s: float) -> None:
        """SIGKILL the init: the kernel kills whatever is still inside; wait until it died."""
        self.kill_init()
        with trio.move_on_after(budget_s):
            while self._init_process is not None and is_live(self._init_process):
                await trio.sleep(_POLL_S)


async def _spawn_init(spawner: Spawner, env: dict[str, str], ready_w: int) -> int:
    """Start the namespace's init, which must keep ``CAP_SYS_ADMIN`` to mount its ``/proc``.

    Root keeps it across ``execve``; any other user (in a user namespace of the
    guardian's own) only as an ambient capability, raised on the spawner thread for this
    one spawn and cleared before the next.
    """
    argv = (sys.executable, "-m", INIT_MODULE)
    init_env = {**env, PARENT_PID_ENV: "0"}  # its parent is outside its namespace
    ambient = os.geteuid() != 0
    if ambient:
        await spawner.call(functools.partial(userns.ambient_admin, raised=True))
    try:
        return await spawner.spawn(SpawnRequest(argv, init_env, (ready_w,)))
    finally:
        if ambient:
            await spawner.call(functools.partial(userns.ambient_admin, raised=False))


def prepare_container(level: Containment) -> None:
    """What ``level`` needs while the guardian is still single-threaded (right after
    ``hello``); OSError if the kernel refuses.

    Without ``CAP_SYS_ADMIN``, the ``namespace`` level takes a user namespace of the
    guardian's own first (:mod:`~coretsia.worker_protocol.internal.runtime.userns`),
    which the kernel grants only to a single-threaded process.
    """
    if level is Containment.NAMESPACE and not userns.has_admin():
        userns.enter()


async def open_container(
    level: Containment, root_id: str, spawner: Spawner, env: dict[str, str]
) -> Container:
    """Set up the level's container before the generation's first spawn; OSError if refused."""
    if level is Containment.CGROUP:
        return CgroupContainer.open(root_id)
    if level is Containment.NAMESPACE:
        return await NamespaceContainer.open(spawner, env)
    return Container()


def _innermost_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        return None
    return None
