"""Seed 000's runtime-entrypoint guard: at ``start``, and again at every task worker's boot.

Each task type needs a runtime entrypoint (``queue``: ``bg.worker_queue``, ``http``:
``http.worker``; :mod:`coretsia.worker_protocol.runtime_entrypoints`), available only when
an installed distribution provides it. The seed orders the guard twice:

* ``start`` runs :func:`resolve_runtime_entrypoint` right after the configuration is
  validated, before the driver, the transport and the task source are resolved and
  before anything is launched (an HTTP pool without an HTTP runtime never looks for an
  HTTP source). It reads the installed entry points with the supervisor's own light
  reader (:mod:`coretsia.supervisor.shared.entry_points`), imports the provider's object, and
  the result (the entrypoint and the provider's ``module:attr``) is frozen into the
  generation.
* every task worker runs :func:`check_runtime_entrypoint` at boot, before its task source
  is resolved and before ``ready``: seed 000's child checks the guard against its
  artifacts (the module plan), not against a fresh discovery. So the worker never reads
  installed-package metadata (which would cost every boot the metadata scan): it checks
  that the generation's entrypoint is the one its task type needs, and imports the frozen
  provider, which proves the distribution is still installed (one removed while the pool
  runs fails the next recycled worker). For ``bg.worker_queue`` the provider is
  :func:`coretsia.supervisor.worker_side.task_worker.serve_tasks`, which the boot has imported
  already: the queue worker's check costs no import at all.

Both failures are ``CORETSIA_RUNTIME_ENTRYPOINT_FAILED: runtime-entrypoint-unavailable``
(:class:`~coretsia.worker_protocol.exceptions.RuntimeEntrypointError`), the Kernel guard's
own code, never a worker failure: ``start`` raises it; a worker sends its token in the
``failed`` frame, and the supervisor fails the pool with the same error
(:mod:`coretsia.supervisor.daemon.slots`).
"""

from __future__ import annotations

from coretsia.supervisor.generation.spec import RuntimeEntrypoint
from coretsia.supervisor.worker_side.exits import failure
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import RuntimeEntrypointError
from coretsia.worker_protocol.internal.runtime.imports import import_target
from coretsia.worker_protocol.runtime_entrypoints import RUNTIME_ENTRYPOINT_GROUP, entrypoint_for

__all__ = ["check_runtime_entrypoint", "resolve_runtime_entrypoint"]


def resolve_runtime_entrypoint(task_type: str) -> RuntimeEntrypoint:
    """The generation's record of the runtime entrypoint ``task_type`` needs.

    Its name and provider (``module:attr``), from the first installed
    distribution that provides it (``sys.path`` order, as an import would find it), or
    :class:`~coretsia.worker_protocol.exceptions.RuntimeEntrypointError` when none does or
    the provider's object cannot be imported (the exception kept as the cause).
    """
    # start-up budget: docs/performance.md#start-up-import-rules
    from coretsia.supervisor.shared.entry_points import entry_points

    name = entrypoint_for(task_type)
    provided = [e for e in entry_points(group=RUNTIME_ENTRYPOINT_GROUP) if e.name == name]
    if not provided:
        raise RuntimeEntrypointError(name)
    try:
        provided[0].load()
    except Exception as exc:
        raise RuntimeEntrypointError(name) from exc
    return RuntimeEntrypoint(name=name, provider=provided[0].value)


def check_runtime_entrypoint(task_type: str, record: RuntimeEntrypoint | None) -> None:
    """The boot's guard over the generation's ``runtime_entrypoint`` record.

    Leaves the worker with ``failed(runtime-entrypoint-unavailable)`` when the record does
    not name the entrypoint ``task_type`` needs, or its provider no longer imports.
    """
    if record is None or record.name != entrypoint_for(task_type):
        raise failure(Reason.RUNTIME_ENTRYPOINT_UNAVAILABLE)
    try:
        import_target(record.provider)
    except Exception as error:
        raise failure(Reason.RUNTIME_ENTRYPOINT_UNAVAILABLE) from error
