"""One strict cattrs converter: the parsed ``coretsia.toml`` in, a :class:`PoolConfig` out.

Out of the box cattrs coerces (``"4"`` becomes 4, ``true`` becomes 1, a string becomes a
tuple of its characters) and reports unknown keys as an unordered set. The hooks here
accept only the exact TOML type and refuse the first unknown key in file order; every
failure becomes one :class:`WorkerConfigError` naming the dotted key and the rule, never
the value (values can be secrets pasted into the wrong key).

``[worker]`` is flat in the file (seed 000's shape) but grouped in the records, so
:func:`structure_config` first routes each of its keys to the record that declares it
(the records name their TOML table, see :mod:`.records`), then lets cattrs build the tree.

Errors come in a fixed order, so one file always reports the same one:

1. the top level (only ``[worker]`` and ``[[process]]``), ``[worker]`` being a table, and
   its unknown keys in file order;
2. the shape of the rest: a table that is not one, an unknown key of a subtable or of a
   ``[[process]]`` table;
3. record by record in :class:`PoolConfig`'s field order, the wrong types of a record and
   then its value rules (:mod:`.rules`);
4. ``task_type`` last: seed 000 makes an invalid one a lifecycle failure
   (``worker-invalid-state``, exit 1), and a file that also breaks a configuration rule
   must report that one (exit 6), the one the operator fixes.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import attrs
import cattrs
from cattrs.errors import AttributeValidationNote, IterableValidationNote
from cattrs.gen import make_dict_structure_fn

from coretsia.supervisor.config.records import PoolConfig, SourceOptions, SpawnMode
from coretsia.supervisor.config.rules import DRIVER_ALIASES, key_of
from coretsia.supervisor.generation.spec import TaskType, TelemetryMode
from coretsia.worker_protocol.catalogue import ConfigRule, Reason
from coretsia.worker_protocol.exceptions import WorkerConfigError, WorkerLifecycleFailedError
from coretsia.worker_protocol.vocabulary import ContainmentRequest, DriverRequest, TransportRequest

__all__ = ["CONVERTER", "structure_config"]

Hook = Callable[[Any, Any], Any]


class _Refused(Exception):
    """A hook's refusal, located later from cattrs' notes; it carries no value.

    ``below`` names what under the located key was refused (an unknown key's name);
    ``shape`` marks the file's structure (tables, their keys), reported before values.
    """

    def __init__(self, rule: ConfigRule, below: str = "", *, shape: bool = False) -> None:
        super().__init__(rule.value)
        self.rule, self.below, self.shape = rule, below, shape


def _exact(kind: type) -> Hook:
    def structure(value: object, _type: object) -> object:
        # `type() is`, not isinstance: a TOML boolean is a Python bool, and bool is an int.
        if type(value) is not kind:
            raise _Refused(ConfigRule.WRONG_TYPE)
        return value

    return structure


def _member(kind: type[enum.Enum]) -> Hook:
    accepted: dict[str, enum.Enum] = {member.value: member for member in kind}
    if kind is DriverRequest:
        accepted.update(DRIVER_ALIASES)

    def structure(value: object, _type: object) -> enum.Enum:
        if type(value) is not str:
            raise _Refused(ConfigRule.WRONG_TYPE)
        if value not in accepted:
            raise _Refused(ConfigRule.NOT_ONE_OF)
        return accepted[value]

    return structure


def _is_array(target: object) -> bool:
    args = typing.get_args(target)
    return typing.get_origin(target) is tuple and len(args) == 2 and args[1] is ...


def _array(value: object, target: Any) -> tuple[Any, ...]:
    """A TOML array (never a string, which cattrs would split into characters).

    An array of records is an array of tables (``[[process]]``): its shape, checked
    whole before any item, like a table's keys.
    """
    item_type = typing.get_args(target)[0]
    tables = attrs.has(item_type)
    if type(value) is not list or (tables and not all(isinstance(v, Mapping) for v in value)):
        raise _Refused(ConfigRule.WRONG_TYPE, shape=tables)
    items = []
    for index, item in enumerate(value):
        try:
            items.append(CONVERTER.structure(item, item_type))
        except (_Refused, cattrs.BaseValidationError) as exc:
            # Located as cattrs locates a field: a note (PEP 678) on the failure.
            note = IterableValidationNote(f"Structuring item {index}", index, item_type)
            notes = [*getattr(exc, "__notes__", []), note]
            exc.__notes__ = notes  # type: ignore[union-attr, unused-ignore]
            raise cattrs.IterableValidationError("While structuring", [exc], target) from None
    return tuple(items)


def _record(cls: type) -> Hook:
    """cattrs' own structuring of ``cls``, behind a table check and file-order unknown keys."""
    generated: Hook = make_dict_structure_fn(cls, CONVERTER)
    known = frozenset(field.name for field in attrs.fields(cls))

    def structure(value: object, _type: object) -> object:
        if not isinstance(value, Mapping):
            raise _Refused(ConfigRule.WRONG_TYPE, shape=True)
        unknown = next((key for key in value if key not in known), None)
        if unknown is not None:
            raise _Refused(ConfigRule.UNKNOWN_KEY, f".{unknown}", shape=True)
        return generated(value, cls)

    return structure


def _source_options(value: object, _type: object) -> SourceOptions:
    """The source's own keys: a table of them; their rules are :func:`.rules.option_items`."""
    if not isinstance(value, Mapping):
        raise _Refused(ConfigRule.WRONG_TYPE, shape=True)
    return SourceOptions(tuple(value.items()))


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(detailed_validation=True)
    for kind in (str, int, bool):
        converter.register_structure_hook(kind, _exact(kind))
    # By class, one by one: cattrs would otherwise find the `str` hook first for these
    # str-based enums (dispatch by class goes before predicates).
    for members in (
        TaskType,
        DriverRequest,
        ContainmentRequest,
        TransportRequest,
        TelemetryMode,
        SpawnMode,
    ):
        converter.register_structure_hook(members, _member(members))
    converter.register_structure_hook_func(_is_array, _array)
    converter.register_structure_hook(SourceOptions, _source_options)
    converter.register_structure_hook_factory(attrs.has, _record)
    return converter


CONVERTER: Final = _make_converter()
"""The configuration's converter; structure with :func:`structure_config`."""


def _routes() -> dict[str, tuple[str, str | None]]:
    """Where each key of the file goes: ``(group, field)`` of :class:`PoolConfig`.

    A flat ``[worker]`` key goes to the field of that name in a record whose table is
    ``worker``; a subtable (``[worker.tcp]``) is a whole record, field None. A field
    that declares its own key (``process``) is a top-level key of the file.
    """
    attrs.resolve_types(PoolConfig)
    routes: dict[str, tuple[str, str | None]] = {}
    for group in attrs.fields(PoolConfig):
        record: Any = group.type
        if record.TABLE != PoolConfig.TABLE:
            routes[f"{PoolConfig.TABLE}.{group.name}"] = (group.name, None)
            continue
        for field in attrs.fields(record):
            key = field.metadata.get("key", f"{PoolConfig.TABLE}.{field.name}")
            routes[key] = (group.name, field.name)
    return routes


_ROUTES: Final = _routes()
_TOP_LEVEL: Final = frozenset({PoolConfig.TABLE, *(k for k in _ROUTES if "." not in k)})
"""Top-level keys of the file: ``[worker]`` and seed 003's ``[[process]]`` entries."""


def _nest(document: Mapping[str, object]) -> dict[str, Any]:
    """The document in the shape of :class:`PoolConfig`: ``[worker]``'s keys grouped."""
    for key in document:
        if key not in _TOP_LEVEL:
            raise WorkerConfigError(key, ConfigRule.UNKNOWN_KEY)
    worker = document.get(PoolConfig.TABLE, {})
    if not isinstance(worker, Mapping):
        raise WorkerConfigError(PoolConfig.TABLE, ConfigRule.WRONG_TYPE)
    located = {f"{PoolConfig.TABLE}.{key}": value for key, value in worker.items()}
    located.update((key, value) for key, value in document.items() if key != PoolConfig.TABLE)
    nested: dict[str, Any] = {}
    for key, value in located.items():
        if key not in _ROUTES:
            raise WorkerConfigError(key, ConfigRule.UNKNOWN_KEY)
        group, field = _ROUTES[key]
        if field is None:
            nested[group] = value
        else:
            nested.setdefault(group, {})[field] = value
    return nested


_TASK_TYPES: Final = {task_type.value: task_type for task_type in TaskType}


def structure_config(document: Mapping[str, object]) -> PoolConfig:
    """Validate a parsed ``coretsia.toml`` (top-level ``worker`` and ``process`` keys)."""
    nested = _nest(document)
    task_type = nested.get("worker", {}).pop("task_type", TaskType.QUEUE.value)
    try:
        config = CONVERTER.structure(nested, PoolConfig)
    except cattrs.BaseValidationError as exc:
        error = _first_error(exc)
    else:
        if type(task_type) is not str or task_type not in _TASK_TYPES:
            # Seed 000: an invalid task_type is a Worker-owned lifecycle validation
            # failure, not a configuration error.
            raise WorkerLifecycleFailedError(Reason.INVALID_STATE)
        worker = attrs.evolve(config.worker, task_type=_TASK_TYPES[task_type])
        return attrs.evolve(config, worker=worker)
    # Raised outside the handler so it chains to nothing that could quote the file.
    raise error


def _first_error(group: cattrs.BaseValidationError) -> WorkerConfigError:
    """The error to report: the first refusal of the file's shape, else the first one."""
    leaves = list(_leaves(group, PoolConfig.TABLE))
    shape = (leaf for leaf in leaves if isinstance(leaf[1], _Refused) and leaf[1].shape)
    key, leaf = next(shape, leaves[0])
    if isinstance(leaf, WorkerConfigError):  # a value rule: already keyed
        return WorkerConfigError(leaf.key, leaf.rule)
    if isinstance(leaf, _Refused):
        return WorkerConfigError(key + leaf.below, leaf.rule)
    return WorkerConfigError(key, ConfigRule.WRONG_TYPE)  # a required key is missing


def _leaves(group: cattrs.BaseValidationError, key: str) -> Iterator[tuple[str, BaseException]]:
    """Every failure under ``group`` in field order, with the dotted key it is under."""
    for inner in group.exceptions:
        inner_key = key
        for note in getattr(inner, "__notes__", ()):
            if isinstance(note, AttributeValidationNote):
                field = attrs.fields_dict(group.cl)[note.name]
                located = hasattr(group.cl, "TABLE")  # else a [[process]] table: its index
                inner_key = key_of(group.cl, field) if located else f"{key}.{note.name}"
            elif isinstance(note, IterableValidationNote):
                inner_key = f"{key}[{note.index}]"
        if isinstance(inner, cattrs.BaseValidationError):
            yield from _leaves(inner, inner_key)
        else:
            yield inner_key, inner
