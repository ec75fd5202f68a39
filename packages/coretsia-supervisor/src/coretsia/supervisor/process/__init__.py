"""Named pools of process entries (seed 003): the public names, in one place.

Seed 003's ``ProcessManager`` on the Coretsia supervisor. This package is the facade users
import from; the code lives by program: what an entry is, its ``@process`` declaration
and discovery, the registry and its rules, the errors and the snapshot the generation
carries in :mod:`coretsia.supervisor.process_entries`; the manager with ``start``/``stop``
and the pool mounted in a host's event loop in :mod:`coretsia.supervisor.process_manager`;
how an entry worker rebuilds and runs an entry (:class:`Terminated`), the ``pool`` it
receives (:class:`WorkerPool`) and its message endpoint in
:mod:`coretsia.supervisor.worker_side` (``entry_worker``, ``entry_pool``, ``entry_ipc``).

Every worker is a fresh interpreter, so an entry is re-created there from its
``module:qualname`` (:func:`target_of`): the object registered in the parent is built
again in each worker, and anything without such an address is refused at registration.

Names are loaded lazily (PEP 562): an application module that only uses ``@process`` is
imported again by every worker, and should not pay for :mod:`typing` or :mod:`inspect`
there.
"""

from __future__ import annotations

from coretsia.worker_protocol._lazy import lazy_dir, lazy_getattr

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from coretsia.supervisor.process_entries.decorator import (
        Discovered as Discovered,
    )
    from coretsia.supervisor.process_entries.decorator import (
        ProcessDeclaration as ProcessDeclaration,
    )
    from coretsia.supervisor.process_entries.decorator import process as process
    from coretsia.supervisor.process_entries.definition import AsyncOverride as AsyncOverride
    from coretsia.supervisor.process_entries.definition import Process as Process
    from coretsia.supervisor.process_entries.definition import (
        ProcessDefinition as ProcessDefinition,
    )
    from coretsia.supervisor.process_entries.definition import effective_async as effective_async
    from coretsia.supervisor.process_entries.discovery import discover as discover
    from coretsia.supervisor.process_entries.errors import (
        AsyncMismatchError as AsyncMismatchError,
    )
    from coretsia.supervisor.process_entries.errors import (
        DuplicateProcessNameError as DuplicateProcessNameError,
    )
    from coretsia.supervisor.process_entries.errors import (
        HostLoopUnsupportedError as HostLoopUnsupportedError,
    )
    from coretsia.supervisor.process_entries.errors import (
        InvalidProcessNameError as InvalidProcessNameError,
    )
    from coretsia.supervisor.process_entries.errors import (
        IpcUnavailableError as IpcUnavailableError,
    )
    from coretsia.supervisor.process_entries.errors import (
        MessageBufferFullError as MessageBufferFullError,
    )
    from coretsia.supervisor.process_entries.errors import (
        MessageTooLargeError as MessageTooLargeError,
    )
    from coretsia.supervisor.process_entries.errors import NestedPoolError as NestedPoolError
    from coretsia.supervisor.process_entries.errors import (
        PeerUnavailableError as PeerUnavailableError,
    )
    from coretsia.supervisor.process_entries.errors import (
        PoolAlreadyRunningError as PoolAlreadyRunningError,
    )
    from coretsia.supervisor.process_entries.errors import (
        ProcessArgumentError as ProcessArgumentError,
    )
    from coretsia.supervisor.process_entries.errors import ProcessError as ProcessError
    from coretsia.supervisor.process_entries.errors import (
        ProcessLimitExceededError as ProcessLimitExceededError,
    )
    from coretsia.supervisor.process_entries.errors import (
        ProcessNotFoundError as ProcessNotFoundError,
    )
    from coretsia.supervisor.process_entries.errors import (
        ProcessSnapshotError as ProcessSnapshotError,
    )
    from coretsia.supervisor.process_entries.errors import (
        ProcessTargetError as ProcessTargetError,
    )
    from coretsia.supervisor.process_entries.errors import (
        RegistrationClosedError as RegistrationClosedError,
    )
    from coretsia.supervisor.process_entries.record import SNAPSHOT_SCHEMA as SNAPSHOT_SCHEMA
    from coretsia.supervisor.process_entries.record import ProcessSnapshot as ProcessSnapshot
    from coretsia.supervisor.process_entries.record import (
        SnapshotDeclaration as SnapshotDeclaration,
    )
    from coretsia.supervisor.process_entries.record import SnapshotEntry as SnapshotEntry
    from coretsia.supervisor.process_entries.record import load_snapshot as load_snapshot
    from coretsia.supervisor.process_entries.record import snapshot as snapshot
    from coretsia.supervisor.process_entries.registry import ProcessEntry as ProcessEntry
    from coretsia.supervisor.process_entries.rules import IPC_MSGQUEUE as IPC_MSGQUEUE
    from coretsia.supervisor.process_entries.rules import IPC_NONE as IPC_NONE
    from coretsia.supervisor.process_entries.rules import IPC_UNIXSOCK as IPC_UNIXSOCK
    from coretsia.supervisor.process_entries.rules import MAX_MESSAGE_BYTES as MAX_MESSAGE_BYTES
    from coretsia.supervisor.process_entries.rules import MAX_WORKERS as MAX_WORKERS
    from coretsia.supervisor.process_entries.targets import target_of as target_of
    from coretsia.supervisor.process_manager.interface import (
        ProcessManagerInterface as ProcessManagerInterface,
    )
    from coretsia.supervisor.process_manager.manager import ProcessManager as ProcessManager
    from coretsia.supervisor.process_manager.mounted import MountedPool as MountedPool
    from coretsia.supervisor.worker_side.entry_pool import WorkerPool as WorkerPool
    from coretsia.supervisor.worker_side.entry_pool import current_pool as current_pool
    from coretsia.supervisor.worker_side.entry_worker import Terminated as Terminated

