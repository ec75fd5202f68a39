"""The import graph between the distributions only points one way, and has no cycle.

uv's workspace puts every member in one environment, so nothing at install time stops the
guardian from importing the supervisor, or the protocol package (which third parties install
alone) from importing a runtime package. This test reads the sources with :mod:`ast` (no
import, so it also covers platform-specific modules) and fails on any forbidden edge:

- guardian and proc_host never import coretsia.supervisor; proc_host not the guardian either;
- the supervisor never imports coretsia.guardian nor coretsia.proc_host: it launches the
  guardian (``-m coretsia.guardian``) and shares the plumbing both use (logs, the framed
  channel, subreaper) through the protocol's ``internal.runtime``;
- worker_protocol imports none of coretsia.supervisor / guardian / proc_host;
- no other distribution imports coretsia.sources (the reference task sources: the runtime
  finds a source through its entry point and never depends on it);
- coretsia.sources imports none of coretsia.supervisor / guardian / proc_host (a source
  depends on the protocol package only).

Each distribution also declares in its ``pyproject.toml`` everything it imports (or, for
an extra, may import), and the siblings it declares are exactly those it imports or
launches with ``python -m``. And no package has an import cycle among its modules: every
import counts, at module level, inside a function or under ``TYPE_CHECKING`` (a cycle a
guard hides from the interpreter is still modules that cannot change apart). Nor do the
packages themselves, each module collapsed into its package; and the supervisor's
sub-packages import each other only downwards, in the order of ``SUPERVISOR_LAYERS``.
"""

from __future__ import annotations

import ast
import functools
import itertools
import sys
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "coretsia"

RUNTIME = ("coretsia.supervisor", "coretsia.guardian", "coretsia.proc_host")
SOURCES = ("coretsia.sources",)
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "worker_protocol": (*RUNTIME, *SOURCES),
    "guardian": ("coretsia.supervisor", *SOURCES),
    "proc_host": ("coretsia.supervisor", "coretsia.guardian", *SOURCES),
    "supervisor": ("coretsia.guardian", "coretsia.proc_host", *SOURCES),
    "sources": RUNTIME,
}

STDLIB = sys.stdlib_module_names


def _sub_package_dirs() -> dict[str, Path]:
    """Each ``packages/*/src/coretsia/<sub>`` directory, by sub-package name."""
    return {p.name: p for p in sorted(ROOT.glob(f"packages/*/src/{NAMESPACE}/*")) if p.is_dir()}


def _module_name(path: Path) -> list[str]:
    """``.../src/coretsia/guardian/x/y.py`` -> ``["coretsia", "guardian", "x", "y"]``."""
    parts = list(path.with_suffix("").parts)
    parts = parts[len(parts) - 1 - parts[::-1].index(NAMESPACE) :]
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_modules(source: str, module: list[str], *, is_package: bool = False) -> set[str]:
    """The most specific name each import of ``source`` (the module ``module``) names.

    ``import a.b`` names ``a.b``; ``from a import b`` names ``a.b`` (``b`` may be a
    sub-module; if it is not, its module ``a`` is the longest real prefix); relative
    imports are resolved against ``module``; literal ``importlib.import_module("...")`` /
    ``__import__("...")`` calls count too.
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
            found.update(
                target if alias.name == "*" else f"{target}.{alias.name}" for alias in node.names
            )
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


def launched_modules(source: str) -> set[str]:
    """Every ``coretsia.<sub>`` that ``source`` runs as ``python -m`` (a literal argv)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.List, ast.Tuple)):
            values = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            found.update(
                value
                for flag, value in itertools.pairwise(values)
                if flag == "-m" and isinstance(value, str) and value.startswith(f"{NAMESPACE}.")
            )
    return found


def _violations(imports: set[str], forbidden: tuple[str, ...]) -> set[str]:
    return {m for m in imports for f in forbidden if m == f or m.startswith(f + ".")}


def _sources(directory: Path) -> Iterator[Path]:
    yield from sorted(directory.rglob("*.py"))


def _imports_of(path: Path) -> set[str]:
    return imported_modules(
        path.read_text(encoding="utf-8"), _module_name(path), is_package=path.name == "__init__.py"
    )


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
        if hits := _violations(_imports_of(path), forbidden):
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


