"""The guardian of one worker generation: the processes and the bounded shutdown.

Rules of this module (everything that decides a worker's fate lives here):

1. The lock is taken before anything else may happen and released after everything
   else (see :mod:`coretsia.guardian.session`): ``locked`` is the first word about the
   generation, ``released`` the last.
2. The guardian alone starts, signals and reaps workers (through its driver backend). A
   worker's process group is signalled only while the worker is unreaped (its pid cannot
   have been reused); any other descendant only through psutil, which checks identity.
3. Shutdown is one procedure, run from a ``shutdown`` request or from the loss of the
   supervisor alike: cooperative stop (close the stop pipe), then SIGTERM, then SIGKILL,
   each bounded by the budgets received at the handshake. A supervisor that dies midway
   changes nothing.
4. The generation is gone when no descendant of the guardian is left (its own helper,
   the proc host, aside until the very end). Only then is the lock released, even if that
   takes longer than every budget.
"""

from __future__ import annotations

import logging
import math
import os
import signal
from typing import TYPE_CHECKING, Final

import psutil
import trio

from coretsia.guardian.backends import Backend, ForkBackend
from coretsia.guardian.containers import Container, open_container
from coretsia.guardian.leftovers import ROOT_ENV
from coretsia.guardian.reaper import reap_forever
from coretsia.guardian.spawner import Spawner
from coretsia.guardian.supervisor_link import SupervisorLink
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import WorkerError
from coretsia.worker_protocol.internal.guardian import (
    Drained,
    Exited,
    GenerationFailed,
    GuardianFrame,
    Hello,
    HostStarted,
    Phase,
    Shutdown,
    Spawn,
    Spawned,
    SpawnFailed,
)
from coretsia.worker_protocol.internal.guardian_conversation import GuardianState
from coretsia.worker_protocol.internal.runtime.exit_kind import from_wait_status as exit_kind
from coretsia.worker_protocol.internal.runtime.logs import event
from coretsia.worker_protocol.internal.runtime.spawn_errors import spawn_failure
from coretsia.worker_protocol.parent_watch import PARENT_PID_ENV
from coretsia.worker_protocol.vocabulary import Driver, ShutdownPhase

if TYPE_CHECKING:
    from coretsia.guardian.fork_server_backend import ForkServerBackend
    from coretsia.guardian.proc_backend import ProcBackend

_RECHECK_S: Final = 0.05
_STUCK_RECHECK_S: Final = 1.0
# A grandchild that dies while its own parent lives sends us no SIGCHLD; during shutdown
# only, liveness is re-checked at this period as well as on every reap.
_FORK_SERVER_SLOT: Final = -1
"""The fork server's own start, among the pending spawns (no worker has this slot)."""