_HOMES = {
    "process_entries.decorator": ("Discovered", "ProcessDeclaration", "process"),
    "process_entries.definition": (
        "AsyncOverride",
        "Process",
        "ProcessDefinition",
        "effective_async",
    ),
    "process_entries.discovery": ("discover",),
    "process_entries.errors": (
        "AsyncMismatchError",
        "DuplicateProcessNameError",
        "HostLoopUnsupportedError",
        "InvalidProcessNameError",
        "IpcUnavailableError",
        "MessageBufferFullError",
        "MessageTooLargeError",
        "NestedPoolError",
        "PeerUnavailableError",
        "PoolAlreadyRunningError",
        "ProcessArgumentError",
        "ProcessError",
        "ProcessLimitExceededError",
        "ProcessNotFoundError",
        "ProcessSnapshotError",
        "ProcessTargetError",
        "RegistrationClosedError",
    ),
    "process_manager.interface": ("ProcessManagerInterface",),
    "process_manager.manager": ("ProcessManager",),
    "process_manager.mounted": ("MountedPool",),
    "process_entries.registry": ("ProcessEntry",),
    "process_entries.rules": (
        "IPC_MSGQUEUE",
        "IPC_NONE",
        "IPC_UNIXSOCK",
        "MAX_MESSAGE_BYTES",
        "MAX_WORKERS",
    ),
    "process_entries.record": (
        "SNAPSHOT_SCHEMA",
        "ProcessSnapshot",
        "SnapshotDeclaration",
        "SnapshotEntry",
        "load_snapshot",
        "snapshot",
    ),
    "process_entries.targets": ("target_of",),
    "worker_side.entry_worker": ("Terminated",),
    "worker_side.entry_pool": ("WorkerPool", "current_pool"),
}

__all__ = sorted(name for names in _HOMES.values() for name in names)


def __getattr__(name: str) -> object:
    return lazy_getattr(__name__, name, _HOMES, root="coretsia.supervisor")


def __dir__() -> list[str]:
    return lazy_dir(__name__, _HOMES)