# --- what each distribution declares ----------------------------------------------------


def _declared(sub: str) -> set[str]:
    """Canonical names of the distributions ``sub`` declares, its extras' included."""
    distribution = _sub_package_dirs()[sub].parents[2]  # packages/<name>/src/coretsia/<sub>
    with (distribution / "pyproject.toml").open("rb") as f:
        project: dict[str, Any] = tomllib.load(f)["project"]
    lines = [*project.get("dependencies", [])]
    for extra in project.get("optional-dependencies", {}).values():
        lines.extend(extra)
    return {canonicalize_name(Requirement(line).name) for line in lines}


def _distributions_of(module: str) -> set[str]:
    """Canonical names of the distributions that may provide ``module``; empty: stdlib."""
    top = module.split(".")[0]
    if top == NAMESPACE:
        sub = module.split(".")[1]
        return {canonicalize_name(f"coretsia-{sub}")}
    if top in STDLIB or top == "__future__":
        return set()
    # Not installed here (tomli under Python >= 3.11): named like its module, as most are.
    providers = packages_distributions().get(top, [top])
    return {canonicalize_name(name) for name in providers}


def _used(sub: str) -> dict[str, set[str]]:
    """Every module ``coretsia.<sub>`` imports from elsewhere, with the files importing it."""
    used: dict[str, set[str]] = {}
    own = f"{NAMESPACE}.{sub}"
    for path in _sources(_sub_package_dirs()[sub]):
        for module in _imports_of(path):
            if module != own and not module.startswith(own + "."):
                used.setdefault(module, set()).add(path.name)
    return used


@pytest.mark.parametrize("sub", sorted(FORBIDDEN))
def test_every_import_is_declared(sub: str) -> None:
    """Each distribution declares what it imports: never through a sibling's dependency."""
    declared = _declared(sub)
    undeclared = {
        module: sorted(files)
        for module, files in _used(sub).items()
        if (providers := _distributions_of(module)) and not providers & declared
    }
    assert undeclared == {}


@pytest.mark.parametrize("sub", sorted(FORBIDDEN))
def test_declared_siblings_are_the_ones_used(sub: str) -> None:
    """A sibling is declared exactly when it is imported or launched (``python -m``)."""
    siblings = {_distributions_of(f"{NAMESPACE}.{other}").pop() for other in FORBIDDEN}
    siblings -= _distributions_of(f"{NAMESPACE}.{sub}")
    launched: set[str] = set()
    for path in _sources(_sub_package_dirs()[sub]):
        launched |= launched_modules(path.read_text(encoding="utf-8"))
    used = {dist for module in {*_used(sub), *launched} for dist in _distributions_of(module)}
    assert _declared(sub) & siblings == used & siblings


def test_launches_are_seen() -> None:
    """A literal ``[python, "-m", "coretsia.x", ...]`` argv counts as using ``coretsia.x``."""
    source = 'argv = (sys.executable, "-m", "coretsia.proc_host")\nother = ["-m", "json"]\n'
    assert launched_modules(source) == {"coretsia.proc_host"}


# --- no cycle inside a package -----------------------------------------------------------


@functools.cache
def _module_graph() -> dict[str, set[str]]:
    """Every module of every distribution, with the modules of its own tree it imports.

    Built once per session (every test reads it, none changes it)."""
    imports: dict[str, set[str]] = {}
    for path in sorted(ROOT.glob(f"packages/*/src/{NAMESPACE}/*/**/*.py")):
        imports[".".join(_module_name(path))] = _imports_of(path)
    graph: dict[str, set[str]] = {}
    for module, names in imports.items():
        tree = ".".join(module.split(".")[:2])
        graph[module] = set()
        for name in names:
            parts = name.split(".")
            while parts and ".".join(parts) not in imports:
                parts.pop()  # `from a import b` where b is no module: the module is a
            target = ".".join(parts)
            if target.startswith(tree) and target != module:
                graph[module].add(target)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles of ``graph``: its strongly connected components of two or more nodes."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _packages() -> list[str]:
    """Every package of every distribution: each directory of modules (the guardian's has
    no ``__init__.py``)."""
    return sorted(
        {
            ".".join(_module_name(path.parent / "__init__.py"))
            for path in ROOT.glob(f"packages/*/src/{NAMESPACE}/*/**/*.py")
        }
    )


