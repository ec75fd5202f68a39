"""The project's configuration: ``coretsia.toml`` as a tree of frozen records.

``start`` reads and validates the file once, before anything else happens, and the result
is what the generation snapshot is made of (see ``docs/configuration.md``); workers never
read the file. ``stop``, ``status`` and ``health`` never read it either: they find the
supervisor through the lock and the locator, so a broken config can never stop an
operator from stopping a running pool.

Why so strict:

- Unknown keys are errors, at every level. A typo (``stop_timeout = 5000``) that silently
  falls back to a default is a shutdown budget nobody chose.
- Types are exact. TOML already distinguishes ``4`` from ``"4"`` and ``true`` from ``1``;
  accepting either would make two spellings of one file mean the same thing today and
  something different the day a coercion rule changes.
- Errors name the dotted key and the broken rule, never the value: values can be secrets
  pasted into the wrong key, and error text reaches logs and terminals.

The parts: :mod:`.records` (the tree, one record per table), :mod:`.rules` (the value
rules, as the records' validators), :mod:`.converter` (the strict cattrs converter that
builds the tree from the parsed file) and :mod:`.loading` (reading the file).
"""

from __future__ import annotations

from coretsia.supervisor.config.loading import CONFIG_FILE, load_config, parse_config
from coretsia.supervisor.config.records import (
    HOOK_KINDS,
    Budgets,
    ControlSettings,
    Hooks,
    Observability,
    OptionValue,
    PoolConfig,
    ProcessSettings,
    ProcessTable,
    RuntimePaths,
    SourceOptions,
    SpawnMode,
    TcpSettings,
    WorkerSettings,
)
from coretsia.supervisor.generation.spec import TaskType, TelemetryMode

__all__ = [
    "CONFIG_FILE",
    "HOOK_KINDS",
    "Budgets",
    "ControlSettings",
    "Hooks",
    "Observability",
    "OptionValue",
    "PoolConfig",
    "ProcessSettings",
    "ProcessTable",
    "RuntimePaths",
    "SourceOptions",
    "SpawnMode",
    "TaskType",
    "TcpSettings",
    "TelemetryMode",
    "WorkerSettings",
    "load_config",
    "parse_config",
]
