"""The registry of a named pool: its entries, its pool-wide IPC settings, and their closing.

:class:`Registry` is the one owner of registration state, and every way in uses its
public methods: ``ProcessManager`` (``add``, ``add_batch``, the setters),
:func:`~.discovery.discover` (:meth:`Registry.plan` every class, then one
:meth:`Registry.commit`), a ``[[process]]`` table (one :meth:`Registry.add`), the
runtime's start (:meth:`Registry.close`) and :func:`~.record.snapshot` (the queries).
Those modules import this one and never the other way round, which is what keeps
``process_entries/`` free of import cycles.

Rules, as seed 003 states them:

* every registered worker is one entry with a unique, case-sensitive name; an unnamed
  entry is named by its zero-based registration index, which is also its worker id
  (disabled entries take neither);
* a named batch of several workers expands to ``name:0``, ``name:1``, ...; a batch of
  one keeps ``name``; a batch of zero adds nothing;
* at most 1,024 workers in total, and a batch is atomic: if any of its names collides or
  it would pass the limit, nothing of it is added;
* registration and settings close at the first start attempt.

Every registration is validated whole before anything changes: the entry must be
re-creatable in a worker (:mod:`.targets`) and its effective async flag must match its
shape (:func:`.definition.effective_async`), even for a batch of zero or a disabled
entry, so that enabling it later cannot reveal an old mistake.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, final

import attrs

from coretsia.supervisor.process_entries.definition import (
    AsyncOverride,
    Process,
    ProcessDefinition,
    effective_async,
)
from coretsia.supervisor.process_entries.errors import (
    AsyncMismatchError,
    DuplicateProcessNameError,
    ProcessLimitExceededError,
    ProcessTargetError,
    RegistrationClosedError,
)
from coretsia.supervisor.process_entries.rules import (
    IPC_NONE,
    MAX_WORKERS,
    check_flag,
    check_ipc_type,
    check_msg_queue_key,
    check_name,
    check_worker_num,
)
from coretsia.supervisor.process_entries.targets import async_shape, describe, is_process

if TYPE_CHECKING:
    from collections.abc import Iterable

    from coretsia.supervisor.process_entries.decorator import Discovered

__all__ = ["Batch", "ProcessEntry", "Registry", "RegistryOwner", "registry_of"]


@final
@attrs.frozen
class ProcessEntry:
    """One registered worker: its name and id, the effective task and how to rebuild it.

    ``task`` is what :meth:`ProcessManager.get` returns; ``target`` and ``kind`` are the
    address and kind of :mod:`.targets`; ``enable_async`` is the effective flag. Read-only:
    :meth:`Registry.entries` hands out the registry's own records. ``repr`` leaves out the
    name, the task and the target: they carry the application's words (errors' rule).
    """

    name: str = attrs.field(repr=False)
    worker_id: int
    task: Process = attrs.field(repr=False)
    target: str = attrs.field(repr=False)
    kind: str
    enable_async: bool


@final
@attrs.frozen
class Batch:
    """A validated registration waiting for :meth:`Registry.commit`: nothing has names yet.

    ``worker_num`` is 0 for a disabled task, whatever count was asked for.
    """

    worker_num: int
    task: Process = attrs.field(repr=False)
    name: str | None = attrs.field(repr=False)
    target: str = attrs.field(repr=False)
    kind: str
    enable_async: bool


@final
class Registry:
    """A named pool's entries by name, in worker-id order, plus the pool-wide IPC settings.

    ``ipc_type`` is one of ``none`` (default), ``unixsock`` and ``msgqueue``;
    ``msg_queue_key`` is the System V key for ``msgqueue``, 0 for a private queue. Not
    thread-safe: register from one thread, before the pool starts.
    """

    __slots__ = ("_closed", "_discovered", "_entries", "_ipc_type", "_msg_queue_key")

    def __init__(self, ipc_type: str = IPC_NONE, msg_queue_key: int = 0) -> None:
        self._ipc_type = check_ipc_type(ipc_type)
        self._msg_queue_key = check_msg_queue_key(msg_queue_key)
        self._entries: dict[str, ProcessEntry] = {}
        self._discovered: tuple[Discovered, ...] = ()
        self._closed = False

    # -- registration ---------------------------------------------------------------

    def add(self, worker_num: object, process: object, enable_async: object, name: object) -> None:
        """Register ``worker_num`` workers running ``process``, all or none."""
        self.commit([self.plan(worker_num, process, enable_async, name)])

    def plan(
        self,
        worker_num: object,
        process: object,
        enable_async: object,
        name: object,
    ) -> Batch:
        """Validate one registration completely, without changing the registry.

        ``process`` is a :class:`Process` or a callable ``(pool, worker_id)``, adapted to
        a :class:`ProcessDefinition`. ``enable_async`` ``None`` inherits the task's flag;
        a bool overrides it without touching the task.
        """
        self.check_open()
        count = check_worker_num(worker_num)
        override = check_flag(enable_async, optional=True)
        explicit = None if name is None else check_name(name)
        if isinstance(process, (ProcessDefinition, AsyncOverride)) or is_process(process):
            task: Any = process
        elif callable(process) and not isinstance(process, type):
            task = ProcessDefinition(process)
        else:
            task = process  # describe() explains what is wrong with it
        target, kind = describe(task)
        own = _flag(task, "enable_async")
        enabled = _flag(task, "enabled")
        effective = effective_async(override, own)
        if effective != async_shape(task):
            raise AsyncMismatchError(name=explicit)
        if override is not None:
            task = (
                ProcessDefinition(task.function, enable_async=override, enabled=enabled)
                if isinstance(task, ProcessDefinition) and task is not process
                else AsyncOverride(task, override)
            )
        return Batch(count if enabled else 0, task, explicit, target, kind, effective)

    def commit(self, batches: Iterable[Batch], discovered: Iterable[Discovered] = ()) -> None:
        """Name and add every worker of ``batches``, or nothing if any rule breaks.

        Named: ``name`` for one worker, ``name:0`` ... ``name:N-1`` for several; unnamed:
        each worker is named by its worker id. ``discovered`` are the decorator
        declarations behind ``batches`` (from :func:`.discovery.discover`), recorded with
        them for the generation.
        """
        self.check_open()
        worker_id = len(self._entries)
        added: dict[str, ProcessEntry] = {}
        for batch in batches:
            for index in range(batch.worker_num):
                if batch.name is None:
                    name = str(worker_id)
                elif batch.worker_num == 1:
                    name = batch.name
                else:
                    name = f"{batch.name}:{index}"
                if name in self._entries or name in added:
                    raise DuplicateProcessNameError(name=name)
                if worker_id >= MAX_WORKERS:
                    raise ProcessLimitExceededError
                added[name] = ProcessEntry(
                    name, worker_id, batch.task, batch.target, batch.kind, batch.enable_async
                )
                worker_id += 1
        self._entries.update(added)
        self._discovered += tuple(discovered)

    def check_open(self) -> None:
        """Refuse any change once closed (:class:`RegistrationClosedError`)."""
        if self._closed:
            raise RegistrationClosedError

    def close(self) -> None:
        """Freeze registration and settings; the runtime's start calls this first.

        Seed 003 closes them on the first start *attempt*, so a start that fails still
        leaves them closed. Idempotent.
        """
        self._closed = True

    @property
    def closed(self) -> bool:
        """True once a start has been attempted: registration and settings are frozen."""
        return self._closed

    # -- queries --------------------------------------------------------------------

    def entries(self) -> tuple[ProcessEntry, ...]:
        """Every registered worker in worker-id order, with its address (for the runtime)."""
        return tuple(self._entries.values())

    def find(self, name: object) -> ProcessEntry | None:
        """The entry named ``name``, or None (also for a name that is not a ``str``)."""
        return self._entries.get(name) if isinstance(name, str) else None

    def discovered(self) -> tuple[Discovered, ...]:
        """The ``@process`` declarations :func:`.discovery.discover` found, in order."""
        return self._discovered

    # -- pool-wide settings ---------------------------------------------------------

    @property
    def ipc_type(self) -> str:
        """The IPC mode every worker shares: ``none``, ``unixsock`` or ``msgqueue``."""
        return self._ipc_type

    def set_ipc_type(self, ipc_type: object) -> None:
        """Change the IPC mode while registration is open."""
        self.check_open()
        self._ipc_type = check_ipc_type(ipc_type)

    @property
    def msg_queue_key(self) -> int:
        """The System V message-queue key (0: a private queue)."""
        return self._msg_queue_key

    def set_msg_queue_key(self, msg_queue_key: object) -> None:
        """Change the message-queue key while registration is open."""
        self.check_open()
        self._msg_queue_key = check_msg_queue_key(msg_queue_key)


class RegistryOwner(Protocol):
    """What holds a registry: a ``ProcessManager``, named by its shape.

    :func:`~.record.snapshot` and :func:`~.discovery.discover` accept a manager or a
    registry. The manager imports the runtime, which writes snapshots, so those modules
    name the manager by what they read from it instead of importing it.
    """

    @property
    def registry(self) -> Registry: ...


def registry_of(source: Registry | RegistryOwner) -> Registry:
    """``source`` itself, or the registry a manager holds."""
    return source if isinstance(source, Registry) else source.registry


def _flag(task: object, attribute: str) -> bool:
    """Read ``enabled`` or ``enable_async``, which the Process protocol says are bools."""
    try:
        value = getattr(task, attribute)
    except AttributeError:
        raise ProcessTargetError(
            "a process entry needs readable enabled and enable_async flags"
        ) from None
    if type(value) is not bool:
        raise ProcessTargetError("a process entry's enabled and enable_async must be bools")
    return value
