"""A frozen, JSON-able description of a manager's entries: what the generation carries.

The supervisor resolves registrations and discovery once, at start, and freezes the
result into the generation; a worker boots from that record, never from the
application's registration code. :func:`snapshot` writes the record and
:func:`load_snapshot` reads it back with every rule checked again, because a generation
file can be edited by hand or written by another version. The record is versioned by
``"schema"``; any other version is refused rather than guessed at.

Schema 1::

    {"schema": 1, "ipc_type": "none", "msg_queue_key": 0,
     "entries": [{"worker_id": 0, "name": "jobs.Mailer:0", "target": "jobs:Mailer",
                  "kind": "process", "enable_async": false}, ...],
     "declarations": [{"target": "jobs:Mailer", "name": null, "workers": 2,
                       "enable_async": null, "enabled": true}, ...]}

``entries`` are in worker-id order, every one enabled (disabled tasks take no worker).
``declarations`` keep the raw ``@process`` values that discovery found, ``null`` distinct
from ``false``, with the ``enabled`` read at discovery (``null`` for ``workers: 0``, which
is never built). Like :mod:`.rules`, this module imports nothing heavy: it is on the
worker boot path.
"""

from __future__ import annotations

from coretsia.supervisor.process_entries.errors import ProcessError, ProcessSnapshotError
from coretsia.supervisor.process_entries.rules import (
    KINDS,
    MAX_WORKERS,
    check_ipc_type,
    check_msg_queue_key,
    check_name,
    check_worker_num,
    is_target,
)
from coretsia.worker_protocol.records import Frozen, field

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn, TypeVar

    from coretsia.supervisor.process_entries.registry import Registry, RegistryOwner

    _T = TypeVar("_T")

__all__ = [
    "SNAPSHOT_SCHEMA",
    "ProcessSnapshot",
    "SnapshotDeclaration",
    "SnapshotEntry",
    "freeze",
    "load_snapshot",
    "snapshot",
]

SNAPSHOT_SCHEMA = 1
"""The version :func:`snapshot` writes and the only one :func:`load_snapshot` reads."""

_TOP = frozenset({"schema", "ipc_type", "msg_queue_key", "entries", "declarations"})
_ENTRY = frozenset({"worker_id", "name", "target", "kind", "enable_async"})
_DECLARATION = frozenset({"target", "name", "workers", "enable_async", "enabled"})


class _Item(Frozen):
    """One object of a snapshot's lists; ``repr`` leaves out the application's words."""

    def as_dict(self) -> dict[str, object]:
        """The schema-1 object again (a new dict)."""
        return self._asdict()


class SnapshotEntry(_Item):
    """One worker of a snapshot: what its slot imports and how it runs it."""

    worker_id: int
    name: str = field(secret=True)
    target: str = field(secret=True)
    kind: str
    enable_async: bool


class SnapshotDeclaration(_Item):
    """One discovered ``@process`` declaration with its raw values."""

    target: str = field(secret=True)
    name: str | None = field(secret=True)
    workers: int
    enable_async: bool | None
    enabled: bool | None


class ProcessSnapshot(Frozen):
    """A loaded, fully checked snapshot (see the module docstring for the fields)."""

    ipc_type: str
    msg_queue_key: int
    entries: tuple[SnapshotEntry, ...]
    declarations: tuple[SnapshotDeclaration, ...]

    def as_dict(self) -> dict[str, object]:
        """The schema-1 record again (a new, JSON-able dict)."""
        return {
            "schema": SNAPSHOT_SCHEMA,
            "ipc_type": self.ipc_type,
            "msg_queue_key": self.msg_queue_key,
            "entries": [entry.as_dict() for entry in self.entries],
            "declarations": [declaration.as_dict() for declaration in self.declarations],
        }

    def __repr__(self) -> str:
        return f"ProcessSnapshot(workers={len(self.entries)}, ipc_type={self.ipc_type!r})"


def snapshot(source: RegistryOwner | Registry) -> dict[str, object]:
    """The schema-1 record of a manager's (or a registry's) entries, settings and
    discovered declarations."""
    return freeze(source).as_dict()


