"""The frozen, versioned description of a manager that the generation will carry."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from coretsia.supervisor.process import (
    SNAPSHOT_SCHEMA,
    ProcessManager,
    ProcessSnapshot,
    ProcessSnapshotError,
    load_snapshot,
    snapshot,
)


def tick(pool: Any, worker_id: int) -> None:
    """A sync entry."""


async def poll(pool: Any, worker_id: int) -> None:
    """An async entry."""


class Job:
    enabled = True
    enable_async = False

    def execute(self, pool: Any, worker_id: int) -> None:
        """Do nothing."""


def manager() -> ProcessManager:
    return (
        ProcessManager(ipc_type="msgqueue", msg_queue_key=0x5EED)
        .add(tick)
        .add_batch(2, Job(), name="job")
        .add(poll, name="poller")
    )


def test_snapshot_describes_every_worker() -> None:
    """Names, targets, kinds, effective flags and worker ids, plus the IPC settings."""
    assert snapshot(manager()) == {
        "schema": 1,
        "ipc_type": "msgqueue",
        "msg_queue_key": 0x5EED,
        "entries": [
            {
                "worker_id": 0,
                "name": "0",
                "target": f"{__name__}:tick",
                "kind": "function",
                "enable_async": False,
            },
            {
                "worker_id": 1,
                "name": "job:0",
                "target": f"{__name__}:Job",
                "kind": "process",
                "enable_async": False,
            },
            {
                "worker_id": 2,
                "name": "job:1",
                "target": f"{__name__}:Job",
                "kind": "process",
                "enable_async": False,
            },
            {
                "worker_id": 3,
                "name": "poller",
                "target": f"{__name__}:poll",
                "kind": "function",
                "enable_async": True,
            },
        ],
        "declarations": [],
    }


def test_round_trip_through_json() -> None:
    """JSON-encode, decode and load: the same record comes back."""
    record = snapshot(manager())
    loaded = load_snapshot(json.loads(json.dumps(record)))
    assert isinstance(loaded, ProcessSnapshot)
    assert loaded.as_dict() == record
    assert loaded == load_snapshot(record)
    assert [e.name for e in loaded.entries] == ["0", "job:0", "job:1", "poller"]
    assert loaded.entries[3].enable_async is True
    assert loaded.ipc_type == "msgqueue"
    assert loaded.msg_queue_key == 0x5EED


def test_empty_manager_round_trips() -> None:
    """An empty registry is a valid (empty) snapshot."""
    record = snapshot(ProcessManager())
    assert load_snapshot(record).entries == ()


def test_snapshot_is_independent_of_later_changes() -> None:
    """A record is plain data: registering more afterwards does not change it."""
    source = manager()
    record = snapshot(source)
    before = copy.deepcopy(record)
    source.add(tick, name="later")
    assert record == before


def test_loaded_snapshot_is_frozen() -> None:
    """The loaded objects refuse assignment."""
    loaded = load_snapshot(snapshot(manager()))
    with pytest.raises(AttributeError):
        loaded.ipc_type = "none"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        loaded.entries[0].name = "x"  # type: ignore[misc]


@pytest.mark.parametrize("schema", [0, 2, 4, "1", 1.0, True, None])
def test_other_schemas_are_rejected(schema: object) -> None:
    """Any schema but 1 is refused with a clear, value-free message."""
    record = snapshot(manager())
    record["schema"] = schema
    with pytest.raises(ProcessSnapshotError) as caught:
        load_snapshot(record)
    assert str(caught.value) == (
        "the process snapshot has another schema version; rebuild it with this version"
    )
    assert SNAPSHOT_SCHEMA == 1


def test_missing_schema_is_rejected() -> None:
    """A record without a schema is not guessed at."""
    record = snapshot(manager())
    del record["schema"]
    with pytest.raises(ProcessSnapshotError, match="another schema version"):
        load_snapshot(record)


def _entry(record: dict[str, Any], index: int = 0) -> dict[str, Any]:
    entries: list[dict[str, Any]] = record["entries"]
    return entries[index]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r.update(extra=1), "top level"),
        (lambda r: r.pop("declarations"), "top level"),
        (lambda r: r.update(ipc_type="socket"), "ipc_type"),
        (lambda r: r.update(msg_queue_key=-1), "msg_queue_key"),
        (lambda r: r.update(entries={}), "entries"),
        (lambda r: _entry(r).update(worker_id=5), "entry worker_id"),
        (lambda r: _entry(r).update(worker_id=False), "entry worker_id"),
        (lambda r: _entry(r).update(name=""), "entry name"),
        (lambda r: _entry(r).update(target="/etc/passwd"), "entry target"),
        (lambda r: _entry(r).update(target="mod:<lambda>"), "entry target"),
        (lambda r: _entry(r).update(kind="shell"), "entry kind"),
        (lambda r: _entry(r).update(enable_async=1), "entry enable_async"),
        (lambda r: _entry(r).update(secret="x"), "entry (unknown or missing keys)"),
        (lambda r: _entry(r, 2).update(name="job:0"), "duplicate entry name"),
        (lambda r: r.update(declarations=[{"target": "m:C"}]), "declaration"),
    ],
)
def test_invalid_records_are_rejected_by_field(mutate: Any, field: str) -> None:
    """Every rule of registration is checked again; the message names only the field."""
    record = snapshot(manager())
    mutate(record)
    with pytest.raises(ProcessSnapshotError) as caught:
        load_snapshot(record)
    message = str(caught.value)
    assert field in message
    for leaked in ("/etc/passwd", "shell", "secret", "<lambda>"):
        assert leaked not in message


@pytest.mark.parametrize(
    ("declaration", "valid"),
    [
        ({"name": None, "workers": 1, "enable_async": None, "enabled": True}, True),
        ({"name": "n", "workers": 2, "enable_async": False, "enabled": False}, True),
        ({"name": None, "workers": 0, "enable_async": True, "enabled": None}, True),
        ({"name": None, "workers": 0, "enable_async": None, "enabled": True}, False),
        ({"name": None, "workers": 1, "enable_async": None, "enabled": None}, False),
        ({"name": "", "workers": 1, "enable_async": None, "enabled": True}, False),
        ({"name": None, "workers": -1, "enable_async": None, "enabled": True}, False),
        ({"name": None, "workers": 1, "enable_async": "no", "enabled": True}, False),
    ],
)
def test_declarations_are_checked(declaration: dict[str, Any], valid: bool) -> None:
    """Declarations keep null distinct from false; enabled is null exactly for workers 0."""
    record = snapshot(ProcessManager())
    declared = {"target": "app.jobs:Mailer", **declaration}
    record["declarations"] = [declared]
    if valid:
        loaded = load_snapshot(record)
        assert loaded.declarations[0].as_dict() == declared
    else:
        with pytest.raises(ProcessSnapshotError):
            load_snapshot(record)


def test_more_than_1024_entries_are_rejected() -> None:
    """The worker limit holds for a loaded record too."""
    record = snapshot(ProcessManager())
    record["entries"] = [
        {"worker_id": i, "name": str(i), "target": "m:f", "kind": "function", "enable_async": False}
        for i in range(1025)
    ]
    with pytest.raises(ProcessSnapshotError, match="more than 1024"):
        load_snapshot(record)


@pytest.mark.parametrize("data", [None, [], "schema", 1])
def test_non_objects_are_rejected(data: object) -> None:
    """Only a JSON object is a snapshot."""
    with pytest.raises(ProcessSnapshotError):
        load_snapshot(data)


def test_the_package_name_is_the_function_once_the_record_module_is_loaded() -> None:
    """The record module is loaded on the boot path; ``process.snapshot`` stays the function."""
    import importlib

    importlib.import_module("coretsia.supervisor.process_entries.record")
    from coretsia.supervisor import process

    assert callable(process.snapshot)
    assert process.snapshot is snapshot