class Generation:
    """The guardian's view of one generation; driven by :func:`run_generation`."""

    def __init__(self, link: SupervisorLink, hello: Hello, fence_fd: int) -> None:
        self._link = link
        self._hello = hello
        self._fence_fd = fence_fd
        self._workers: dict[int, int] = {}  # pid -> slot, while the worker is unreaped
        self._spawning: set[int] = set()  # slots whose spawn has not returned yet
        self._early_reaps: dict[int, int] = {}  # pid -> status, reaped while spawning
        self._early_exits: dict[int, Exited] = {}  # slot -> the proc host's word, likewise
        self._changed = trio.Event()
        self._outbox, self._outbox_reader = trio.open_memory_channel[bytes](math.inf)
        self._stop_read, self._stop_write = os.pipe()
        self._spawner = Spawner()
        self._me = psutil.Process()
        self._backend: Backend | None = None
        self._host: ProcBackend | None = None
        self._fork_server: ForkServerBackend | None = None
        self._container = Container()
        self._quitting = False
        self._host_failed = False

    async def start_backend(self, nursery: trio.Nursery) -> bool:
        """Set up the container, then the driver; False (after telling the supervisor) if
        either failed."""
        env = {**os.environ, ROOT_ENV: self._hello.root_id}
        try:
            self._container = await open_container(
                self._hello.containment, self._hello.root_id, self._spawner, env
            )
        except OSError as exc:  # the namespace's init is the interpreter too
            self.post(GenerationFailed(reason=spawn_failure(exc, Reason.CONTAINMENT_FAILED)))
            return False
        for helper in self._container.helper_pids():
            self.post(HostStarted(pid=helper))  # the namespace's init: known to the sweep
        env[PARENT_PID_ENV] = str(self._container.parent_pid)
        shared = (self._stop_read, self._fence_fd)
        if self._hello.driver is Driver.FORK and self._hello.fork_server is not None:
            # The server's interpreter boots while the namespace's init mounts its /proc
            # (docs/performance.md, "Timings the code refers to"); it forks only when
            # asked, and nothing is asked before the container is ready.
            started = await self._start_fork_server(env, shared, self._hello.fork_server)
            if self._fork_server is not None:
                nursery.start_soon(self._fork_server.read_answers)
            return await self._container_ready() and started
        if not await self._container_ready():
            return False
        if self._hello.driver is Driver.FORK:
            self._backend = ForkBackend(self._spawner, env, shared)
            return True
        from coretsia.guardian.proc_backend import ProcBackend  # deferred: the selected driver only

        try:
            self._host = await ProcBackend.start(self._spawner, env, shared, self._on_host_exit)
        except WorkerError as exc:  # worker-peer-version-mismatch, worker-process-host-failed
            self.post(GenerationFailed(reason=exc.reason))
            return False
        self._backend = self._host
        self.post(HostStarted(pid=self._host.pid))
        nursery.start_soon(self._watch_host, self._host)
        return True

    async def _container_ready(self) -> bool:
        """The container's last step (see :meth:`Container.ready`); False (after telling
        the supervisor) if it failed."""
        try:
            await self._container.ready()
        except OSError:
            self.post(GenerationFailed(reason=Reason.CONTAINMENT_FAILED))
            return False
        return True

    async def _start_fork_server(
        self, env: dict[str, str], shared: tuple[int, int], argv: tuple[str, ...]
    ) -> bool:
        """``spawn = "forkserver"``: start the generation's fork server (imported only then).

        Its start counts as a pending spawn: a server that exits before ``start`` returns
        is reaped meanwhile, and must be known as gone, not waited for (nor killed) later.
        """
        from coretsia.guardian.fork_server_backend import (
            ForkServerBackend,  # deferred: the selected driver only
        )

        self._spawning.add(_FORK_SERVER_SLOT)
        try:
            server = await ForkServerBackend.start(self._spawner, env, shared, argv)
        except OSError as exc:
            reason = spawn_failure(exc, Reason.PROCESS_HOST_FAILED, argv[0])
            self.post(GenerationFailed(reason=reason))
            return False
        finally:
            self._spawning.discard(_FORK_SERVER_SLOT)
        self._backend = self._fork_server = server
        self.post(HostStarted(pid=server.pid))  # known to the supervisor's sweep
        if self._early_reaps.pop(server.pid, None) is not None:
            self._fork_server_gone(server)
        return True

    def _fork_server_gone(self, server: ForkServerBackend) -> None:
        """The fork server was reaped: before the shutdown, the generation has failed."""
        server.reaped()
        if not self._quitting:
            self.post(GenerationFailed(reason=Reason.PROCESS_HOST_FAILED))

    # -- events -------------------------------------------------------------------------

    def on_reaped(self, pid: int, status: int) -> None:
        """Reaper callback: a child of ours ended (a worker, the proc host, an orphan)."""
        slot = self._workers.pop(pid, None)
        if slot is not None:
            if self._host is not None:
                self._host_gone()  # a proc host's worker is ours to reap once it is gone
            self.post(Exited(slot=slot, exit_kind=exit_kind(status)))
        elif self._fork_server is not None and pid == self._fork_server.pid:
            self._fork_server_gone(self._fork_server)
        elif self._host is not None and pid == self._host.pid:
            self._host_gone()
        elif self._spawning:
            # Maybe a worker whose spawn has not returned yet: it is not registered, and
            # must never be once reaped (its pid may be reused at any moment).
            self._early_reaps[pid] = status
        self.changed()

    def _on_host_exit(self, frame: Exited) -> None:
        """The proc host reaped one of its workers."""
        if frame.slot in self._spawning:
            self._early_exits[frame.slot] = frame  # told after its ``spawned``
            return
        for pid, slot in list(self._workers.items()):
            if slot == frame.slot:
                del self._workers[pid]
        self.post(frame)
        self.changed()

    async def _watch_host(self, host: ProcBackend) -> None:
        await host.run()
        # From here on the proc host reports nothing: its workers that are still alive
        # (dying of their parent-death signal) re-parent to us, a subreaper, and the
        # reaper reports them; the ones it already reaped are simply gone.
        ours = {p.pid for p in self._children()}
        for pid in [pid for pid in self._workers if pid not in ours]:
            del self._workers[pid]
        self._host_gone()

    def _host_gone(self) -> None:
        """The proc host ended: before the shutdown, the generation has failed (once).

        Told from whichever comes first: the end of its channel, its reap, or the reap of
        one of its workers (re-parented to us, a subreaper, only once the host is gone;
        ``waitpid(-1)`` may well return them before the host, whose spawner thread's
        children come after the main thread's). So the supervisor learns of the host
        before any of those workers' exits, which would otherwise read as the workers' own
        failure (``worker-child-start-failed`` while starting).
        """
        if not self._quitting and not self._host_failed:
            self._host_failed = True
            self.post(GenerationFailed(reason=Reason.PROCESS_HOST_FAILED))
        self.changed()

    def changed(self) -> None:
        """Wake whoever waits for the generation's liveness to change."""
        self._changed.set()
        self._changed = trio.Event()

    def post(self, frame: GuardianFrame) -> None:
        """Queue a frame for the supervisor (dropped silently once it is gone).

        Encoded now, so the conversation checks the frames in the order they will travel.
        """
        self._outbox.send_nowait(self._link.encode(frame))

    async def write_outbox(self) -> None:
        """Send queued frames in order; after the supervisor is gone, discard them."""
        async for data in self._outbox_reader:
            await self._link.send_encoded(data)

    async def spawn(self, frame: Spawn, channel_fd: int | None) -> None:
        """Start one worker; its channel descriptor arrived with the frame."""
        if channel_fd is None or self._backend is None:
            self.post(SpawnFailed(slot=frame.slot, reason=Reason.CHILD_START_FAILED))
            return
        self._spawning.add(frame.slot)
        try:
            result = await self._backend.spawn(frame.slot, frame.argv, channel_fd)
        finally:
            os.close(channel_fd)
            self._spawning.discard(frame.slot)
        if isinstance(result, Spawned) and self._host is not None:
            # The proc host reports its worker's pid as its own namespace sees it.
            result = Spawned(
                slot=result.slot, pid=self._container.outer_pid(self._host.pid, result.pid)
            )
        self.post(result)
        if isinstance(result, Spawned):
            early = self._early_exit(result)
            if early is None:
                self._workers[result.pid] = frame.slot
            else:
                self.post(early)
                self.changed()
        if not self._spawning:
            self._early_reaps.clear()  # orphans of the subreaper, reaped meanwhile
            self._early_exits.clear()

    def _early_exit(self, spawned: Spawned) -> Exited | None:
        """The exit of a worker that ended before its spawn returned, if it did.

        The worker runs from the moment it is spawned: its exit (reaped here, or reported
        by the proc host) may overtake the spawn's own result. It is then reported after
        ``spawned``, in the order the supervisor expects, and never registered as live.
        """
        status = self._early_reaps.pop(spawned.pid, None)
        if status is not None:
            return Exited(slot=spawned.slot, exit_kind=exit_kind(status))
        return self._early_exits.pop(spawned.slot, None)

    # -- shutdown -----------------------------------------------------------------------

    def _children(self, *, recursive: bool = False) -> list[psutil.Process]:
        try:
            return list(self._me.children(recursive=recursive))
        except psutil.Error:
            return []

    def _descendants(self) -> list[psutil.Process]:
        """Every live descendant but our own helpers (the proc host)."""
        spare = self._container.helper_pids()
        if self._backend is not None:
            spare |= self._backend.helper_pids()
        found = self._children(recursive=True)
        return [p for p in found if p.pid not in spare and _running(p)]

    def alive(self) -> bool:
        """True while any process of the generation is left (cheap test first)."""
        return bool(self._workers) or bool(self._descendants())

    def _signal_all(self, sig: signal.Signals) -> None:
        if self._backend is not None:
            for pid, slot in self._workers.items():
                self._backend.signal(slot, pid, sig)
        for proc in self._descendants():
            if proc.pid in self._workers:
                continue  # signalled above, as a group, by its owner
            try:
                proc.send_signal(sig)  # psutil checks identity before signalling
            except psutil.Error:
                pass

    async def _until_gone(self, recheck_s: float = _RECHECK_S) -> None:
        while self.alive():
            changed = self._changed
            with trio.move_on_after(recheck_s):
                await changed.wait()

    async def shutdown(self) -> bool:
        """Run the three bounded phases; True if nothing of the generation is left."""
        os.close(self._stop_write)  # every worker's stop descriptor becomes readable
        phases = (
            (ShutdownPhase.COOPERATIVE, self._hello.stop_timeout_ms, None),
            (ShutdownPhase.TERMINATE, self._hello.force_kill_timeout_ms, signal.SIGTERM),
            (ShutdownPhase.KILL, self._hello.force_kill_timeout_ms, signal.SIGKILL),
        )
        for phase, budget_ms, sig in phases:
            if not self.alive():
                break
            self.post(Phase(phase=phase, budget_ms=budget_ms))
            if sig is not None:
                self._signal_all(sig)
            with trio.move_on_after(budget_ms / 1000):
                await self._until_gone()
        clean = not self.alive()
        self._quitting = True
        budget_s = self._hello.force_kill_timeout_ms / 1000
        if self._backend is not None:
            await self._backend.close(budget_s)
        await self._container.end(budget_s)
        return clean

    async def wait_until_gone(self) -> None:
        """Wait, unbounded, for a process that survived every phase to disappear.

        A slower re-check than during the phases: this can last, and a descendant scan
        reads every process of the machine.
        """
        await self._until_gone(_STUCK_RECHECK_S)

    def close(self) -> None:
        """Release what the generation holds (the locks are released by the caller)."""
        self._spawner.close()
        os.close(self._stop_read)
        self._outbox.close()


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


