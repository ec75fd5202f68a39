"""The supervisor's in-memory picture of the pool: slots, readiness, status, its end.

Pure state, no I/O. Besides what ``status`` and ``health`` project, the pool holds the
one fact that ends a run: the first failure, or a stop and who asked for it. Recording
either cancels every scope opened with :meth:`Pool.until_ending`, so the start, the
serving wait and each slot's supervision end by cancellation, never by polling a flag.
"""

from __future__ import annotations

import enum
import math
from types import TracebackType

import attrs
import trio

from coretsia.supervisor.generation.spec import GenerationSpec
from coretsia.worker_protocol.catalogue import HealthReason, Reason, SourceFault
from coretsia.worker_protocol.control import HealthResponse, PoolSummary
from coretsia.worker_protocol.exceptions import WorkerError
from coretsia.worker_protocol.internal.runtime.exit_kind import ExitKind
from coretsia.worker_protocol.vocabulary import Containment, Driver, PoolStatus, Transport
from coretsia.worker_protocol.worker_channel import RecycleCause


class SlotState(enum.Enum):
    """Where one slot's current worker is in its life."""

    SPAWNING = "spawning"
    READY = "ready"
    EXITED = "exited"


class StopCause(enum.Enum):
    """Who asked the pool to stop: it decides whether a stop while starting is a failure."""

    OPERATOR = "operator"
    """A signal or a control ``stop``: while starting, the start is cancelled."""
    APPLICATION = "application"
    """``ProcessManager.stop`` or a worker's ``shutdown-request``: the pool just ends."""


@attrs.define
class Slot:
    """One worker slot; its worker may be replaced (recycled) over the pool's life.

    Plain data: the story of its current worker's life moves it
    (:func:`coretsia.supervisor.daemon.worker_life.hear`), and :meth:`renew` forgets that worker
    when the next one is spawned.
    """

    index: int
    entry: bool = False
    """A process entry's slot (seed 003): replaced when its worker exits, not fatal."""
    state: SlotState = SlotState.SPAWNING
    failed_reason: Reason | None = None
    retiring: bool = False
    retire_cause: RecycleCause = RecycleCause.MAX_REQUESTS
    """Why the current worker asked to retire (read once ``retiring``)."""
    granted: bool = False
    """The current worker, having asked, was granted its retirement (``retire`` sent)."""
    started: bool = False
    """Some worker of this slot has been ready: for an entry, what ``start`` waits for."""
    exit_kind: ExitKind | None = None
    """How the current worker ended (the guardian's word), once ``state`` is EXITED."""
    spawned_at: float = -math.inf
    """When the current worker was spawned (``trio.current_time``), for the respawn pace."""
    ready_at: float | None = None
    """When the current worker became ready, for an entry's back-off reset."""
    rapid_exits: int = 0
    """Consecutive short-lived workers of an entry: the back-off exponent."""
    unresponsive: bool = False
    """The current worker, ready, has been silent past ``heartbeat_timeout_ms``."""
    pid: int | None = None
    """The current worker's pid as the guardian reported it (``spawned`` to ``exited``)."""
    failed_fault: SourceFault | None = None
    """With ``failed_reason``: why the worker's task source could not reach its backend."""
    source_fault: SourceFault | None = None
    """The current worker's task source lost its backend and is reconnecting (why)."""

    def renew(self, now: float) -> None:
        """Forget the previous worker: a new one is being spawned."""
        self.state = SlotState.SPAWNING
        self.failed_reason = None
        self.retiring = False
        self.retire_cause = RecycleCause.MAX_REQUESTS
        self.granted = False
        self.exit_kind = None
        self.spawned_at = now
        self.ready_at = None
        self.unresponsive = False
        self.pid = None
        self.failed_fault = None
        self.source_fault = None


