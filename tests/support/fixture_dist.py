"""Fixture distributions: real wheels, installed by a real installer (helpers).

Imported by test modules as ``fixture_dist`` (``tests/support`` is on pytest's pythonpath).

Discovery at ``start`` reads what an installer leaves behind, so a test of it must not
lay out ``*.dist-info`` folders by hand: :func:`wheel` writes a complete wheel (modules,
``METADATA``, ``WHEEL``, ``entry_points.txt`` and a hashed ``RECORD``) and :func:`install`
has uv install it into a target directory, offline and without dependencies, exactly as
``uv pip install --target`` does for an application. The target goes on a supervisor's
``PYTHONPATH`` (``site_hooks.pythonpath_first``), where discovery and the workers' imports find it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Mapping
from pathlib import Path

from site_hooks import pythonpath_first
from uv import find_uv_bin

VERSION = "1.0"


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def wheel(
    out: Path,
    name: str,
    modules: Mapping[str, str],
    entry_points: Mapping[str, Mapping[str, str]],
    requires: tuple[str, ...] = ("coretsia-worker-protocol",),
) -> Path:
    """Write ``{name}-1.0-py3-none-any.whl`` into ``out``: top-level ``modules`` (name to
    source) and ``entry_points`` (group to ``{entry name: module:attr}``)."""
    info = f"{name}-{VERSION}.dist-info"
    sections = (
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items())
        for group, entries in entry_points.items()
    )
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {VERSION}\n"
    metadata += "".join(f"Requires-Dist: {requirement}\n" for requirement in requires)
    files = {
        **{f"{module}.py": textwrap.dedent(source) for module, source in modules.items()},
        f"{info}/METADATA": metadata,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: coretsia-tests\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": "\n".join(sections),
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-{VERSION}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            data = text.encode()
            archive.writestr(member, data)
            record.append(_record_line(member, data))
        archive.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return path


def install(wheel_path: Path, target: Path) -> Path:
    """Install one wheel into ``target`` with uv (offline, no dependencies); returns it."""
    command = [find_uv_bin(), "pip", "install", "--quiet", "--offline", "--no-deps"]
    subprocess.run(
        [*command, "--python", sys.executable, "--target", str(target), str(wheel_path)],
        check=True,
        env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
        timeout=120,
    )
    return target


def coretsia_imports(target: Path, module: str) -> list[str]:
    """The ``coretsia`` modules a fresh interpreter holds after importing ``module``."""
    probe = (
        f"import json, sys; import {module}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'coretsia')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env=pythonpath_first(target),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    found: list[str] = json.loads(out.stdout)
    return found
