"""Compiled bytecode first: the benchmarks measure processes that start from ``.pyc`` files."""

from __future__ import annotations

import contextlib
import os
import py_compile
import subprocess
import sys
from pathlib import Path

_COLLECT_MODULES = """
import importlib, pathlib, sys
import coretsia
# Every module file, not pkgutil.walk_packages: some sub-packages are namespace packages
# (no __init__.py) and walk_packages does not descend into those.
for path in list(coretsia.__path__):
    for source in sorted(pathlib.Path(path).rglob("*.py")):
        parts = source.relative_to(path).with_suffix("").parts
        if parts[-1] in ("__main__", "_windows", "__init__"):
            parts = parts[:-1] if parts[-1] == "__init__" else ()
        if parts:
            importlib.import_module(".".join(("coretsia", *parts)))
    print(path)
for module in list(sys.modules.values()):
    print(getattr(module, "__file__", None) or "")
"""


def _pyc_fresh(source: str, cached: str) -> bool:
    """What the import system checks: a timestamp pyc recording the source's mtime and size."""
    try:
        with open(cached, "rb") as pyc:
            header = pyc.read(16)
        info = os.stat(source)
    except OSError:
        return False
    flags, mtime, size = (int.from_bytes(header[i : i + 4], "little") for i in (4, 8, 12))
    return (
        len(header) == 16
        and flags == 0
        and mtime == int(info.st_mtime) & 0xFFFFFFFF
        and size == info.st_size & 0xFFFFFFFF
    )


def ensure_bytecode() -> int:
    """Write the ``.pyc`` of every module Coretsia's processes import; how many were missing.

    Compiles exactly what the supervisor, guardian, proc host, launcher
    and client import (the coretsia sources and their dependencies). Python writes these
    itself on a first import, and ``pip install`` compiles them at install, but neither
    happens under ``PYTHONDONTWRITEBYTECODE=1`` with an installer that does not compile
    (``uv`` by default): then every process compiles its modules from source at every
    start. The benchmark measures the normal, compiled case.
    """
    import importlib.util

    listed = subprocess.run(
        [sys.executable, "-c", _COLLECT_MODULES], capture_output=True, text=True, check=True
    ).stdout.split()
    files: set[str] = set()
    for entry in listed:
        if os.path.isdir(entry):
            files.update(str(p) for p in Path(entry).rglob("*.py"))
        elif entry.endswith(".py"):
            files.add(entry)
    missing = 0
    for source in sorted(files):
        if _pyc_fresh(source, importlib.util.cache_from_source(source)):
            continue
        missing += 1
        with contextlib.suppress(OSError, py_compile.PyCompileError):
            py_compile.compile(
                source, doraise=True, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP
            )
    return missing
