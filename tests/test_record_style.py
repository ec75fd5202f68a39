"""Records use one style, attrs, except on the paths with a start-up budget.

A record declared another way (on the protocol's plain base
:class:`~coretsia.worker_protocol.records.Frozen` or a class of it, as a
``typing.NamedTuple``, or as a dataclass) is allowed only in a module that a worker's
boot, the status probe or a man-page build hook imports, frames aside (:data:`FRAMES`):
importing attrs costs those paths about 25 ms (``docs/performance.md``, "Records: attrs
off the start-up paths"). Which modules those are is measured, by importing the paths'
entries in a fresh interpreter (``tests/support/start_paths.py``), not listed here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest
from start_paths import PACKAGES, boot_modules, start_path_modules

PLAIN_BASES = frozenset({"Frozen", "NamedTuple"})
"""The bases of a record declared without attrs (with every class built on them, below)."""

FRAMES = frozenset({"Frame"})
"""Frames and the protocol's files are one family, whichever process sends them, decoded
by one codec (:mod:`coretsia.worker_protocol._codec`) that the boot path needs: they stay
on the plain base everywhere."""

DATACLASS = frozenset({"dataclass", "dataclasses.dataclass"})


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGES.glob("*/src/coretsia/**/*.py")):
        parts = path.relative_to(PACKAGES).parts[2:]  # <distribution>/src/...
        name = ".".join(parts).removesuffix(".py").removesuffix(".__init__")
        yield name, ast.parse(path.read_text(), str(path))


def _base_names(node: ast.ClassDef) -> set[str]:
    return {ast.unparse(base).rpartition(".")[2] for base in node.bases}


def _is_dataclass(node: ast.ClassDef) -> bool:
    decorators = (d.func if isinstance(d, ast.Call) else d for d in node.decorator_list)
    return any(ast.unparse(d) in DATACLASS for d in decorators)


def _built_on(bases: frozenset[str], classes: list[tuple[str, ast.ClassDef]]) -> set[str]:
    """The names of ``bases`` and of every class built on them, followed by name across
    modules until nothing new is found (``Frame`` is built on ``Frozen``, ``PoolState``
    on ``Frame``)."""
    found = set(bases)
    while True:
        grown = found | {node.name for _, node in classes if _base_names(node) & found}
        if grown == found:
            return found
        found = grown


def plain_records() -> dict[str, list[str]]:
    """Each module's records declared without attrs, frames aside, by class name."""
    classes = [
        (module, node)
        for module, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    ]
    frames = _built_on(FRAMES, classes)
    plain = _built_on(PLAIN_BASES, [(m, n) for m, n in classes if n.name not in frames])
    found: dict[str, list[str]] = {}
    for module, node in classes:
        built_on_plain = _base_names(node) & plain and node.name not in frames | PLAIN_BASES
        if built_on_plain or _is_dataclass(node):
            found.setdefault(module, []).append(node.name)
    return found


@pytest.fixture(scope="module")
def start_paths() -> set[str]:
    return start_path_modules()


def test_records_off_the_start_up_paths_are_attrs(start_paths: set[str]) -> None:
    """Every record outside the boot, probe and build-hook modules is an attrs class."""
    elsewhere = {
        module: names for module, names in plain_records().items() if module not in start_paths
    }
    assert elsewhere == {}


def test_the_check_sees_the_plain_records() -> None:
    """The scan finds the records it must allow (else the test above proves nothing)."""
    found = plain_records()
    assert "coretsia.worker_protocol.state" not in found  # PoolState is a frame
    assert "ProcessSnapshot" in found["coretsia.supervisor.process_entries.record"]
    assert "SnapshotEntry" in found["coretsia.supervisor.process_entries.record"]  # via _Item
    assert "Message" in found["coretsia.sources._queue_records"]
    assert "Database" in found["coretsia.sources._queue_parser"]  # a NamedTuple


def test_the_boot_path_holds_no_attrs() -> None:
    """The measured boot set is the one the launcher's test holds to: no attrs in it."""
    modules = boot_modules()
    assert "coretsia.supervisor.worker_side.launcher" in modules
    assert "coretsia.sources.sqlite_source" in modules  # a declared task source
    assert {"attrs", "attr", "cattrs"} & modules == set()
