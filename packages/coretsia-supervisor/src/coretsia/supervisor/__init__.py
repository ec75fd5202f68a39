"""Coretsia Worker's supervisor: ``coretsia-supervisor`` and the ``coretsia-worker`` launcher.

Nearly empty on purpose: every worker boots through ``coretsia.supervisor.launcher``, and
importing this package must cost it nothing. :class:`ProcessManager` (seed 003's named
pools, ``coretsia.supervisor.process``) is reachable from here too, loaded on first use
(PEP 562).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coretsia.supervisor.process.manager import ProcessManager as ProcessManager

__all__ = ["ProcessManager"]


def __getattr__(name: str) -> object:
    # The helper is imported here, not with the package: the wheel's build hook
    # (hatch_build.py) imports this package where only the build requirements exist.
    from coretsia.worker_protocol.internal.runtime.lazy import lazy_getattr

    return lazy_getattr(__name__, name, {"process.manager": ("ProcessManager",)})
