"""The generation's typed spec: one builder for task pools and process pools, and what
``generation.json`` carries comes back, through the one codec, as the same record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from config_files import write_config
from launcher_harness import respec

from coretsia.supervisor.config import load_config
from coretsia.supervisor.daemon.generation_builder import build_generation_spec
from coretsia.supervisor.generation.published import (
    GenerationError,
    load_current_generation,
    publish,
)
from coretsia.supervisor.generation.spec import (
    GenerationSpec,
    HookTargets,
    IpcRecord,
    MainModule,
    RuntimeEntrypoint,
    TaskType,
    TelemetryMode,
)
from coretsia.supervisor.process import ProcessManager
from coretsia.supervisor.process_entries.record import freeze
from coretsia.supervisor.process_entries.registry import registry_of
from coretsia.worker_protocol.lifecycle import GENERATIONS_DIR

RUNTIME = RuntimeEntrypoint(name="bg.worker_queue", provider="app.runtime:serve")
SMALL = GenerationSpec(
    workers=1, max_requests=1, task_type=TaskType.QUEUE, task_source="a:b", app_path=(".",)
)

TASK_POOL = """\
[worker]
workers = 3
max_requests = 7
max_memory_mb = 64
heartbeat_timeout_ms = 3000
debug = true
telemetry = "otel"
task_source = "app.sources:make"
app_path = [".", "src"]
event_loop = "trio"
driver = "proc"
stop_timeout_ms = 30000

[worker.source_options]
path = "var/q.sqlite3"
batch = 5
strict = true

[worker.hooks]
before = ["app.hooks:before"]
reset = ["app.hooks:reset"]
"""


def tick(pool: Any, worker_id: int) -> None:
    """A process entry."""


def test_a_task_pool_spec_is_the_configuration_workers_use(tmp_path: Path) -> None:
    """Straight from the configuration's records: the worker-facing values, discovery
    resolved; the supervisor's own settings (driver, budgets) are not in it."""
    write_config(tmp_path, TASK_POOL)
    spec = build_generation_spec(tmp_path, load_config(tmp_path), RUNTIME)
    assert spec == GenerationSpec(
        workers=3,
        max_requests=7,
        max_memory_mb=64,
        heartbeat_timeout_ms=3000,
        debug=True,
        telemetry=TelemetryMode.OTEL,
        app_path=(".", "src"),
        task_type=TaskType.QUEUE,
        task_source="app.sources:make",
        source_options=(("batch", 5), ("path", "var/q.sqlite3"), ("strict", True)),
        hooks=HookTargets(before=("app.hooks:before",), reset=("app.hooks:reset",)),
        runtime_entrypoint=RUNTIME,
    )  # no entries: no event loop either
    assert "var/q.sqlite3" not in repr(spec)  # options are the application's: never shown


def test_a_process_pool_spec_is_its_registry_and_no_task_worker(tmp_path: Path) -> None:
    """``ProcessManager.start``'s pool: the same builder, the manager's entries only."""
    write_config(tmp_path, TASK_POOL)  # its task-worker settings are not used
    manager = ProcessManager(ipc_type="unixsock").add_batch(2, tick, name="ticker")
    registry = registry_of(manager)
    main = MainModule(sys_path=("/app",))
    spec = build_generation_spec(
        tmp_path, load_config(tmp_path), None, registry=registry, main=main
    )
    assert (spec.workers, spec.task_source, spec.hooks) == (0, None, HookTargets())
    assert spec.runtime_entrypoint is None
    assert spec.processes == freeze(registry)
    assert spec.process_main == main
    assert spec.event_loop == "trio"


def test_every_field_comes_back_from_the_file_as_published(tmp_path: Path) -> None:
    """Nested records, the process snapshot, the IPC record: one decode, the same record."""
    write_config(tmp_path, TASK_POOL)
    registry = registry_of(ProcessManager(ipc_type="msgqueue").add(tick, name="ticker"))
    spec = build_generation_spec(
        tmp_path,
        load_config(tmp_path),
        None,
        registry=registry,
        main=MainModule(path="/srv/app.py", sys_path=("/srv",)),
    ).with_ipc(IpcRecord(msgqueue_key=7, msgqueue_id=9))
    pin = publish(tmp_path, spec)
    assert load_current_generation(tmp_path, GENERATIONS_DIR, pin)[1] == spec


@pytest.mark.parametrize(
    "record",
    [
        {},
        {"unixsock_dir": "var/tmp/ipc", "msgqueue_key": 1, "msgqueue_id": 2},
        {"msgqueue_key": 1},
    ],
)
def test_an_ipc_record_holds_one_mode(tmp_path: Path, record: dict[str, Any]) -> None:
    publish(tmp_path, SMALL.with_ipc(IpcRecord(unixsock_dir="var/tmp/ipc")))
    with pytest.raises(GenerationError):
        publish(tmp_path, SMALL.with_ipc(IpcRecord(**record)))


def test_a_main_module_has_a_name_or_a_path_not_both(tmp_path: Path) -> None:
    publish(tmp_path, SMALL)
    spec = respec(SMALL, process_main=MainModule(name="app", path="/a.py"))
    with pytest.raises(GenerationError):
        publish(tmp_path, spec)
