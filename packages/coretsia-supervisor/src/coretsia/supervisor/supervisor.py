"""The foreground supervisor of one pool: seed 000's ``worker:start``, in trio.

Lifecycle, in the seed's order (each step only after the previous one succeeded):

1. launch the guardian and complete the versioned handshake; the guardian claims
   ``var/tmp/worker.lock`` (a refused claim changes nothing of the running pool);
2. publish the immutable generation; delete stale locator, state and stop artifacts;
3. generate the 256-bit credential; open the control server; (signal handling is
   installed first of all, so a stop during any step is a clean cancelled start);
4. publish ``starting`` state, then the private locator;
5. spawn every slot through the guardian and wait for every readiness frame, at most
   ``start_timeout_ms``; publish ``running`` and print one summary;
6. serve until a stop (control, SIGTERM, SIGINT, a worker's request) or a failure;
7. shutdown: ``stopping`` state, the guardian runs the bounded phases, the supervisor
   removes state, stop flag, listener, socket and locator, then asks the guardian to
   release the lock, last; pending ``stop`` requests get ``stopped``.

Failures while starting or running end in the same shutdown, then the failure is raised.
"""

from __future__ import annotations

import collections
import logging
import math
import os
import secrets
import signal
import socket
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

import trio

from coretsia.guardian.logs import event
from coretsia.supervisor import files, generation, output
from coretsia.supervisor._version import __version__
from coretsia.supervisor.config import PoolConfig
from coretsia.supervisor.control_server import ControlServer
from coretsia.supervisor.guardian_link import GuardianLink
from coretsia.supervisor.guardian_process import TREE_ENV, TREE_MARK, guardian_env
from coretsia.supervisor.notify import Notifier
from coretsia.supervisor.pool import Pool, Slot, SlotState
from coretsia.supervisor.process.ipc_resources import PoolIpc
from coretsia.supervisor.respawn import RespawnPolicy
from coretsia.supervisor.runner import runtime_dirs
from coretsia.supervisor.telemetry import NO_TELEMETRY, Telemetry
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.client import STOP_SLACK_S
from coretsia.worker_protocol.control import (
    ControlResponse,
    ErrorResponse,
    StatusResponse,
    StoppedResponse,
    StopProgress,
)
from coretsia.worker_protocol.endpoint import endpoint_hash
from coretsia.worker_protocol.exceptions import (
    ProtocolError,
    WorkerError,
    WorkerForkFailedError,
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
    error_for,
)
from coretsia.worker_protocol.framing import LineFramer, Need
from coretsia.worker_protocol.internal.guardian import (
    Drained,
    Exited,
    GenerationFailed,
    Hello,
    HostStarted,
    Phase,
    Release,
    Released,
    Shutdown,
    Spawn,
    Spawned,
    SpawnFailed,
)
from coretsia.worker_protocol.lifecycle import (
    ENDPOINT_KEY_PATH,
    LOCATOR_PATH,
    LOCATOR_TMP_PATH,
)
from coretsia.worker_protocol.locator import Locator, encode_locator
from coretsia.worker_protocol.state import PoolState, encode_state
from coretsia.worker_protocol.vocabulary import ControlCommand, Driver, PoolStatus, Transport
from coretsia.worker_protocol.worker_channel import (
    Failed,
    Ready,
    Retiring,
    ShutdownRequest,
    TaskFailed,
    decode_worker_frame,
    encode_retire,
)

if TYPE_CHECKING:
    from coretsia.supervisor.prometheus import MetricsEndpoint

LAUNCHER_CODE: Final = "from coretsia.supervisor.launcher import main; main()"
"""What every worker runs, as ``python -c``: the launcher without ``runpy``.

``-m coretsia.supervisor.launcher`` would work the same, but ``runpy`` costs every worker
boot a few milliseconds and about 0.2 MiB; the command line still names the launcher."""

