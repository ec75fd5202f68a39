"""Runtime entrypoints: which installed runtime a task type needs. Public and stable.

Seed 000 maps each task type to a runtime entrypoint of the Kernel (``queue`` to
``bg.worker_queue``, ``http`` to ``http.worker``) and lets a pool start only when that
entrypoint is available: an HTTP pool without an HTTP runtime installed fails at the
guard, before any task source is looked for. In Python an entrypoint is *available* when
an installed distribution provides it as an entry point of the group
:data:`RUNTIME_ENTRYPOINT_GROUP`, named for the entrypoint, whose object can be imported::

    [project.entry-points."coretsia.worker.runtime_entrypoints"]
    "http.worker" = "my_http_runtime:runtime"

``coretsia-supervisor`` provides ``bg.worker_queue`` itself; nothing in the Coretsia
distributions provides ``http.worker``. The object is not called: providing it is the
distribution's statement that it carries that runtime, and importing it proves the
distribution is really there.

A missing entrypoint is ``CORETSIA_RUNTIME_ENTRYPOINT_FAILED: runtime-entrypoint-unavailable``
(:class:`~coretsia.worker_protocol.exceptions.RuntimeEntrypointError`, naming the
entrypoint): the Kernel guard's own failure, never reclassified as a worker failure.
"""

from __future__ import annotations

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import Final

__all__ = ["RUNTIME_ENTRYPOINT_GROUP", "TASK_TYPE_ENTRYPOINTS", "entrypoint_for"]

RUNTIME_ENTRYPOINT_GROUP: Final = "coretsia.worker.runtime_entrypoints"
"""The entry-point group through which distributions provide runtime entrypoints."""

TASK_TYPE_ENTRYPOINTS: Final[dict[str, str]] = {
    "queue": "bg.worker_queue",
    "http": "http.worker",
}
"""Seed 000's mapping of ``worker.task_type`` to the runtime entrypoint it needs."""


def entrypoint_for(task_type: str) -> str:
    """The runtime entrypoint ``task_type`` needs; :class:`KeyError` for an unknown type."""
    return TASK_TYPE_ENTRYPOINTS[task_type]
