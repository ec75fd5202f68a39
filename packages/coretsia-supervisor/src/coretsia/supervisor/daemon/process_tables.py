"""``[[process]]`` tables and ``process_modules``: seed 003's registration, from the file.

``coretsia-supervisor start`` registers every enabled table on a fresh
:class:`~coretsia.supervisor.process_entries.registry.Registry`, one ``Registry.add`` per
table (the call ``ProcessManager.add_batch`` makes, so a table obeys exactly the rules of
the API: names, batches, the 1,024 limit, the async flag against the entry's shape),
then runs :func:`~coretsia.supervisor.process_entries.discovery.discover` over
``process_modules``. The target of a table is a function or a class, by
``module:qualname``; a class is built once here, with no arguments, like discovery does.
The application's modules are imported with ``app_path`` first on ``sys.path``, as the
workers will import them.

A rule broken here is a configuration error naming the table's key (``process[2].name``)
and the rule, never the value: a config error exits 6 before anything was started.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from coretsia.supervisor.config import PoolConfig, ProcessTable
from coretsia.supervisor.process_entries.discovery import discover
from coretsia.supervisor.process_entries.errors import (
    AsyncMismatchError,
    DuplicateProcessNameError,
    InvalidProcessNameError,
    ProcessError,
    ProcessLimitExceededError,
    ProcessTargetError,
)
from coretsia.supervisor.process_entries.registry import Registry
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.internal.runtime.imports import import_target

__all__ = ["register_from_config"]

_RULES: dict[type[ProcessError], tuple[str, ConfigRule]] = {
    AsyncMismatchError: ("enable_async", ConfigRule.NOT_ONE_OF),
    DuplicateProcessNameError: ("name", ConfigRule.DUPLICATE),
    InvalidProcessNameError: ("name", ConfigRule.WRONG_TYPE),
    ProcessLimitExceededError: ("workers", ConfigRule.OUT_OF_RANGE),
}
"""Which key of a table each registry failure blames; anything else blames the target."""


def register_from_config(root: Path, config: PoolConfig) -> Registry:
    """A registry holding the file's entries, in file order, then the discovered ones."""
    settings = config.processes
    registry = Registry(settings.ipc_type, settings.msg_queue_key)
    added = [str(root if p == "." else root / p) for p in config.worker.app_path]
    sys.path[0:0] = added
    try:
        for index, table in enumerate(settings.entries):
            if table.enabled:
                _register(registry, index, table)
        if settings.process_modules:
            try:
                discover(settings.process_modules, registry)
            except ProcessError as exc:
                rule = _RULES.get(type(exc), ("", ConfigRule.INVALID_TARGET))[1]
                raise WorkerConfigError("worker.process_modules", rule) from exc
    finally:
        for path in added:
            sys.path.remove(path)
    return registry


def _register(registry: Registry, index: int, table: ProcessTable) -> None:
    prefix = f"process[{index}]."
    try:
        registry.add(table.workers, _resolve(table.target), table.enable_async, table.name)
    except ProcessError as exc:
        key, rule = _RULES.get(type(exc), ("target", ConfigRule.INVALID_TARGET))
        raise WorkerConfigError(prefix + key, rule) from exc


def _resolve(target: str) -> Any:
    """Import ``module:qualname``; a class is built with no arguments (its instance runs)."""
    try:
        found = import_target(target)
        return found() if isinstance(found, type) else found
    except Exception as exc:
        raise ProcessTargetError("the entry's target cannot be imported or built") from exc