RELEASE_TIMEOUT_S: Final = 5.0
SHUTDOWN_SLACK_S: Final = STOP_SLACK_S - 2.0
"""How long past the budgets the supervisor waits for the guardian's ``drained``.

Shorter than a ``stop`` client's own slack: when ``drained`` never comes (the guardian is
stuck behind a process that survived SIGKILL), the client must still hear
``worker-shutdown-failed`` before it gives up with a communication failure."""
_LAST_WORDS_S: Final = 1.0
_GROUP_SIGNAL_GRACE_S: Final = 0.5


class Supervisor:
    """One run of ``coretsia-supervisor start``."""

    def __init__(
        self,
        root: Path,
        config: PoolConfig,
        spec: Mapping[str, object],
        driver: Driver,
        transport: Transport,
        umask: int,
        environ: Mapping[str, str],
        *,
        log_json: bool = False,
        telemetry: Telemetry = NO_TELEMETRY,
        metrics: MetricsEndpoint | None = None,
    ) -> None:
        self._root = root
        self._telemetry = telemetry
        self._metrics = metrics
        self._starting = telemetry.process("start")  # ends at running, or failed at shutdown
        self._config = config
        self._spec = spec
        self._driver = driver
        self._transport = transport
        self._umask = umask
        self._environ = environ
        self._credential = secrets.token_hex(32)
        self._notifier = Notifier(environ)
        self._show_progress = output.is_terminal()
        self._log_json = log_json
        self._failure: WorkerError | None = None
        self._stop_requested = False
        self._stopping = False
        self._link: GuardianLink | None = None
        self._guardian_lost = False
        self._server: ControlServer | None = None
        self._state_published = False
        self._drained = trio.Event()
        self._drained_clean: bool | None = None  # None until the guardian reports drained
        self._letting_go = False  # the supervisor closes the guardian channel itself
        self._released = trio.Event()
        self._lock_released = False
        self._subscribers: list[trio.MemorySendChannel[ControlResponse]] = []
        task_slots = _count(spec.get("workers"))
        processes = spec.get("processes")
        entries = processes.get("entries", []) if isinstance(processes, dict) else []
        self._pool = Pool(
            pid=os.getpid(),
            driver=driver,
            transport=transport,
            endpoint_hash="0" * 32,
            slots=[
                Slot(i, entry=i >= task_slots)
                for i in range(task_slots + (len(entries) if isinstance(entries, list) else 0))
            ],
        )
        self._respawn = RespawnPolicy(
            config.processes.respawn_interval_ms / 1000,
            config.processes.restart_intensity,
            config.processes.restart_period_ms / 1000,
            config.processes.restart_backoff_max_ms / 1000,
        )
        self._stop_by_application = False
        self._ipc = PoolIpc(root, spec)
        self._nursery: trio.Nursery | None = None
        self._artifact_root = ""
        self._retire_queue: collections.deque[Slot] = collections.deque()
        self._recycling: Slot | None = None
        self._worker_pids: dict[int, int] = {}
        """Slot to the pid of its live worker, as the guardian reports them (for the sweep)."""
        self._helper_pids: set[int] = set()
        """The proc host's pid, once the guardian reported it (``proc``), for the sweep."""

    # -- the whole run ------------------------------------------------------------------

    async def run(self) -> None:
        """Start, serve and shut down; raise the failure that ended the run, if any."""
        signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        unexpected: Exception | None = None
        with trio.open_signal_receiver(*signals) as received:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._watch_signals, received)
                if self._notifier.watchdog_interval_s is not None:
                    nursery.start_soon(self._feed_watchdog, self._notifier.watchdog_interval_s)
                try:
                    await self._start_and_serve(nursery)
                except WorkerError as exc:
                    self._fail(exc)
                except Exception as exc:  # noqa: BLE001 - mapped to the catch-all, kept as cause
                    # Not ours to name: the run fails with start's catch-all (logged as
                    # such, never as a clean stop), the original kept as its cause for
                    # the debug switch's traceback. Raised after the nursery, so callers
                    # (``ProcessManager.start`` too) get a WorkerError, not a group.
                    self._fail(WorkerStartFailedError(Reason.START_FAILED))
                    unexpected = exc
                finally:
                    self._starting.finish("failure")  # no-op once the pool was running
                    with trio.CancelScope(shield=True):
                        await self._shutdown()
                nursery.cancel_scope.cancel()
        failure = self._failure
        if failure is not None:
            if unexpected is not None:
                raise failure from unexpected
            raise failure  # with the cause it was raised with, if any

    async def _start_and_serve(self, nursery: trio.Nursery) -> None:
        config = self._config
        hello = Hello(
            peer_version=__version__,
            driver=self._driver,
            stop_timeout_ms=config.budgets.stop_timeout_ms,
            force_kill_timeout_ms=config.budgets.force_kill_timeout_ms,
            umask=self._umask,
            log_json=self._log_json,
        )
        event(
            "pool.starting",
            worker_count=len(self._pool.slots),
            driver=self._driver.value,
            control_transport=self._transport.value,
        )
        self._link = await GuardianLink.launch(self._root, hello, guardian_env(self._environ))
        nursery.start_soon(self._guardian_events, self._link)
        self._make_runtime_dirs()
        ipc = self._ipc.open()  # under the lock; the generation records where it is
        spec = self._spec if ipc is None else {**self._spec, "ipc": ipc}
        try:
            self._artifact_root = generation.publish(self._root, spec)
        except generation.GenerationError as exc:
            raise WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED) from exc
        self._remove(
            LOCATOR_PATH,
            LOCATOR_TMP_PATH,
            config.paths.state_path,
            config.paths.state_tmp_path,
            config.paths.stop_flag_path,
        )
        self._pool.endpoint_hash = self._endpoint_hash()
        if self._transport is Transport.UNIX:
            self._server = await ControlServer.open_unix(self._root / config.paths.socket_path)
        else:
            self._server = await ControlServer.open_tcp(config.tcp.port)
        nursery.start_soon(self._server.serve, self._credential, self, self._telemetry)
        if self._metrics is not None:
            self._metrics.open(self._pool)  # under the lock, like the control server
        self._publish_state()
        try:
            self._publish_locator()
        except OSError as exc:
            raise WorkerLifecycleFailedError(Reason.LIFECYCLE_LOCATOR_FAILED) from exc
        for slot in self._pool.slots:
            if self._stop_requested or self._failure is not None:
                break
            await self._spawn(slot)
        with trio.move_on_after(config.budgets.start_timeout_ms / 1000):
            await self._pool.wait_until(self._start_settled)
        if self._failure is not None:
            return
        if self._stop_requested:
            if not self._stop_by_application:  # the application ended its pool: no cancel
                self._fail(WorkerStartFailedError(Reason.START_CANCELLED))
            return
        if not self._pool.all_started:
            self._fail(WorkerStartFailedError(Reason.READINESS_TIMEOUT))
            return
        self._pool.status = PoolStatus.RUNNING
        self._publish_state()
        fields = output.summary_fields(self._pool.summary())
        output.summary(fields, as_json=False)
        self._notifier.ready(self._status_line())
        event("pool.running", pid=self._pool.pid, worker_count=len(self._pool.slots))
        self._starting.finish("success")
        await self._pool.wait_until(lambda: self._stop_requested or self._failure is not None)

    def _start_settled(self) -> bool:
        return self._pool.all_started or self._stop_requested or self._failure is not None

    # -- workers ------------------------------------------------------------------------

    def _argv(self, slot: Slot) -> tuple[str, ...]:
        return (
            sys.executable,
            "-c",
            LAUNCHER_CODE,
            f"--coretsia-worker-artifact-root={self._artifact_root}",
            f"--coretsia-worker-slot={slot.index}",
            "--coretsia-worker-channel-fd=3",
            "--coretsia-worker-stop-fd=4",
        )

    async def _spawn(self, slot: Slot) -> None:
        assert self._link is not None
        assert self._nursery is not None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        slot.state = SlotState.SPAWNING
        slot.failed_reason = None
        slot.retiring = False
        slot.spawned_at = trio.current_time()
        slot.ready_at = None
        slot.channel_closed = trio.Event()
        event("worker.spawned", slot=slot.index)  # stamped with spawned_at: the request
        try:
            await self._link.send(Spawn(slot=slot.index, argv=self._argv(slot)), (theirs.fileno(),))
        finally:
            theirs.close()
        slot.channel = trio.socket.from_stdlib_socket(ours)
        self._nursery.start_soon(self._read_worker, slot, slot.channel)

    async def _read_worker(self, slot: Slot, sock: trio.socket.SocketType) -> None:
        closed = slot.channel_closed
        try:
            await self._read_frames(slot, sock)
        finally:
            closed.set()

    async def _read_frames(self, slot: Slot, sock: trio.socket.SocketType) -> None:
        framer = LineFramer()
        with sock:
            try:
                while True:
                    frame = framer.next_frame()
                    if frame is Need.CLOSED:
                        return
                    if frame is Need.DATA:
                        framer.receive_data(await sock.recv(4096))
                        continue
                    self._on_worker_frame(slot, decode_worker_frame(frame))
            except ProtocolError:
                if slot.state is SlotState.SPAWNING:
                    self._fail(WorkerStartFailedError(Reason.READINESS_INVALID))
                else:
                    self._fail(WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED))
            except OSError:
                return

    def _on_worker_frame(self, slot: Slot, frame: object) -> None:
        if isinstance(frame, Ready):
            if frame.token is not None or slot.state is SlotState.READY:
                self._fail(WorkerStartFailedError(Reason.READINESS_INVALID))
                return
            if slot.state is SlotState.EXITED:
                # Its exit (guardian channel) overtook this frame (its own channel): the
                # exit is being judged with every frame read; it is not ready any more,
                # but an entry that got this far did boot (it is replaced, not fatal).
                slot.started = slot.started or slot.entry
                return
            slot.state = SlotState.READY
            slot.started = True
            slot.ready_at = trio.current_time()
            event("worker.ready", slot=slot.index)
            self._publish_state()
            if self._show_progress and self._pool.status is PoolStatus.STARTING:
                output.progress(self._status_line())
        elif isinstance(frame, Failed):
            slot.failed_reason = frame.reason
        elif isinstance(frame, TaskFailed):
            self._log_task_failure(slot, frame)
        elif isinstance(frame, Retiring):
            if not slot.retiring:
                slot.retiring = True
                self._retire_queue.append(slot)
                self._grant_retirement()
        elif isinstance(frame, ShutdownRequest):
            event("pool.shutdown_requested", slot=slot.index)
            self.request_stop()
        self._pool.changed()

    @staticmethod
    def _log_task_failure(slot: Slot, frame: TaskFailed) -> None:
        """``task.failed`` with what the worker could say of it: safe fields only."""
        fields: dict[str, str | int | bool] = {"slot": slot.index, "error_type": frame.error_type}
        if frame.attempt is not None:
            fields["attempt"] = frame.attempt
        if frame.retried is not None:
            fields["retried"] = frame.retried
        event("task.failed", logging.WARNING, **fields)

    def _on_exit(self, frame: Exited) -> None:
        if not 0 <= frame.slot < len(self._pool.slots):
            return
        slot = self._pool.slots[frame.slot]
        slot.state = SlotState.EXITED
        event("worker.exited", slot=slot.index, exit_kind=frame.exit_kind)
        if not self._stopping:  # a stop is one burst of exits, and its state file goes
            self._publish_state()
        self._pool.changed()
        if not self._stopping:
            assert self._nursery is not None
            self._nursery.start_soon(self._judge_exit, slot, frame.exit_kind)

    async def _judge_exit(self, slot: Slot, exit_kind: str) -> None:
        """Decide what a worker's exit means once its last words have been read.

        The exit (guardian channel) and the worker's final frames (its own channel) travel
        on different sockets; wait for the worker's channel to reach its end so that a
        ``retiring`` or ``failed`` frame is never overtaken by the exit it announced. A
        grandchild may hold the channel open, hence the bound.
        """
        with trio.move_on_after(_LAST_WORDS_S):
            await slot.channel_closed.wait()
        if exit_kind == "signal-term":
            # A service manager that signals the whole group (systemd's default
            # KillMode=control-group, a terminal's process group) reaches the workers and
            # the supervisor at the same instant: give our own SIGTERM a moment to land,
            # so a graceful stop is not misread as a crash.
            with trio.move_on_after(_GROUP_SIGNAL_GRACE_S):
                await self._pool.wait_until(lambda: self._stop_requested)
        if self._stopping or self._stop_requested:
            return
        if slot.retiring and exit_kind == "exit-0":
            # A clean retirement (max_requests), even before every other slot is ready.
            await self._recycle(slot)
            return
        if slot.entry and (slot.started or self._pool.status is not PoolStatus.STARTING):
            # Seed 003: a returning or failing entry is replaced; only a first boot that
            # never became ready fails the start, as a task worker's would.
            await self._replace(slot, exit_kind)
            return
        if slot.failed_reason is not None:
            self._fail(error_for(slot.failed_reason))
        elif self._pool.status is PoolStatus.STARTING:
            self._fail(WorkerStartFailedError(Reason.CHILD_START_FAILED))
        else:
            self._fail(WorkerLifecycleFailedError(Reason.CHILD_EXITED))

    async def _replace(self, slot: Slot, exit_kind: str) -> None:
        """Spawn a process entry's slot again, at the pace :class:`RespawnPolicy` sets."""
        now = trio.current_time()
        lived = now - slot.ready_at if slot.ready_at is not None else 0.0
        slot.rapid_exits = self._respawn.next_rapid_exits(lived, slot.rapid_exits)
        if not self._respawn.admit(now):
            self._fail(WorkerLifecycleFailedError(Reason.RESTART_INTENSITY_EXCEEDED))
            return
        event("worker.replaced", slot=slot.index, exit_kind=exit_kind)
        with trio.move_on_after(self._respawn.delay(slot.spawned_at, slot.rapid_exits, now)):
            await self._pool.wait_until(lambda: self._stop_requested or self._stopping)
        if self._stop_requested or self._stopping or self._failure is not None:
            return
        await self._respawn_slot(slot)

    async def _respawn_slot(self, slot: Slot) -> None:
        """Spawn ``slot`` again (a recycle or a replacement) and see it become ready.

        A new worker that never reports ready within ``start_timeout_ms`` fails the pool
        rather than leave the slot out of service without a word.
        """
        try:
            await self._spawn(slot)
        except WorkerError as exc:
            self._fail(exc)
            return
        with trio.move_on_after(self._config.budgets.start_timeout_ms / 1000):
            await self._pool.wait_until(
                lambda: slot.state is not SlotState.SPAWNING or self._stopping
            )
        if slot.state is SlotState.SPAWNING and not self._stopping:
            self._fail(WorkerStartFailedError(Reason.READINESS_TIMEOUT))

    def _grant_retirement(self) -> None:
        """Let the next worker that asked retire, if no slot is being recycled now.

        One at a time: a pool of N never has more than one slot out of service for a
        recycle, however the workers' request counts line up.
        """
        while self._recycling is None and self._retire_queue and not self._stopping:
            slot = self._retire_queue.popleft()
            if slot.state is not SlotState.READY or slot.channel is None:
                continue
            self._recycling = slot
            event("worker.retired", slot=slot.index)
            assert self._nursery is not None
            self._nursery.start_soon(self._send_retire, slot.channel)

    async def _send_retire(self, channel: trio.socket.SocketType) -> None:
        try:
            await channel.send(encode_retire())
        except OSError:
            pass  # the worker is gone already; its exit is judged on its own

    async def _recycle(self, slot: Slot) -> None:
        """Replace a retired worker with a fresh boot of the current generation."""
        try:
            await self._respawn_slot(slot)
        finally:
            if self._recycling is slot:
                self._recycling = None
            self._grant_retirement()

    # -- the guardian -------------------------------------------------------------------

    async def _guardian_events(self, link: GuardianLink) -> None:
        while True:
            frame = await link.receive()
            if frame is None:
                # The end of a channel we closed ourselves, or that followed the release,
                # is expected: only any other end is a lost guardian.
                if not (self._letting_go or self._released.is_set()):
                    self._guardian_lost = True
                    self._fail(WorkerLifecycleFailedError(Reason.PROCESS_HOST_FAILED))
                self._drained.set()
                self._released.set()
                return
            if isinstance(frame, Spawned):
                self._worker_pids[frame.slot] = frame.pid
            elif isinstance(frame, HostStarted):
                self._helper_pids.add(frame.pid)
            elif isinstance(frame, Exited):
                self._worker_pids.pop(frame.slot, None)
                self._on_exit(frame)
            elif isinstance(frame, SpawnFailed):
                if frame.reason is Reason.FORK_FAILED:
                    self._fail(WorkerForkFailedError())
                else:
                    self._fail(WorkerStartFailedError(Reason.CHILD_START_FAILED))
            elif isinstance(frame, Phase):
                event(f"shutdown.{frame.phase.value}")
                self._broadcast(StopProgress(frame.phase, frame.budget_ms))
            elif isinstance(frame, Drained):
                self._drained_clean = frame.clean
                self._drained.set()
            elif isinstance(frame, Released):
                self._lock_released = True
                self._released.set()
            elif isinstance(frame, GenerationFailed):
                self._fail(error_for(frame.reason))

    # -- control ------------------------------------------------------------------------

    def answer(self, command: ControlCommand) -> ControlResponse:
        """Answer ``status`` or ``health`` from the live pool."""
        event("control.served", logging.DEBUG, operation=command.value)
        if command is ControlCommand.HEALTH:
            return self._pool.health(failure_pending=self._failure is not None)
        return StatusResponse(self._pool.summary())

    def subscribe_stop(self) -> trio.MemoryReceiveChannel[ControlResponse]:
        """Register a ``stop`` client and request shutdown."""
        event("control.served", operation=ControlCommand.STOP.value)
        send, receive = trio.open_memory_channel[ControlResponse](math.inf)
        self._subscribers.append(send)
        self._request_stop()
        return receive

    def _broadcast(self, response: ControlResponse) -> None:
        for subscriber in self._subscribers:
            try:
                subscriber.send_nowait(response)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                continue

    def request_stop(self) -> None:
        """Stop the pool as the application asks (``ProcessManager.stop`` in the parent, a
        worker's ``shutdown-request``), even while starting.

        Like a worker's own shutdown request, this is the application ending its pool,
        not an operator cancelling a start: ``start()`` then returns normally.
        """
        if not self._stop_requested:
            self._stop_by_application = True
        self._request_stop()

    def _request_stop(self) -> None:
        self._stop_requested = True
        self._pool.changed()

    def _status_line(self) -> str:
        """The service manager's one-line status: safe fields only."""
        pool = self._pool
        return f"{pool.status.value}: {pool.ready_count}/{len(pool.slots)} workers ready"

    async def _feed_watchdog(self, interval_s: float) -> None:
        """``WATCHDOG=1`` from the event loop: a wedged loop stops feeding it."""
        while True:
            self._notifier.watchdog()
            await trio.sleep(interval_s)

    async def _watch_signals(self, received: AsyncIterator[int]) -> None:
        async for signum in received:
            if signum != signal.SIGHUP:  # SIGHUP is ignored: there is no reload to do
                self._request_stop()

    def _fail(self, exc: WorkerError) -> None:
        if self._failure is None:
            self._failure = exc
        self._pool.changed()

    # -- files --------------------------------------------------------------------------

    def _endpoint_hash(self) -> str:
        try:
            key = files.endpoint_key(self._root / ENDPOINT_KEY_PATH)
        except OSError as exc:  # a directory at its path, a full disk
            raise WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED) from exc
        if self._transport is Transport.UNIX:
            address = self._config.paths.socket_path
        else:
            address = f"127.0.0.1:{self._config.tcp.port}"
        return endpoint_hash(key, self._transport, address)

    def _make_runtime_dirs(self) -> None:
        """Create the directories of the runtime files (0700 under our umask), checked
        again now that the lock is ours: a second ``start`` must change nothing."""
        for directory in runtime_dirs(self._root, self._config, self._transport):
            try:
                os.makedirs(directory, exist_ok=True)
            except OSError as exc:
                raise WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED) from exc

    def _publish_locator(self) -> None:
        config = self._config
        unix = self._transport is Transport.UNIX
        locator = Locator(
            transport=self._transport,
            credential=self._credential,
            stop_timeout_ms=config.budgets.stop_timeout_ms,
            force_kill_timeout_ms=config.budgets.force_kill_timeout_ms,
            path=config.paths.socket_path if unix else None,
            host=None if unix else "127.0.0.1",
            port=None if unix else config.tcp.port,
        )
        files.write_atomic(
            self._root / LOCATOR_PATH, encode_locator(locator), self._root / LOCATOR_TMP_PATH
        )

    def _publish_state(self) -> None:
        if self._stopping and not self._state_published:
            return
        config = self._config
        state = PoolState(
            pid=self._pool.pid,
            status=self._pool.status,
            worker_count=len(self._pool.slots),
            ready_worker_count=self._pool.ready_count,
            driver_requested=config.worker.driver,
            driver=self._driver,
            control_transport_requested=config.control.transport,
            control_transport=self._transport,
            endpoint_hash=self._pool.endpoint_hash,
        )
        try:
            files.write_atomic(
                self._root / config.paths.state_path,
                encode_state(state),
                self._root / config.paths.state_tmp_path,
            )
        except OSError as exc:
            raise WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED) from exc
        self._state_published = True
        if self._pool.status is PoolStatus.RUNNING:
            self._notifier.status(self._status_line())

    def _remove(self, *paths: str) -> None:
        try:
            for path in paths:
                files.remove(self._root / path)
        except OSError as exc:
            raise WorkerLifecycleFailedError(Reason.RUNTIME_CLEANUP_FAILED) from exc

    def _cleanup_files(self) -> bool:
        """Remove state, stop flag, listener, socket, locator, IPC; False if one resisted.

        Every removal is attempted even if an earlier one fails: the locator above all
        must not outlive the pool.
        """
        config = self._config
        cleaned = True
        if self._metrics is not None:
            self._metrics.close()
        if self._server is not None:
            try:
                self._server.close()
            except OSError:
                cleaned = False
        for path in (
            config.paths.state_path,
            config.paths.state_tmp_path,
            config.paths.stop_flag_path,
            LOCATOR_PATH,
            LOCATOR_TMP_PATH,
        ):
            try:
                files.remove(self._root / path)
            except OSError:
                cleaned = False
        if not self._ipc.close():
            cleaned = False
        return cleaned

    # -- shutdown -----------------------------------------------------------------------

    async def _shutdown(self) -> None:
        link = self._link
        if link is None:
            return
        self._stopping = True
        stopping = self._telemetry.process("stop")
        self._notifier.stopping()
        event("pool.stopping")
        config = self._config
        if self._state_published:
            self._pool.status = PoolStatus.STOPPING
            try:
                self._publish_state()
                # The seed's stop-signal file, kept as a diagnostic artifact only: workers
                # learn of the stop from their stop pipe, never by polling this file.
                files.write_atomic(self._root / config.paths.stop_flag_path, b"stop\n")
            except (WorkerError, OSError):
                pass  # diagnostics only; shutdown must go on regardless
        self._pool.changed()
        if not self._guardian_lost:
            try:
                await link.send(Shutdown())
            except WorkerError:
                self._guardian_lost = True
        budget = (config.budgets.stop_timeout_ms + 2 * config.budgets.force_kill_timeout_ms) / 1000
        with trio.move_on_after(budget + SHUTDOWN_SLACK_S):
            await self._drained.wait()
        clean = self._drained_clean is True and not self._guardian_lost
        self._state_published = False
        cleaned = self._cleanup_files()
        released = clean and await self._release(link)
        if not released:
            # Decided before the guardian is let go: it keeps the lock while a process of
            # the generation survives, and the stop clients must hear why within their
            # own deadline, not after the supervisor gave up waiting for the guardian.
            self._fail(WorkerLifecycleFailedError(Reason.SHUTDOWN_FAILED))
        if not cleaned:
            self._fail(WorkerLifecycleFailedError(Reason.RUNTIME_CLEANUP_FAILED))
        final: ControlResponse = (
            StoppedResponse() if released else ErrorResponse(Reason.SHUTDOWN_FAILED)
        )
        self._broadcast(final)
        for subscriber in self._subscribers:
            subscriber.close()
        if not clean:
            await self._let_go(link)
        if self._failure is None:
            event("pool.stopped", outcome="clean")
        else:
            event(
                "pool.failed",
                logging.ERROR,
                reason=self._failure.reason.value,
                status=self._failure.code.value,
            )
        stopping.finish("success" if released and cleaned else "failure")
        if self._server is not None:
            await self._server.wait_idle(RELEASE_TIMEOUT_S)

    async def _release(self, link: GuardianLink) -> bool:
        """Ask the guardian to release the lock, last; True once it confirmed."""
        try:
            await link.send(Release())
        except WorkerError:
            pass
        with trio.move_on_after(RELEASE_TIMEOUT_S):
            await self._released.wait()
        self._letting_go = True
        link.close()
        await link.wait_exit()
        return self._lock_released

    async def _let_go(self, link: GuardianLink) -> None:
        """Close the channel of a generation that did not end cleanly, and sweep if need be.

        A guardian that reported ``drained`` and is still alive keeps containing what is
        left (a process that survived SIGKILL) and holds the lock until it is gone; only a
        guardian that is really gone without having done so leaves us anything to sweep.
        """
        self._letting_go = True
        exited = await link.abandon()
        contained = self._drained_clean is not None and not self._guardian_lost
        if exited and not contained:
            await trio.to_thread.run_sync(
                _sweep_orphans,
                self._config.budgets.force_kill_timeout_ms / 1000,
                frozenset({*self._worker_pids.values(), *self._helper_pids}),
            )


