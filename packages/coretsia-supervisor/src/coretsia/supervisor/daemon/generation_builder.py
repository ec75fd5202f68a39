"""The one builder of a generation's spec, for a task pool and a process pool alike.

``coretsia-supervisor start`` and ``ProcessManager.start`` both load the configuration,
then build the :class:`~coretsia.supervisor.generation.spec.GenerationSpec` their workers
boot from here, straight from the configuration's records: the supervisor resolves here,
once, what a worker must never discover (the task source and hooks, the process entries)
and freezes the result.
"""

from __future__ import annotations

from pathlib import Path

from coretsia.supervisor.config import PoolConfig
from coretsia.supervisor.daemon.process_tables import register_from_config
from coretsia.supervisor.daemon.task_sources import resolve_hooks, resolve_task_source
from coretsia.supervisor.generation.spec import (
    GenerationSpec,
    HookTargets,
    MainModule,
    RuntimeEntrypoint,
)
from coretsia.supervisor.process_entries.record import ProcessSnapshot, freeze
from coretsia.supervisor.process_entries.registry import Registry
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.vocabulary import MAX_WORKERS

__all__ = ["build_generation_spec"]


def build_generation_spec(
    root: Path,
    config: PoolConfig,
    runtime: RuntimeEntrypoint | None,
    *,
    registry: Registry | None = None,
    main: MainModule | None = None,
) -> GenerationSpec:
    """The spec of the generation to publish.

    Without ``registry`` (``start``): the configured task workers, with the runtime
    entrypoint the guard resolved (``runtime``, see
    :mod:`~coretsia.supervisor.worker_side.runtime_guard`; None without task workers),
    their source and hooks; ``[[process]]`` tables and ``process_modules`` are registered
    with the manager's own rules and their snapshot frozen. With a
    ``registry`` (``ProcessManager.start``): exactly its entries, no task worker, and
    ``main``, how a worker re-creates the main module.
    """
    worker = config.worker
    workers = worker.workers if registry is None else 0
    task_source, hooks = None, HookTargets()
    if workers:
        task_source = resolve_task_source(config)
        hooks = resolve_hooks(config)
    processes: ProcessSnapshot | None = None
    if registry is not None:
        processes = freeze(registry)
    elif config.processes.entries or config.processes.process_modules:
        processes = freeze(register_from_config(root, config))
    entries = 0 if processes is None else len(processes.entries)
    if not 0 < workers + entries <= MAX_WORKERS:
        # A pool needs a slot (workers = 0 is for a pool of enabled entries alone), and
        # task workers and entries together are at most 1,024: what state and status carry.
        raise WorkerConfigError("worker.workers", ConfigRule.OUT_OF_RANGE)
    return GenerationSpec(
        workers=workers,
        max_requests=worker.max_requests,
        max_memory_mb=worker.max_memory_mb,
        heartbeat_timeout_ms=config.budgets.heartbeat_timeout_ms,
        debug=config.observability.debug,
        telemetry=config.observability.telemetry,
        app_path=worker.app_path,
        task_type=worker.task_type,
        task_source=task_source,
        source_options=tuple(sorted(config.source_options.items)),
        hooks=hooks,
        runtime_entrypoint=runtime,
        processes=processes,
        event_loop=None if processes is None else config.processes.event_loop,
        process_main=main,
    )
