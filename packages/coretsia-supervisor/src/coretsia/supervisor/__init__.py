"""Coretsia Worker's supervisor: ``coretsia-supervisor`` and the ``coretsia-worker`` launcher.

Nearly empty on purpose: every worker boots through
``coretsia.supervisor.worker_side.launcher``, and importing this package must cost it
nothing. :class:`ProcessManager` (seed 003's named pools, ``coretsia.supervisor.process``)
and its contract :class:`ProcessManagerInterface` are reachable from here too, loaded on
first use (PEP 562).
"""

from __future__ import annotations

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from coretsia.supervisor.process_manager.interface import (
        ProcessManagerInterface as ProcessManagerInterface,
    )
    from coretsia.supervisor.process_manager.manager import ProcessManager as ProcessManager

__all__ = ["ProcessManager", "ProcessManagerInterface"]

_HOMES = {
    "process_manager.manager": ("ProcessManager",),
    "process_manager.interface": ("ProcessManagerInterface",),
}


def __getattr__(name: str) -> object:
    # The wheel's build hook (hatch_build.py) imports this package with only hatchling.
    # deferred: build hook
    from coretsia.worker_protocol._lazy import lazy_getattr

    return lazy_getattr(__name__, name, _HOMES)
