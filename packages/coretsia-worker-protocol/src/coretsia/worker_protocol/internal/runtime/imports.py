"""The one import walk from a ``module:attr`` address to the object it names.

Coretsia freezes addresses, never objects: a task-source factory and hooks in the
generation, a process entry's target, an installed entry point's value, the ``sqlite``
source's handler. Every worker is a fresh interpreter that follows the address again.
Each caller maps a failure to its own reason (a source is unresolvable, a hook fails the
start, an entry cannot be rebuilt, a handler is an invalid target), so this only walks
and lets the import's or the walk's exception through.
"""

from __future__ import annotations

import importlib

__all__ = ["import_target"]


def import_target(target: str) -> object:
    """Import ``module`` and follow the dotted ``attr`` path; no ``attr``: the module.

    ``__main__`` is whatever ``sys.modules`` holds under that name (an entry worker puts
    the re-imported application script there, as multiprocessing's spawn does). Raises
    :class:`ValueError` for an address without a module, else what the import or an
    attribute lookup raises.
    """
    module_name, _, attr_path = target.partition(":")
    if not module_name:
        raise ValueError("an address needs a module")
    found: object = importlib.import_module(module_name)
    for part in attr_path.split(".") if attr_path else ():
        found = getattr(found, part)
    return found
