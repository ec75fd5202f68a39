"""Imports are plain: at the top of the module, ``typing`` imported as its docs show.

Import-time tricks are kept only where a start-up budget needs them (``docs/performance.md``,
"Start-up import rules"): an exec'd worker's boot (a task worker's up to its first task
request, an entry worker's through its entries' registration), and the ``status`` /
``health`` probes. Which modules those paths import is measured on real
processes (``tests/support/startup_imports.py``), not listed here. The test reads every
module of ``packages/`` with :mod:`ast` and fails on:

- ``TYPE_CHECKING = False`` (instead of ``from typing import TYPE_CHECKING``) in a module
  neither path imports;
- an import inside a function without one of the fixed reason comments (:data:`REASONS`),
  on its own line or on the line above the run of imports it belongs to;
- the start-up budget's reason in a module neither path imports;
- ``TYPE_CHECKING = False`` without that reason on its line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from lock_holder import LockHolder
from startup_imports import answer, boot_imports, coretsia_modules, probe_imports
from stub_supervisor import StubSupervisor

from coretsia.worker_protocol.lifecycle import LOCK_PATH
from coretsia.worker_protocol.vocabulary import Transport

PACKAGES = Path(__file__).resolve().parent.parent / "packages"

BUDGET = "# start-up budget: docs/performance.md#start-up-import-rules"
REASONS = (
    BUDGET,
    "# deferred: optional extra",  # opentelemetry, prometheus_client, psycopg, sysv_ipc
    "# deferred: platform-only",  # a module or a C library one platform has
    "# deferred: entry point",  # a program's main, so that an import failure is reported
    "# deferred: import cycle",  # between two modules of one package
    "# deferred: build hook",  # a package its man page's build imports with only hatchling
    "# deferred: until main() drops sys.path[0]",  # the launcher: no module from the root
    "# deferred: the guardian boots meanwhile",  # start: trio's import overlaps its boot (S1)
    "# deferred: the selected driver only",  # the guardian: S5's RSS
)
"""The reasons an import may sit inside a function, as the comment that states it."""


def _sources() -> Iterator[tuple[str, str, str]]:
    """(path under packages/, module name, source) of every module."""
    for path in sorted(PACKAGES.glob("*/src/coretsia/**/*.py")):
        relative = path.relative_to(PACKAGES).as_posix()
        module = relative.split("/src/", 1)[1].removesuffix(".py").removesuffix("/__init__")
        yield relative, module.replace("/", "."), path.read_text()


def _defines_type_checking(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.Assign) and ast.unparse(node) == "TYPE_CHECKING = False"
        for node in tree.body
    )


def _statement_lists(function: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(function):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield body


def _import_runs(tree: ast.Module) -> Iterator[list[ast.stmt]]:
    """Each run of consecutive import statements inside a function."""
    functions = [
        node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    seen: set[int] = set()
    for function in functions:
        for body in _statement_lists(function):
            run: list[ast.stmt] = []
            for statement in [*body, None]:
                if isinstance(statement, (ast.Import, ast.ImportFrom)):
                    run.append(statement)
                    continue
                if run and id(run[0]) not in seen:
                    seen.add(id(run[0]))
                    yield run
                run = []


def _reason(lines: list[str], run: list[ast.stmt]) -> str | None:
    """The fixed reason given for the run: above its first import or on each import."""
    above = lines[run[0].lineno - 2].strip() if run[0].lineno > 1 else ""
    for reason in REASONS:
        if above == reason or all(
            reason in " ".join(lines[s.lineno - 1 : s.end_lineno]) for s in run
        ):
            return reason
    return None


def _imports_without_reason() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for relative, _, source in _sources():
        lines = source.splitlines()
        for run in _import_runs(ast.parse(source)):
            if _reason(lines, run) is None:
                found.setdefault(relative, []).extend(s.lineno for s in run)
    return found


@pytest.fixture(scope="module")
def boot(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The packages' modules a task worker's or an entry worker's boot imports, measured."""
    modules = boot_imports(tmp_path_factory.mktemp("boot"))
    modules |= boot_imports(tmp_path_factory.mktemp("entry"), entry=True)
    return coretsia_modules(modules)


@pytest.fixture(scope="module")
def start_up(boot: set[str], tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The packages' modules a worker's boot or a probe imports, measured."""
    modules = set(boot)
    root = tmp_path_factory.mktemp("probe")
    (root / "var/tmp").mkdir(parents=True)
    holder = LockHolder(str(root / LOCK_PATH))
    stub = StubSupervisor(root, Transport.UNIX, answer)
    try:
        stub.write_locator()
        for command in ("status", "health"):
            modules |= probe_imports(root, command)
    finally:
        stub.close()
        holder.close()
    return coretsia_modules(modules)


def test_the_paths_are_measured(boot: set[str], start_up: set[str]) -> None:
    """The measured sets hold both paths (else the tests below would allow nothing)."""
    assert "coretsia.supervisor.worker_side.launcher" in boot
    assert "coretsia.supervisor.worker_side.task_worker" in boot
    assert "coretsia.supervisor.worker_side.entry_worker" in boot
    assert "coretsia.worker_protocol.control_auth" not in boot
    assert "coretsia.supervisor.generation.published" in start_up
    assert "coretsia.worker_protocol.control_auth" in start_up
    assert "coretsia.supervisor.daemon.runner" not in start_up


def test_type_checking_is_imported_from_typing_off_the_start_up_paths(
    start_up: set[str],
) -> None:
    """``TYPE_CHECKING = False`` saves importing typing: only a start-up path needs that."""
    tricks = [
        relative
        for relative, module, source in _sources()
        if module not in start_up and _defines_type_checking(ast.parse(source))
    ]
    assert tricks == []


def test_each_trick_points_to_its_measurement() -> None:
    """``TYPE_CHECKING = False`` says why in one comment, the same everywhere."""
    unexplained = [
        relative
        for relative, _, source in _sources()
        if _defines_type_checking(ast.parse(source))
        and f"TYPE_CHECKING = False  {BUDGET}" not in source.splitlines()
    ]
    assert unexplained == []


def test_every_import_inside_a_function_says_why() -> None:
    """An import inside a function carries one of the fixed reasons."""
    assert _imports_without_reason() == {}


def test_the_budget_reason_only_on_the_start_up_paths(start_up: set[str]) -> None:
    """Deferring for the start-up budget is a reason only where a budget applies."""
    misplaced = [
        relative
        for relative, module, source in _sources()
        if module not in start_up and re.search(re.escape(BUDGET), source)
    ]
    assert misplaced == []


def test_the_check_sees_imports_inside_functions() -> None:
    """The scan finds an unexplained import and accepts an explained one."""
    source = (
        "def f():\n    import json\n\n"
        f"def g():\n    {REASONS[1]}\n    import psycopg\n    import psycopg.rows\n\n"
        f"def h():\n    if x:\n        import ctypes  {REASONS[2]}\n"
    )
    lines = source.splitlines()
    runs = list(_import_runs(ast.parse(source)))
    assert [[s.lineno for s in run] for run in runs] == [[2], [6, 7], [11]]
    assert [_reason(lines, run) for run in runs] == [None, REASONS[1], REASONS[2]]