def _count(value: object) -> int:
    """The generation's task-worker count (validated config, so a plain int)."""
    return value if type(value) is int and value >= 0 else 0


def _sweep_orphans(budget_s: float, known: frozenset[int]) -> None:
    """Kill and reap what a killed guardian left behind (runs in a worker thread).

    The supervisor is a child subreaper, so every process of the generation that outlived
    the guardian (workers dying of their parent-death signal, grandchildren that left
    their process group) is now our descendant. So may be an embedding application's own
    children (``ProcessManager`` runs the supervisor inside the application): only
    descendants that carry this supervisor's :data:`TREE_ENV` mark are killed. A zombie's
    environment cannot be read, so a dead worker or proc host (its parent-death signal
    fired before the sweep) is known by its pid, as the guardian last reported it
    (``known``), and reaped. psutil checks each process's identity before signalling,
    and waits for our children by explicit pid, never ``waitpid(-1)``.
    """
    import psutil

    try:
        descendants = psutil.Process().children(recursive=True)
    except psutil.Error:
        return
    left = []
    for proc in descendants:
        try:
            if proc.environ().get(TREE_ENV) != TREE_MARK:
                continue
            proc.kill()
        except psutil.ZombieProcess:
            if proc.pid not in known:
                continue  # not known to be ours: its parent reaps it
        except psutil.Error:
            continue  # gone already
        left.append(proc)
    psutil.wait_procs(left, timeout=budget_s)
