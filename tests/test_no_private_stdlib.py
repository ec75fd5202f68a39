"""No module under ``packages/`` reaches into the interpreter's private API.

Private standard-library modules and attributes (``_sha2``, ``_socket``, ``_thread``,
``_operator``, ``threading._shutdown``, ``atexit._run_exitfuncs``...) change or vanish between
Python versions without notice (``_sha256`` became ``_sha2`` in 3.12), so the product uses the
public modules only. This test reads every source file with :mod:`ast` (no import, so it also
covers platform-specific modules) and fails on:

- an import of a top-level module whose name starts with ``_`` (other than ``__future__``):
  our own private modules live under ``coretsia.``, so such a name is always someone else's;
- ``from <stdlib module> import _name``;
- ``<stdlib module>._name``, directly or through ``getattr(<stdlib module>, "_name")``, where
  the module is bound in the same file by an import or from ``sys.modules``.

Dunder names (``__name__``, ``sys.__stdout__``) are public, and ``os._exit`` is documented
public API despite its underscore.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ROOT / "packages"
ALLOWED = {("os", "_exit")}


def _stdlib(module: str) -> bool:
    return module.partition(".")[0] in sys.stdlib_module_names


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_aliases(tree: ast.AST) -> dict[str, str]:
    """Names bound to a standard-library module anywhere in the file (imports are few)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _stdlib(alias.name):
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.partition(".")[0]
                        aliases[top] = top
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and (module := _from_sys_modules(node.value)) is not None
        ):
            aliases[node.targets[0].id] = module
    return aliases


def _from_sys_modules(node: ast.expr) -> str | None:
    """``"m"`` for ``sys.modules.get("m")`` or ``sys.modules["m"]`` where m is stdlib's."""
    if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
        owner, key = node.func.value, node.args[0]
        if node.func.attr != "get":
            return None
    elif isinstance(node, ast.Subscript):
        owner, key = node.value, node.slice
    else:
        return None
    if ast.unparse(owner) != "sys.modules" or not isinstance(key, ast.Constant):
        return None
    return key.value if isinstance(key.value, str) and _stdlib(key.value) else None


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The module an expression such as ``os`` or ``os.path`` names, if it names one."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _violations(path: Path, root: Path = ROOT) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    aliases = _module_aliases(tree)
    for node in ast.walk(tree):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _private(alias.name.partition(".")[0]):
                    yield f"{where}: import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module != "__future__" and _private(node.module.partition(".")[0]):
                yield f"{where}: from {node.module} import ..."
            elif _stdlib(node.module):
                for alias in node.names:
                    if _private(alias.name) and (node.module, alias.name) not in ALLOWED:
                        yield f"{where}: from {node.module} import {alias.name}"
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            module = _dotted(node.value, aliases)
            if module is not None and (module, node.attr) not in ALLOWED:
                yield f"{where}: {module}.{node.attr}"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            module = _dotted(node.args[0], aliases)
            if module is not None and (module, node.args[1].value) not in ALLOWED:
                yield f"{where}: {node.func.id}({module}, {node.args[1].value!r})"


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGES.rglob("*.py") if ".venv" not in p.parts)


def test_sources_are_found() -> None:
    assert len(_sources()) > 100


def test_no_private_standard_library_api() -> None:
    found = [v for path in _sources() for v in _violations(path)]
    assert found == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import _socket", ["import _socket"]),
        ("from _sha2 import sha256", ["from _sha2 import ..."]),
        ("from _operator import _compare_digest", ["from _operator import ..."]),
        ("import threading\nthreading._shutdown()", ["threading._shutdown"]),
        ("import atexit as a\na._run_exitfuncs()", ["atexit._run_exitfuncs"]),
        ("from threading import _shutdown", ["from threading import _shutdown"]),
        ("import threading\ngetattr(threading, '_shutdown')", ["getattr(threading, '_shutdown')"]),
        ("import os\nos.path._joinrealpath", ["os.path._joinrealpath"]),
        ("t = sys.modules.get('threading')\nt._shutdown()", ["threading._shutdown"]),
        ("a = sys.modules['atexit']\na._run_exitfuncs()", ["atexit._run_exitfuncs"]),
        ("import os\nos._exit(0)", []),
        ("from os import _exit", []),
        ("import sys\nsys.__stdout__", []),
        ("from __future__ import annotations", []),
        ("from coretsia.worker_protocol import _strict", []),
        ("self._shutdown()", []),
    ],
)
def test_the_check_itself(tmp_path: Path, source: str, expected: list[str]) -> None:
    """The check flags what it names, and nothing public."""
    path = tmp_path / "probe.py"
    path.write_text(source + "\n", encoding="utf-8")
    assert [v.split(": ", 1)[1] for v in _violations(path, tmp_path)] == expected
