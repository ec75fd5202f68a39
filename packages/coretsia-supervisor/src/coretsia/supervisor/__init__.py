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
    """Import :class:`ProcessManager` on first use, not with the package."""
    if name != "ProcessManager":
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    from coretsia.supervisor.process.manager import ProcessManager

    return ProcessManager