def _home(component: list[str], packages: set[str]) -> str:
    """The innermost package that holds every module of ``component``."""
    common = component[0].split(".")
    for member in component[1:]:
        while member.split(".")[: len(common)] != common:
            common.pop()
    while ".".join(common) not in packages:
        common.pop()
    return ".".join(common)


@pytest.mark.parametrize("package", _packages())
def test_no_import_cycle(package: str) -> None:
    """No modules of ``package`` import each other in a circle, directly or not.

    A cycle belongs to the innermost package that holds all its modules.
    """
    packages = set(_packages())
    cycles = [c for c in strongly_connected(_module_graph()) if _home(c, packages) == package]
    assert cycles == []


def test_cycle_finder() -> None:
    """The finder reports each circle once, whatever its length, and nothing else."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": {"f"}}
    assert strongly_connected(graph) == [["a", "b", "c"], ["d", "e"]]
    packages = {"coretsia.x", "coretsia.x.y"}
    assert _home(["coretsia.x.y.a", "coretsia.x.y.b"], packages) == "coretsia.x.y"
    assert _home(["coretsia.x.y.a", "coretsia.x.b"], packages) == "coretsia.x"
    assert _home(["coretsia.x.y", "coretsia.x.y.a"], packages) == "coretsia.x.y"


# --- no cycle between packages; the supervisor's layers --------------------------------

SUPERVISOR_LAYERS: tuple[tuple[str, ...], ...] = (
    # the command line (cli, parser, stop_progress, init) and the public facades
    ("coretsia.supervisor", "coretsia.supervisor.process"),
    ("coretsia.supervisor.process_manager",),  # the ProcessManager library
    ("coretsia.supervisor.daemon",),  # the supervisor daemon and its start
    # what runs in a worker process (and the fork server); the configuration
    ("coretsia.supervisor.worker_side", "coretsia.supervisor.config"),
    ("coretsia.supervisor.generation",),  # the spec and the published generation
    ("coretsia.supervisor.process_entries",),  # what a process entry is
    ("coretsia.supervisor.shared",),  # what several of the above use
)
"""The supervisor's packages, top to bottom: each imports only packages of later rows
(two of one row never import each other)."""


def _package_of(module: str, packages: set[str]) -> str:
    """The package a module collapses into: itself if it is one, else its parent."""
    return module if module in packages else module.rsplit(".", 1)[0]


def _package_graph() -> dict[str, set[str]]:
    """Every package, with the other packages its modules import (every import counts)."""
    packages = set(_packages())
    graph: dict[str, set[str]] = {package: set() for package in packages}
    for module, targets in _module_graph().items():
        home = _package_of(module, packages)
        graph[home] |= {_package_of(t, packages) for t in targets} - {home}
    return graph


def test_no_package_cycle() -> None:
    """No packages import each other in a circle, directly or not."""
    assert strongly_connected(_package_graph()) == []


def test_every_supervisor_package_has_a_layer() -> None:
    """A new sub-package of the supervisor must be given its place in the layers."""
    layered = {package for row in SUPERVISOR_LAYERS for package in row}
    supervisor = {p for p in _packages() if p.split(".")[:2] == ["coretsia", "supervisor"]}
    assert supervisor == layered


def test_supervisor_layers_point_down() -> None:
    """Every import between the supervisor's packages goes to a lower row."""
    row = {package: n for n, packages in enumerate(SUPERVISOR_LAYERS) for package in packages}
    upward = sorted(
        (package, target)
        for package, targets in _package_graph().items()
        if package in row
        for target in targets
        if target in row and row[target] <= row[package]
    )
    assert upward == []


def test_package_of() -> None:
    """A package's ``__init__`` is the package; any other module belongs to its parent."""
    packages = {"coretsia.x", "coretsia.x.y"}
    assert _package_of("coretsia.x.y", packages) == "coretsia.x.y"
    assert _package_of("coretsia.x.y.m", packages) == "coretsia.x.y"
    assert _package_of("coretsia.x.m", packages) == "coretsia.x"
