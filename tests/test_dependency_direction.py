"""The import graph between the distributions only points one way.

uv's workspace puts every member in one environment, so nothing at install time stops the
guardian from importing the supervisor, or the protocol package (which third parties install
alone) from importing a runtime package. This test reads the sources with :mod:`ast` (no
import, so it also covers platform-specific modules) and fails on any forbidden edge:

- guardian and proc_host never import coretsia.supervisor;
- worker_protocol imports none of coretsia.supervisor / guardian / proc_host;
- no other distribution imports coretsia.sources (the reference task sources: the runtime
  finds a source through its entry point and never depends on it);
- coretsia.sources imports none of coretsia.supervisor / guardian / proc_host (a source
  depends on the task-source SPI of the protocol package only).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "coretsia"

RUNTIME = ("coretsia.supervisor", "coretsia.guardian", "coretsia.proc_host")
SOURCES = ("coretsia.sources",)
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "worker_protocol": (*RUNTIME, *SOURCES),
    "guardian": ("coretsia.supervisor", *SOURCES),
    "proc_host": ("coretsia.supervisor", *SOURCES),
    "supervisor": SOURCES,
    "sources": RUNTIME,
}


def _sub_package_dirs() -> dict[str, Path]:
    """Each ``packages/*/src/coretsia/<sub>`` directory, by sub-package name."""
    return {p.name: p for p in sorted(ROOT.glob(f"packages/*/src/{NAMESPACE}/*")) if p.is_dir()}


def _module_name(path: Path) -> list[str]:
    """``.../src/coretsia/guardian/x/y.py`` -> ``["coretsia", "guardian", "x", "y"]``."""
    parts = list(path.with_suffix("").parts)
    parts = parts[len(parts) - 1 - parts[::-1].index(NAMESPACE) :]
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_modules(source: str, module: list[str], *, is_package: bool = False) -> set[str]:
    """Every absolute module name that ``source`` (the module ``module``) may import.

    Counts ``import a.b``, ``from a import b`` (as both ``a`` and ``a.b``: ``b`` may be a
    sub-module), relative imports resolved against ``module``, and literal
    ``importlib.import_module("...")`` / ``__import__("...")`` calls.
    """
    found: set[str] = set()
    package = module if is_package else module[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names if alias.name != "*")
        elif (
            isinstance(node, ast.Call)
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (
                    isinstance(node.func, ast.Name)
                    and node.func.id in {"import_module", "__import__"}
                )
            )
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


def _violations(imports: set[str], forbidden: tuple[str, ...]) -> set[str]:
    return {m for m in imports for f in forbidden if m == f or m.startswith(f + ".")}


def _sources(directory: Path) -> Iterator[Path]:
    yield from sorted(directory.rglob("*.py"))


def test_every_sub_package_has_rules() -> None:
    """A new distribution must be given its place in the import direction explicitly."""
    assert set(_sub_package_dirs()) <= set(FORBIDDEN)


def test_nothing_else_may_import_the_sources() -> None:
    """Every sub-package but the sources themselves is forbidden coretsia.sources."""
    assert {sub for sub, forbidden in FORBIDDEN.items() if "coretsia.sources" not in forbidden} == {
        "sources"
    }


@pytest.mark.parametrize("sub", sorted(FORBIDDEN))
def test_import_direction(sub: str) -> None:
    """No module of ``coretsia.<sub>`` imports a package it must not depend on."""
    directory = _sub_package_dirs().get(sub)
    if directory is None:
        pytest.skip(f"coretsia.{sub} has no sources yet")
    forbidden = FORBIDDEN[sub]
    bad: dict[str, set[str]] = {}
    for path in _sources(directory):
        found = imported_modules(
            path.read_text(encoding="utf-8"),
            _module_name(path),
            is_package=path.name == "__init__.py",
        )
        if hits := _violations(found, forbidden):
            bad[str(path.relative_to(ROOT))] = hits
    assert bad == {}


def test_checker_sees_every_import_form() -> None:
    """The checker itself catches absolute, from-, relative and importlib imports."""
    source = "\n".join(
        [
            "import coretsia.supervisor.cli",
            "from coretsia import supervisor",
            "from ...supervisor import parser",
            "import importlib",
            "importlib.import_module('coretsia.sources.sqlite')",
            "from . import _version",
        ]
    )
    found = imported_modules(source, ["coretsia", "guardian", "sub", "mod"])
    assert _violations(found, ("coretsia.supervisor", "coretsia.sources")) == {
        "coretsia.supervisor.cli",
        "coretsia.supervisor",
        "coretsia.supervisor.parser",
        "coretsia.sources.sqlite",
    }
    assert "coretsia.guardian.sub._version" in found