async def run_generation(link: SupervisorLink, hello: Hello, fence_fd: int) -> None:
    """Serve the supervisor until shutdown (asked for, or forced by its loss)."""
    generation = Generation(link, hello, fence_fd)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(reap_forever, generation.on_reaped)
            nursery.start_soon(generation.write_outbox)
            # A driver that fails to start is reported (generation-failed); the spawns
            # that follow then fail and the supervisor asks for the shutdown.
            await generation.start_backend(nursery)
            supervisor_present = await _serve(link, generation)
            if not supervisor_present:
                # The supervisor is gone (killed, or it broke the conversation): contain
                # its generation on our own, with the budgets of the handshake.
                event("guardian.containment", logging.WARNING)
            clean = await generation.shutdown()
            generation.post(Drained(clean=clean))
            if supervisor_present:
                await _wait_for_release(link)
            if not clean:
                await generation.wait_until_gone()
            nursery.cancel_scope.cancel()
    finally:
        generation.close()


async def _serve(link: SupervisorLink, generation: Generation) -> bool:
    """Handle spawn requests until ``shutdown`` (True) or the supervisor's loss (False)."""
    async with trio.open_nursery() as spawns:
        while True:
            frame = await link.receive()
            if isinstance(frame, Spawn):
                spawns.start_soon(generation.spawn, frame, link.take_fd())
            else:
                # ``shutdown``, or the end of the channel: the conversation allows nothing
                # else here, and reads a broken rule as the supervisor's loss.
                return isinstance(frame, Shutdown)


async def _wait_for_release(link: SupervisorLink) -> None:
    """After ``drained``, wait for ``release`` (or the supervisor's loss, which implies it).

    A ``spawn`` that crossed ``shutdown`` may come first: it gets no answer.
    """
    while link.conversation.state is GuardianState.DRAINED:
        if await link.receive() is None:
            return
