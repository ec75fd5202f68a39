"""Installed entry points of one group, read without :mod:`importlib.metadata`.

``start`` discovers task sources and hooks from installed distributions once, and the
supervisor then lives for weeks. :mod:`importlib.metadata` pulls in ``email``, ``csv``,
``zipfile``, ``datetime`` and ``importlib.resources``, which stay in the supervisor's
memory for the whole run (deleting the modules afterwards gives none of it back; measured:
``docs/performance.md#timings-the-code-refers-to``). What discovery needs is small: the
``entry_points.txt`` of each distribution on ``sys.path``, an INI file of ``[group]``
sections and ``name = module:attr`` lines.

The rules follow :func:`importlib.metadata.entry_points` for what is installed on a
file system (``*.dist-info`` and ``*.egg-info`` directories, as pip, uv and setuptools
write them): ``sys.path`` in order, one distribution per normalised name (the first one
found wins, as an import would), entries in file order. Distributions inside zip files
are not read (``start`` never depends on one); a test checks that both readers agree on
every group of the project's environment.
"""

from __future__ import annotations

import os
import re
import sys

from coretsia.worker_protocol.internal.runtime.imports import import_target

__all__ = ["EntryPoint", "entry_points"]

_SUFFIXES = (".dist-info", ".egg-info")
_SEPARATORS = re.compile(r"[-_.]+")
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?(\[.*\]\s*)?$")


class EntryPoint:
    """One entry point: its ``name``, its ``value`` (``module:attr``) and :meth:`load`."""

    __slots__ = ("group", "name", "value")

    def __init__(self, name: str, value: str, group: str) -> None:
        self.name = name
        self.value = value
        self.group = group

    def load(self) -> object:
        """Import the module and return the attribute, as ``EntryPoint.load`` does."""
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError("malformed entry point")  # never the value: it is config
        return import_target(f"{match['module']}:{match['attr'] or ''}")

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, group={self.group!r})"


def entry_points(group: str) -> list[EntryPoint]:
    """Every installed entry point of ``group`` (see the module docstring)."""
    seen: set[str] = set()
    found: list[EntryPoint] = []
    for base in sys.path:
        for directory, name in _distributions(base or "."):
            if name in seen:
                continue
            seen.add(name)
            found.extend(_read(os.path.join(directory, "entry_points.txt"), group))
    return found


def _distributions(base: str) -> list[tuple[str, str]]:
    """``(metadata directory, normalised name)`` of the distributions directly in ``base``."""
    try:
        names = os.listdir(base)
    except OSError:
        return []
    found = []
    for entry in names:
        if not entry.endswith(_SUFFIXES):
            continue
        stem = entry.rsplit(".", 1)[0]
        project = stem.split("-", 1)[0]  # {name}-{version}; egg-info may lack the version
        found.append((os.path.join(base, entry), _SEPARATORS.sub("_", project).lower()))
    return found


def _read(path: str, group: str) -> list[EntryPoint]:
    """The entries of ``[group]`` in one ``entry_points.txt`` (missing file: none)."""
    try:
        with open(path, encoding="utf-8") as stream:
            lines = stream.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    entries = []
    section = None
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == group and "=" in line:
            name, _, value = line.partition("=")
            entries.append(EntryPoint(name.strip(), value.strip(), group))
    return entries
