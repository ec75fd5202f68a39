"""Task-source and hook resolution: done once at ``start``, never in a worker.

Seed 000: exactly one source serves the configured task type. Installed distributions
contribute sources through the entry-point group ``coretsia.worker.task_sources`` (the
entry's name is the source's name, its object the factory, whose ``task_type`` attribute
says what it serves); the application may name its own factory as
``task_source = "module:factory"``, or select an installed source by name when several
exist. Explicit selection is configuration, not priority. Discovery reads installed
package metadata and imports the candidates, which is why it happens here, in the
supervisor at ``start``, and its result (one ``module:attr``) is frozen into the
generation (:mod:`.generation_builder`): a worker only imports that target, it never
discovers.

Hooks are resolved the same way: ``[worker.hooks]`` names them, and installed
distributions may add more through ``coretsia.worker.hooks`` (each entry's object has a
``kind`` attribute: ``before``, ``after`` or ``reset``); configured hooks run first, then
contributed ones by entry-point name. Every installed hook applies to every pool of the
environment, so one that cannot be imported, is not callable or has no valid ``kind``
fails the start (``worker-start-failed``) rather than run units of work without it.

Discovery is strict: with no source named, every entry of the source group is imported to
read its ``task_type``, and one that cannot be imported fails the start
(``worker-task-source-unresolvable``): it might be the very source meant to serve, and
skipping it could silently run another one. Naming the source imports that entry only.

The chosen installed source's ``check_options`` (optional, see
:mod:`coretsia.worker_protocol.task_source`) runs here too, so a broken
``[worker.source_options]`` is ``worker-config-invalid`` before anything is published or
spawned, not a worker failure. An application's own ``module:factory`` is never imported
here (artifact-only boot: only workers import the application), so its options are
checked by its factory, in the workers.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from coretsia.supervisor.config import HOOK_KINDS, PoolConfig
from coretsia.supervisor.generation.spec import HookTargets
from coretsia.supervisor.shared.entry_points import EntryPoint, entry_points
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import WorkerConfigError, WorkerStartFailedError
from coretsia.worker_protocol.task_source import TaskSourceOptionError

SOURCE_GROUP: Final = "coretsia.worker.task_sources"
HOOK_GROUP: Final = "coretsia.worker.hooks"


def _load(entry: EntryPoint, reason: Reason = Reason.TASK_SOURCE_UNRESOLVABLE) -> object:
    try:
        return entry.load()
    except Exception as exc:
        raise WorkerStartFailedError(reason) from exc


def _serves(entry: EntryPoint, task_type: str) -> bool:
    return getattr(_load(entry), "task_type", None) == task_type


def resolve_task_source(config: PoolConfig) -> str:
    """The ``module:attr`` every worker of this generation imports as its source factory.

    An installed source's options are checked on the way (:func:`check_source_options`).
    """
    selected = config.worker.task_source
    if selected is not None and ":" in selected:
        return selected  # the application's own factory, imported by the workers only
    entry = _installed_source(config.worker.task_type.value, selected)
    check_source_options(_load(entry), config.source_options.as_dict())
    return entry.value


def _installed_source(task_type: str, selected: str | None) -> EntryPoint:
    installed = list(entry_points(group=SOURCE_GROUP))
    if selected is not None:
        named = [e for e in installed if e.name == selected]
        if len(named) > 1:
            raise WorkerStartFailedError(Reason.TASK_SOURCE_AMBIGUOUS)
        if not named or not _serves(named[0], task_type):
            raise WorkerStartFailedError(Reason.TASK_SOURCE_MISSING)
        return named[0]
    serving = [e for e in installed if _serves(e, task_type)]
    if not serving:
        raise WorkerStartFailedError(Reason.TASK_SOURCE_MISSING)
    if len(serving) > 1:
        raise WorkerStartFailedError(Reason.TASK_SOURCE_AMBIGUOUS)
    return serving[0]


def check_source_options(factory: object, options: Mapping[str, object]) -> None:
    """Run the factory's ``check_options`` on a read-only copy of the options, if it has one.

    A :class:`TaskSourceOptionError` is the configuration error of
    ``worker.source_options.<key>`` with the source's rule (exit 6); any other exception
    means the source itself is broken: ``worker-task-source-unresolvable``, the exception
    kept only as the cause (never printed unless ``CORETSIA_DEBUG=1``).
    """
    check = getattr(factory, "check_options", None)
    if check is None:
        return
    try:
        check(MappingProxyType(dict(options)))
    except TaskSourceOptionError as exc:
        raise WorkerConfigError(f"worker.source_options.{exc.key}", exc.rule) from exc
    except Exception as exc:
        raise WorkerStartFailedError(Reason.TASK_SOURCE_UNRESOLVABLE) from exc


def resolve_hooks(config: PoolConfig) -> HookTargets:
    """Every hook target by kind: the configured ones, then contributed ones by name."""
    hooks = {kind: list(getattr(config.hooks, kind)) for kind in HOOK_KINDS}
    for entry in sorted(entry_points(group=HOOK_GROUP), key=lambda e: e.name):
        hook = _load(entry, Reason.START_FAILED)
        kind = getattr(hook, "kind", None)
        if kind not in hooks or not callable(hook):
            raise WorkerStartFailedError(Reason.START_FAILED)
        hooks[kind].append(entry.value)
    return HookTargets(
        before=tuple(hooks["before"]), after=tuple(hooks["after"]), reset=tuple(hooks["reset"])
    )
