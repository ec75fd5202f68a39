"""Lazy exports (PEP 562): a package's public names, each imported on first use.

Every worker boots by importing one submodule of ``coretsia.worker_protocol`` or
``coretsia.supervisor``, and Python runs the package's ``__init__`` first: re-exporting
the public names eagerly there would make every boot and every ``status`` probe pay for
modules it never touches. A package instead declares where each name lives and its
``__getattr__`` and ``__dir__`` call the two functions here.

They import this module inside those functions, not with the package: the hot paths
import submodules, never a package-level name, so they never load it (nor the packages
above it). Once loaded it stays as cheap as the package ``__init__`` modules must be:
``__import__`` and :data:`sys.modules`, never :mod:`importlib` or :mod:`typing`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["lazy_dir", "lazy_getattr"]


def lazy_getattr(
    package: str, name: str, homes: Mapping[str, tuple[str, ...]], *, root: str | None = None
) -> object:
    """``package.name``, imported from its home submodule; the package's ``__getattr__``.

    ``homes`` maps each submodule, named relative to ``root`` (by default the package
    itself: ``"vocabulary"``, ``"process_manager.manager"``), to the public names it
    defines; a facade whose names live in its sibling packages passes their parent. The
    value is then stored on the package, so later lookups never come back here. A name no
    submodule exports is the :class:`AttributeError` Python would raise.
    """
    for module, names in homes.items():
        if name in names:
            home = f"{root or package}.{module}"
            __import__(home)
            value = getattr(sys.modules[home], name)
            setattr(sys.modules[package], name, value)
            return value
    msg = f"module {package!r} has no attribute {name!r}"
    raise AttributeError(msg)


def lazy_dir(package: str, homes: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The package's globals and every export, loaded or not; the package's ``__dir__``."""
    return sorted({*vars(sys.modules[package]), *(n for names in homes.values() for n in names)})