@attrs.define
class Pool:
    """Slots plus the pool-wide facts that ``status`` and ``health`` project."""

    pid: int
    driver: Driver
    transport: Transport
    containment: Containment
    endpoint_hash: str
    slots: list[Slot]
    status: PoolStatus = PoolStatus.STARTING
    failure: WorkerError | None = None
    """The first failure; later ones are consequences and do not replace it."""
    stop_cause: StopCause | None = None
    recycles: dict[RecycleCause, int] = attrs.field(factory=lambda: dict.fromkeys(RecycleCause, 0))
    """Workers recycled (retired cleanly and replaced) over the pool's life, by cause."""
    started: trio.Event = attrs.field(factory=trio.Event)
    """Set once every slot has started (:attr:`all_started`): what ``start`` waits for."""
    _scopes: set[trio.CancelScope] = attrs.field(factory=set)

    @classmethod
    def of_generation(
        cls,
        spec: GenerationSpec,
        pid: int,
        driver: Driver,
        transport: Transport,
        containment: Containment,
    ) -> Pool:
        """The starting pool of a generation: its task slots, then one per process entry."""
        entries = 0 if spec.processes is None else len(spec.processes.entries)
        slots = [Slot(i, entry=i >= spec.workers) for i in range(spec.workers + entries)]
        return cls(
            pid=pid,
            driver=driver,
            transport=transport,
            containment=containment,
            endpoint_hash="0" * 32,
            slots=slots,
        )

    @property
    def ready_count(self) -> int:
        """Slots whose current worker sent its readiness frame and is alive."""
        return sum(1 for slot in self.slots if slot.state is SlotState.READY)

    @property
    def all_ready(self) -> bool:
        """Every slot ready."""
        return self.ready_count == len(self.slots)

    @property
    def all_started(self) -> bool:
        """What ``start`` waits for: every task slot ready, every entry ready once.

        An entry that returns at once is replaced over and over (seed 003), so it may
        never be ready at the same instant as the others; its first readiness counts.
        """
        return all(
            slot.state is SlotState.READY or (slot.entry and slot.started) for slot in self.slots
        )

    @property
    def ending(self) -> bool:
        """A stop was asked for or a failure happened: the run is over but for shutdown."""
        return self.failure is not None or self.stop_cause is not None

    def note_ready(self) -> None:
        """A slot became ready: wake ``start`` once every slot has started."""
        if self.all_started:
            self.started.set()

    def fail(self, exc: WorkerError) -> None:
        """Record the run's failure (the first one only) and end the run."""
        if self.failure is None:
            self.failure = exc
        self._end()

    def request_stop(self, cause: StopCause) -> None:
        """Record a stop (the first cause counts) and end the run."""
        if self.stop_cause is None:
            self.stop_cause = cause
        self._end()

    def until_ending(self) -> _UntilEnding:
        """A scope that the pool's first stop or failure cancels (at once if it came)."""
        return _UntilEnding(self._scopes, cancelled=self.ending)

    def _end(self) -> None:
        for scope in self._scopes:
            scope.cancel()

    @property
    def reconnecting_count(self) -> int:
        """Ready slots whose worker's task source is reconnecting."""
        return sum(
            1
            for slot in self.slots
            if slot.state is SlotState.READY and slot.source_fault is not None
        )

    def status_line(self) -> str:
        """The service manager's one-line status: safe fields only."""
        return f"{self.status.value}: {self.ready_count}/{len(self.slots)} workers ready"

    def summary(self) -> PoolSummary:
        """The safe live summary (``status``)."""
        return PoolSummary(
            pool_status=self.status,
            pid=self.pid,
            worker_count=len(self.slots),
            ready_worker_count=self.ready_count,
            driver=self.driver,
            control_transport=self.transport,
            endpoint_hash=self.endpoint_hash,
            containment=self.containment,
            reconnecting_worker_count=self.reconnecting_count or None,
        )

    def health(self) -> HealthResponse:
        """Healthy only when running, every slot ready and heard from, no failure pending.

        A silent slot comes before a slot being replaced: a recycle ends by itself, a
        hung worker may be waiting for someone to act. A task source that is reconnecting
        comes between: its worker is alive, but serves nothing until its backend is back.
        """
        if self.failure is not None:
            reason = HealthReason.CHILD_FAILURE_PENDING
        elif self.status is PoolStatus.STARTING:
            reason = HealthReason.STARTING
        elif self.status is PoolStatus.STOPPING:
            reason = HealthReason.STOPPING
        elif any(slot.unresponsive for slot in self.slots):
            reason = HealthReason.SLOT_UNRESPONSIVE
        elif self.reconnecting_count:
            reason = HealthReason.TASK_SOURCE_UNAVAILABLE
        elif not self.all_ready:
            reason = HealthReason.SLOTS_NOT_READY
        else:
            reason = HealthReason.HEALTHY
        return HealthResponse(self.summary(), healthy=reason is HealthReason.HEALTHY, reason=reason)


class _UntilEnding:
    """:meth:`Pool.until_ending`: a cancel scope the pool knows while it is entered.

    A class rather than a generator so that type checkers see it may swallow the
    cancellation (as the scope does): code after the ``with`` block is reachable.
    """

    def __init__(self, scopes: set[trio.CancelScope], *, cancelled: bool) -> None:
        self._scopes = scopes
        self._scope = trio.CancelScope()
        if cancelled:
            self._scope.cancel()

    def __enter__(self) -> trio.CancelScope:
        self._scopes.add(self._scope)
        return self._scope.__enter__()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        self._scopes.discard(self._scope)
        return self._scope.__exit__(kind, value, traceback)