def freeze(source: RegistryOwner | Registry) -> ProcessSnapshot:
    """The snapshot of a manager's (or a registry's) entries, as the generation holds it."""
    # start-up budget: docs/performance.md#start-up-import-rules
    from coretsia.supervisor.process_entries.registry import registry_of

    registry = registry_of(source)
    return ProcessSnapshot(
        registry.ipc_type,
        registry.msg_queue_key,
        tuple(
            SnapshotEntry(e.worker_id, e.name, e.target, e.kind, e.enable_async)
            for e in registry.entries()
        ),
        tuple(
            SnapshotDeclaration(
                d.target,
                d.declaration.name,
                d.declaration.workers,
                d.declaration.enable_async,
                d.enabled,
            )
            for d in registry.discovered()
        ),
    )


def load_snapshot(data: object) -> ProcessSnapshot:
    """Check a schema-1 record (as :func:`snapshot` wrote it, or its JSON) and freeze it.

    Raises :class:`ProcessSnapshotError` for another schema, an unknown or missing key,
    or any value that registration would have refused; the message names the field,
    never its value.
    """
    if not isinstance(data, dict):
        raise ProcessSnapshotError("the process snapshot is not an object")
    schema = data.get("schema")
    if type(schema) is not int or schema != SNAPSHOT_SCHEMA:
        raise ProcessSnapshotError(
            "the process snapshot has another schema version; rebuild it with this version"
        )
    _keys(data, _TOP, "top level")
    ipc_type = _checked(check_ipc_type, data["ipc_type"], "ipc_type")
    msg_queue_key = _checked(check_msg_queue_key, data["msg_queue_key"], "msg_queue_key")
    raw_entries = _list(data["entries"], "entries")
    if len(raw_entries) > MAX_WORKERS:
        raise ProcessSnapshotError("the process snapshot has more than 1024 entries")
    entries = tuple(_entry(raw, index) for index, raw in enumerate(raw_entries))
    if len({entry.name for entry in entries}) != len(entries):
        raise ProcessSnapshotError("the process snapshot has a duplicate entry name")
    declarations = tuple(_declaration(raw) for raw in _list(data["declarations"], "declarations"))
    return ProcessSnapshot(ipc_type, msg_queue_key, entries, declarations)


def _entry(raw: object, index: int) -> SnapshotEntry:
    entry = _keys(raw, _ENTRY, "entry")
    worker_id = entry["worker_id"]
    if type(worker_id) is not int or worker_id != index:
        _invalid("entry worker_id (ids run 0, 1, ... in order)")
    kind = entry["kind"]
    if not isinstance(kind, str) or kind not in KINDS:
        _invalid("entry kind")
    return SnapshotEntry(
        index,
        _checked(check_name, entry["name"], "entry name"),
        _target(entry["target"], "entry target"),
        str(kind),
        _bool(entry["enable_async"], "entry enable_async"),
    )


def _declaration(raw: object) -> SnapshotDeclaration:
    declaration = _keys(raw, _DECLARATION, "declaration")
    name = declaration["name"]
    workers = _checked(check_worker_num, declaration["workers"], "declaration workers")
    enable_async = declaration["enable_async"]
    if enable_async is not None:
        enable_async = _bool(enable_async, "declaration enable_async")
    enabled = declaration["enabled"]
    if (enabled is None) != (workers == 0):
        _invalid("declaration enabled (null exactly when workers is 0)")
    return SnapshotDeclaration(
        _target(declaration["target"], "declaration target"),
        None if name is None else _checked(check_name, name, "declaration name"),
        workers,
        enable_async,
        None if enabled is None else _bool(enabled, "declaration enabled"),
    )


def _keys(raw: object, expected: frozenset[str], field: str) -> dict[str, object]:
    if not isinstance(raw, dict) or set(raw) != expected:
        _invalid(f"{field} (unknown or missing keys)")
    return raw


def _list(raw: object, field: str) -> list[object]:
    if not isinstance(raw, list):
        _invalid(field)
    return raw


def _bool(raw: object, field: str) -> bool:
    if type(raw) is not bool:
        _invalid(field)
    return raw


def _target(raw: object, field: str) -> str:
    if not is_target(raw):
        _invalid(field)
    return str(raw)


def _checked(check: Callable[[object], _T], raw: object, field: str) -> _T:
    """Apply one of :mod:`.rules`' checks, reporting a failure as a snapshot error."""
    try:
        return check(raw)
    except ProcessError:
        _invalid(field)


def _invalid(field: str) -> NoReturn:
    """``field`` is one of this module's literal field descriptions, never data."""
    raise ProcessSnapshotError(f"the process snapshot has an invalid {field}")
