"""The supervisor's half of a pool's IPC: the resources one generation's workers share.

Seed 003's pool-wide IPC modes need something that outlives any one worker, so the
supervisor makes it, once per generation, and removes it when the generation ends:

* ``unixsock``: the private directory :data:`IPC_DIR` (mode 0700), in which each entry
  worker binds its own socket (see :mod:`coretsia.supervisor.worker_side.entry_ipc`);
* ``msgqueue``: a System V message queue, mode 0600, created exclusively with the
  ``msg_queue_key``; with key 0 ``sysv_ipc`` picks a fresh random key instead of
  ``IPC_PRIVATE``, because a worker is a fresh interpreter (not a fork that inherits the
  id) and ``sysv_ipc`` attaches to a queue only by key. Workers check the queue id too.

Order, in :class:`~coretsia.supervisor.daemon.supervisor.Supervisor`: :func:`require_ipc` runs
before the guardian is even launched (a missing ``sysv_ipc`` or a platform without it is
``CORETSIA_WORKER_CONFIG_INVALID`` on ``worker.ipc_type``, rule ``unavailable``, with
nothing started); :meth:`PoolIpc.open` runs once the guardian holds the lifecycle lock
and before the generation is published, which records where the resources are (its
``ipc`` key); :meth:`PoolIpc.close` runs in the shutdown's cleanup, on every path.

A supervisor killed with SIGKILL cannot clean up; its guardian stops the workers but
knows nothing of IPC (it never imports the supervisor's dependencies). What it left is
removed by the next start of the same root, under the same lock: the directory because
it is ours by name, the queue because the previous generation, still ``current`` on
disk, recorded its key and id (a queue is removed only if its key still names that id,
so another program's queue is never touched). Until then it stays (``ipcs -q``).
"""

from __future__ import annotations

import os
from pathlib import Path

from coretsia.supervisor.generation.published import (
    GenerationError,
    load_current_generation,
    remove_path,
)
from coretsia.supervisor.generation.spec import GenerationSpec, IpcRecord
from coretsia.supervisor.process_entries.rules import (
    IPC_MSGQUEUE,
    IPC_NONE,
    IPC_UNIXSOCK,
    MAX_MESSAGE_BYTES,
)
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.lifecycle import GENERATIONS_DIR, IPC_DIR

__all__ = ["PoolIpc", "require_ipc"]

_MODE = 0o600


def _mode_of(spec: GenerationSpec) -> tuple[str, int]:
    """The pool's IPC type and key: the process snapshot's, ``none`` without entries."""
    processes = spec.processes
    if processes is None or not processes.entries:
        return IPC_NONE, 0
    return processes.ipc_type, processes.msg_queue_key


def require_ipc(spec: GenerationSpec) -> None:
    """Refuse a pool whose IPC mode cannot work here, before anything is started.

    ``msgqueue`` needs ``sysv_ipc`` (the ``ipc`` extra), which cannot be installed or
    imported where the platform has no System V IPC.
    """
    if _mode_of(spec)[0] != IPC_MSGQUEUE:
        return
    try:
        # deferred: optional extra
        import sysv_ipc  # noqa: F401 - importable is all this checks
    except ImportError:
        raise WorkerConfigError("worker.ipc_type", ConfigRule.UNAVAILABLE) from None


class PoolIpc:
    """One generation's IPC resources: :meth:`open` them, then :meth:`close` them."""

    __slots__ = ("_ipc_type", "_key", "_msqid", "_root")

    def __init__(self, root: Path, spec: GenerationSpec) -> None:
        self._root = root
        self._ipc_type, self._key = _mode_of(spec)
        self._msqid: int | None = None

    def open(self) -> IpcRecord | None:
        """Remove a killed predecessor's leftovers, create this generation's resources.

        Returns the generation's ``ipc`` record, or None for a pool without IPC. Call
        with the lifecycle lock held and before publishing the generation.
        """
        self._remove_stale()
        if self._ipc_type == IPC_UNIXSOCK:
            try:
                os.mkdir(self._root / IPC_DIR, 0o700)
            except OSError:
                raise WorkerConfigError("worker.ipc_type", ConfigRule.UNAVAILABLE) from None
            return IpcRecord(unixsock_dir=IPC_DIR)
        if self._ipc_type == IPC_MSGQUEUE:
            return self._create_queue()
        return None

    def close(self) -> bool:
        """Remove this generation's resources; False if one resisted. Idempotent."""
        cleaned = True
        if self._msqid is not None:
            # deferred: optional extra
            import sysv_ipc

            try:
                sysv_ipc.remove_message_queue(self._msqid)
            except sysv_ipc.ExistentialError:
                pass  # removed by hand (ipcrm) meanwhile
            except (sysv_ipc.Error, OSError):
                cleaned = False
            self._msqid = None
        try:
            remove_path(str(self._root / IPC_DIR))
        except OSError:
            cleaned = False
        return cleaned

    def _create_queue(self) -> IpcRecord:
        # deferred: optional extra
        import sysv_ipc

        try:
            queue = sysv_ipc.MessageQueue(
                self._key or None,  # None: a fresh random key (see the module docstring)
                sysv_ipc.IPC_CREX,
                mode=_MODE,
                max_message_size=MAX_MESSAGE_BYTES,
            )
        except (sysv_ipc.ExistentialError, sysv_ipc.PermissionsError):
            # The key names a queue that is not ours to take over: another program's,
            # or one this root's own history does not account for (see ipcs -q).
            raise WorkerConfigError("worker.msg_queue_key", ConfigRule.DUPLICATE) from None
        except (OSError, MemoryError):  # ENOSYS (no SysV IPC in this kernel), ENOSPC
            raise WorkerConfigError("worker.ipc_type", ConfigRule.UNAVAILABLE) from None
        self._msqid = queue.id
        return IpcRecord(msgqueue_key=queue.key, msgqueue_id=queue.id)

    def _remove_stale(self) -> None:
        """What a SIGKILLed supervisor of this root left behind (module docstring)."""
        try:
            remove_path(str(self._root / IPC_DIR))
        except OSError:
            raise WorkerConfigError("worker.ipc_type", ConfigRule.UNAVAILABLE) from None
        try:
            _, previous = load_current_generation(self._root, GENERATIONS_DIR)
        except GenerationError:
            return  # none yet, or unreadable: then it recorded nothing we could trust
        record = previous.ipc
        if record is None or record.msgqueue_key is None or record.msgqueue_id is None:
            return
        key, msqid = record.msgqueue_key, record.msgqueue_id
        try:
            # deferred: optional extra
            import sysv_ipc
        except ImportError:
            return  # it cannot have been created here without it
        try:
            if sysv_ipc.MessageQueue(key).id == msqid:
                sysv_ipc.remove_message_queue(msqid)
        except (sysv_ipc.Error, OSError):
            pass  # gone already, or not ours: nothing of this root to clean
