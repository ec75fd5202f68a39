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

import contextlib
import logging
import math
import os
import secrets
import signal
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

import trio

from coretsia.supervisor.config import PoolConfig
from coretsia.supervisor.daemon.containment import generation_cgroup
from coretsia.supervisor.daemon.control_server import ControlServer
from coretsia.supervisor.daemon.guardian_events import RELEASE_TIMEOUT_S, GuardianEvents
from coretsia.supervisor.daemon.guardian_link import GuardianLink
from coretsia.supervisor.daemon.guardian_process import EarlyGuardian, guardian_env
from coretsia.supervisor.daemon.ipc_resources import PoolIpc
from coretsia.supervisor.daemon.notify import Notifier
from coretsia.supervisor.daemon.pool import Pool, StopCause
from coretsia.supervisor.daemon.resident_memory import slot_resident_kib
from coretsia.supervisor.daemon.runtime_files import RuntimeFiles
from coretsia.supervisor.daemon.slots import Slots
from coretsia.supervisor.generation import published as generation
from coretsia.supervisor.shared import output
from coretsia.supervisor.shared.telemetry import NO_TELEMETRY, Telemetry
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.client import STOP_SLACK_S
from coretsia.worker_protocol.control import (
    ControlResponse,
    ErrorResponse,
    StatusResponse,
    StoppedResponse,
)
from coretsia.worker_protocol.exceptions import (
    WorkerError,
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.internal.guardian import Exited, Hello, Shutdown
from coretsia.worker_protocol.internal.runtime.logs import event
from coretsia.worker_protocol.vocabulary import (
    Containment,
    ControlCommand,
    Driver,
    PoolStatus,
    Transport,
)
from coretsia.worker_protocol.worker_channel import RecycleCause

if TYPE_CHECKING:
    from coretsia.supervisor.daemon.prometheus import MetricsEndpoint
    from coretsia.supervisor.generation.spec import GenerationSpec
    from coretsia.worker_protocol.internal.runtime.cgroup import GenerationCgroup

SHUTDOWN_SLACK_S: Final = STOP_SLACK_S - 2.0
"""How long past the budgets the supervisor waits for the guardian's ``drained``.

Shorter than a ``stop`` client's own slack: when ``drained`` never comes (the guardian is
stuck behind a process that survived SIGKILL), the client must still hear
``worker-shutdown-failed`` before it gives up with a communication failure."""


class Supervisor:
    """One run of ``coretsia-supervisor start``."""

    def __init__(
        self,
        root: Path,
        config: PoolConfig,
        spec: GenerationSpec,
        driver: Driver,
        transport: Transport,
        containment: Containment,
        environ: Mapping[str, str],
        hello: Hello,
        *,
        telemetry: Telemetry = NO_TELEMETRY,
        metrics: MetricsEndpoint | None = None,
        on_running: Callable[[], None] | None = None,
        early: EarlyGuardian | None = None,
    ) -> None:
        self._root = root
        self._early = early
        self._on_running = on_running
        self._hello = hello
        self._telemetry = telemetry
        self._metrics = metrics
        self._starting = telemetry.process("start")  # ends at running, or failed at shutdown
        self._config = config
        self._spec = spec
        self._environ = environ
        self._credential = secrets.token_hex(32)
        self._notifier = Notifier(environ)
        self._show_progress = on_running is None and output.is_terminal()  # not a host's
        self._files = RuntimeFiles(root, config, transport)
        self._ipc = PoolIpc(root, spec)
        self._link: GuardianLink | None = None
        self._server: ControlServer | None = None
        self._slots: Slots | None = None
        self._subscribers: list[trio.MemorySendChannel[ControlResponse]] = []
        self._pool = Pool.of_generation(spec, os.getpid(), driver, transport, containment)
        self._guardian = GuardianEvents(self._pool, self._on_exited, self._broadcast)

    # -- the whole run ------------------------------------------------------------------

    @property
    def forced(self) -> bool:
        """The run's stop had to send a worker SIGTERM or SIGKILL (a task was cut short)."""
        return self._guardian.forced

    async def run(self, *, own_signals: bool = True) -> None:
        """Start, serve and shut down; raise the failure that ended the run, if any.

        ``own_signals`` false: mounted in a host (any thread), which keeps its signals and
        forwards its stop (:meth:`request_stop`)."""
        unexpected: Exception | None = None
        with contextlib.ExitStack() as stack:
            received = None
            if own_signals:
                signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
                received = stack.enter_context(trio.open_signal_receiver(*signals))
            async with trio.open_nursery() as life:
                if received is not None:
                    life.start_soon(self._watch_signals, received)
                if self._notifier.watchdog_interval_s is not None:
                    life.start_soon(self._feed_watchdog, self._notifier.watchdog_interval_s)
                try:
                    await self._start_and_serve(life)
                except WorkerError as exc:
                    self._pool.fail(exc)
                except Exception as exc:  # noqa: BLE001 - mapped to the catch-all, kept as cause
                    # Not ours to name: the run fails with start's catch-all (logged as
                    # such, never as a clean stop), the original kept as its cause for
                    # the debug switch's traceback. Raised after the nursery, so callers
                    # (``ProcessManager.start`` too) get a WorkerError, not a group.
                    self._pool.fail(WorkerStartFailedError(Reason.START_FAILED))
                    unexpected = exc
                finally:
                    self._starting.finish("failure")  # no-op once the pool was running
                    with trio.CancelScope(shield=True):
                        await self._shutdown()
                life.cancel_scope.cancel()
        failure = self._pool.failure
        if failure is not None:
            if unexpected is not None:
                raise failure from unexpected
            raise failure  # with the cause it was raised with, if any

    async def _start_and_serve(self, life: trio.Nursery) -> None:
        """Run the start, then serve, until the pool's first stop or failure."""
        with self._pool.until_ending():
            await self._start(life)
            await trio.sleep_forever()
        if self._pool.status is PoolStatus.STARTING and self._pool.stop_cause is StopCause.OPERATOR:
            # Cancelled by an operator. The application ending its own pool (a worker's
            # shutdown request, ``ProcessManager.stop``) is no failure.
            self._pool.fail(WorkerStartFailedError(Reason.START_CANCELLED))

    async def _start(self, life: trio.Nursery) -> None:
        config = self._config
        pool = self._pool
        slots = await self._open(life)
        for slot in pool.slots:
            await life.start(slots.keep, slot)
        with trio.move_on_after(config.budgets.start_timeout_ms / 1000):
            await pool.started.wait()
        if not pool.started.is_set():
            raise WorkerStartFailedError(Reason.READINESS_TIMEOUT)
        # Every slot has been ready at once. One may have exited since: its exit is
        # judged by its slot, as any running pool's would be.
        pool.status = PoolStatus.RUNNING
        self._publish_state()
        # Counted before the summary is printed: a scrape of the metrics endpoint (its
        # own thread) by whoever read the summary must see the start succeeded.
        self._starting.finish("success")
        if self._on_running is None:  # mounted: the host is told instead, below
            output.summary(output.summary_fields(pool.summary()), as_json=False)
        self._notifier.ready(pool.status_line())
        event("pool.running", pid=pool.pid, worker_count=len(pool.slots))
        if self._on_running is not None:
            self._on_running()

    async def _open(self, life: trio.Nursery) -> Slots:
        """Seed 000's start up to the first spawn: guardian and lock, generation, files,
        control server, state and locator.

        Shielded: each step is bounded on its own, and a stop that arrives meanwhile takes
        effect right after, with everything opened so far known to the shutdown.
        """
        config = self._config
        with trio.CancelScope(shield=True):
            link = await GuardianLink.launch(
                self._root, self._hello, guardian_env(self._environ), self._early
            )
            self._link = link
            # Only now, with the lock ours: a refused start (already running, draining)
            # must log nothing that reads like a pool starting.
            event(
                "pool.starting",
                worker_count=len(self._pool.slots),
                driver=self._pool.driver.value,
                control_transport=self._pool.transport.value,
                containment=self._pool.containment.value,
            )
            life.start_soon(self._guardian.follow, link)
            self._files.make_dirs()
            ipc = self._ipc.open()  # under the lock; the generation records where it is
            try:
                pin = generation.publish(self._root, self._spec.with_ipc(ipc))
            except generation.GenerationError as exc:
                raise WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED) from exc
            self._files.remove_stale()
            self._pool.endpoint_hash = self._files.endpoint_hash()
            self._server = await ControlServer.open(
                self._pool.transport, self._root, config.paths.socket_path, config.tcp.port
            )
            life.start_soon(self._server.serve, self._credential, self, self._telemetry)
            if self._metrics is not None:
                self._metrics.open(self._pool)  # under the lock, like the control server
            self._publish_state()
            self._files.publish_locator(self._credential)
        self._slots = Slots(self._pool, link, config, pin, self._on_ready, self._on_slot_exit)
        return self._slots

    # -- what the slots and the guardian report -----------------------------------------

    def _on_ready(self) -> None:
        starting = self._pool.status is PoolStatus.STARTING
        if starting and not self._files.progress_due():
            return  # the start's end publishes the state anyway
        self._publish_state_or_fail()
        if self._show_progress and starting:
            output.progress(self._pool.status_line())

    def _on_exited(self, frame: Exited) -> None:
        if self._slots is not None:
            self._slots.exited(frame.slot, frame.exit_kind)

    def _on_slot_exit(self) -> None:
        if self._pool.status is not PoolStatus.STOPPING:
            # A stop is one burst of exits, and its state file goes.
            self._publish_state_or_fail()

    def _publish_state(self) -> None:
        published = self._files.publish_state(self._pool)
        if published and self._pool.status is PoolStatus.RUNNING:
            self._notifier.status(self._pool.status_line())

    def _publish_state_or_fail(self) -> None:
        try:
            self._publish_state()
        except WorkerError as exc:
            self._pool.fail(exc)

    # -- control ------------------------------------------------------------------------

    def answer(self, command: ControlCommand) -> ControlResponse:
        """Answer ``status`` or ``health`` from the live pool."""
        event("control.served", logging.DEBUG, operation=command.value)
        if command is ControlCommand.HEALTH:
            return self._pool.health()
        pool = self._pool
        return StatusResponse(
            pool.summary(),
            slot_resident_kib(pool),
            pool.recycles[RecycleCause.MAX_REQUESTS],
            pool.recycles[RecycleCause.MAX_MEMORY],
        )

    @property
    def pool(self) -> Pool:
        """The live pool: its ``summary()`` and ``health()`` only read its fields, so a
        mounted pool's host reads them from its own thread (as the metrics endpoint does)."""
        return self._pool

    def subscribe_stop(self) -> trio.MemoryReceiveChannel[ControlResponse]:
        """Register a ``stop`` client and request shutdown."""
        event("control.served", operation=ControlCommand.STOP.value)
        send, receive = trio.open_memory_channel[ControlResponse](math.inf)
        self._subscribers.append(send)
        self._pool.request_stop(StopCause.OPERATOR)
        return receive

    def request_stop(self) -> None:
        """Stop the pool as the application asks (``ProcessManager.stop`` in the parent),
        even while starting: ``start()`` then returns normally, as for a worker's own
        shutdown request (not an operator cancelling a start)."""
        self._pool.request_stop(StopCause.APPLICATION)

    def _broadcast(self, response: ControlResponse) -> None:
        for subscriber in self._subscribers:
            try:
                subscriber.send_nowait(response)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                continue

    async def _feed_watchdog(self, interval_s: float) -> None:
        """``WATCHDOG=1`` from the event loop: a wedged loop stops feeding it."""
        while True:
            self._notifier.watchdog()
            await trio.sleep(interval_s)

    async def _watch_signals(self, received: AsyncIterator[int]) -> None:
        async for signum in received:
            if signum != signal.SIGHUP:  # SIGHUP is ignored: there is no reload to do
                self._pool.request_stop(StopCause.OPERATOR)

    # -- shutdown -----------------------------------------------------------------------

    async def _shutdown(self) -> None:
        link = self._link
        if link is None:
            return
        pool = self._pool
        guardian = self._guardian
        pool.status = PoolStatus.STOPPING
        stopping = self._telemetry.process("stop")
        self._notifier.stopping()
        event("pool.stopping")
        if self._files.state_published:
            try:
                self._publish_state()
                self._files.write_stop_flag()
            except (WorkerError, OSError):
                pass  # diagnostics only; shutdown must go on regardless
        if not guardian.lost:
            try:
                await link.send(Shutdown())
            except WorkerError:
                guardian.lost = True
        budgets = self._config.budgets
        budget = (budgets.stop_timeout_ms + 2 * budgets.force_kill_timeout_ms) / 1000
        with trio.move_on_after(budget + SHUTDOWN_SLACK_S):
            await guardian.drained.wait()
        clean = guardian.clean is True and not guardian.lost
        cleaned = self._close_files()
        released = clean and await guardian.release(link)
        if not released:
            # Decided before the guardian is let go: it keeps the lock while a process of
            # the generation survives, and the stop clients must hear why within their
            # own deadline, not after the supervisor gave up waiting for the guardian.
            pool.fail(WorkerLifecycleFailedError(Reason.SHUTDOWN_FAILED))
        if not cleaned:
            pool.fail(WorkerLifecycleFailedError(Reason.RUNTIME_CLEANUP_FAILED))
        final: ControlResponse = (
            StoppedResponse() if released else ErrorResponse(Reason.SHUTDOWN_FAILED)
        )
        self._broadcast(final)
        for subscriber in self._subscribers:
            subscriber.close()
        if not clean:
            budget_s = self._config.budgets.force_kill_timeout_ms / 1000
            await guardian.let_go(link, budget_s, self._left_cgroup(link))
        if pool.failure is None:
            event("pool.stopped", outcome="forced" if guardian.forced else "clean")
        else:
            fault = pool.failure.fault
            event(
                "pool.failed",
                logging.ERROR,
                reason=pool.failure.reason.value,
                status=pool.failure.code.value,
                **({} if fault is None else {"fault": fault.value}),
            )
        stopping.finish("success" if released and cleaned else "failure")
        if self._server is not None:
            await self._server.wait_idle(RELEASE_TIMEOUT_S)

    def _left_cgroup(self, link: GuardianLink) -> GenerationCgroup | None:
        """The generation's cgroup a lost guardian may have left (``cgroup`` level only)."""
        if self._pool.containment is not Containment.CGROUP:
            return None
        return generation_cgroup(self._root, link.process.pid)

    def _close_files(self) -> bool:
        """Close the listeners and remove every runtime file; False if one resisted.

        Every removal is attempted even if an earlier one fails: the locator above all
        must not outlive the pool.
        """
        cleaned = True
        if self._metrics is not None:
            self._metrics.close()
        if self._server is not None:
            try:
                self._server.close()
            except OSError:
                cleaned = False
        if not self._files.remove_all():
            cleaned = False
        if not self._ipc.close():
            cleaned = False
        return cleaned
