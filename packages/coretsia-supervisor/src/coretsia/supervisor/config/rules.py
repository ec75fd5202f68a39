"""The value rules of ``coretsia.toml``: bounds, patterns and path safety, as attrs validators.

The converter (:mod:`.converter`) has already refused unknown keys and wrong types by the
time these run; what is left is whether a value of the right type is acceptable. They are
attached to the records' fields (:mod:`.records`), so a record built in code or changed
with :func:`attrs.evolve` obeys exactly the rules a file does.

Every rule raises :class:`WorkerConfigError` with the dotted TOML key and the rule, never
the value: values can be secrets pasted into the wrong key, and error text reaches logs.
A record names its table in ``TABLE`` (``worker.tcp``), so a field's key is the table
and the field's name, unless the field declares its own (``[[process]]`` is ``process``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.paths import is_safe_relative_path, paths_overlap
from coretsia.worker_protocol.vocabulary import MAX_WORKERS, DriverRequest

if TYPE_CHECKING:
    import attrs

    Validator = Callable[[Any, attrs.Attribute[Any], Any], None]

__all__ = [
    "DRIVER_ALIASES",
    "LOOPBACK_HOST",
    "MAX_REQUESTS",
    "MIN_HEARTBEAT_TIMEOUT_MS",
    "MIN_RESPAWN_INTERVAL_MS",
    "STATE_TMP_SUFFIX",
    "check_path_claims",
    "each",
    "holds",
    "in_range",
    "is_app_path",
    "is_dotted",
    "is_ip_address",
    "is_runtime_path",
    "is_state_path",
    "is_target",
    "is_task_source",
    "key_of",
    "off_or_range",
    "option_items",
    "process_tables",
]

MAX_REQUESTS: Final = 10_000_000
"""Largest ``max_requests``: a bound, so a typo of extra zeros is caught, not obeyed."""

MAX_MEMORY_MB: Final = 1_048_576
"""Largest ``max_memory_mb`` (1 TiB): a bound, so a typo of extra zeros is caught."""

MAX_TARGET_CHARS: Final = 256
"""Longest accepted ``task_source``; it travels in the generation and in worker frames."""

LOOPBACK_HOST: Final = "127.0.0.1"
"""The only TCP control host: the control channel is never reachable off the machine."""

MIN_RESPAWN_INTERVAL_MS: Final = 10
"""Least ``respawn_interval_ms``: an entry that returns at once never spins the CPU."""

MIN_HEARTBEAT_TIMEOUT_MS: Final = 100
"""Least ``heartbeat_timeout_ms`` when on. A worker beats every third of it; much below
this, a busy machine's scheduling delays alone would make healthy workers look hung."""

MAX_OPTIONS: Final = 64
"""Most ``[worker.source_options]`` entries; each is a short scalar."""
MAX_OPTION_CHARS: Final = 1024
MAX_HOOKS: Final = 32
"""Most hooks of one kind (before, after, reset)."""

STATE_TMP_SUFFIX: Final = ".tmp"
"""The state file is written to ``<state_path>.tmp``, then renamed: that name is taken too."""

FORBIDDEN_DIRECTORY: Final = "skeleton"
"""Seed 000's ``skeleton/`` rule: no runtime path goes through a directory of this name.

In the seed's framework the skeleton is the application's own tree, which runtime files
must never be written into; the rule is kept so that a configuration valid here is valid
there. Like ``..``, it applies to whole segments (``var/skeletons/x`` is fine)."""

DRIVER_ALIASES: Final = {"pcntl": DriverRequest.FORK}
"""Seed 000 calls the fork-exec driver ``pcntl`` (PHP's process-control extension); a
config written against the seed keeps working and means the same driver."""

_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED: Final = re.compile(rf"{_IDENTIFIER}(?:\.{_IDENTIFIER})*")
_TARGET: Final = re.compile(rf"{_DOTTED.pattern}:{_DOTTED.pattern}")
"""``module:attr``: a dotted module and a dotted attribute, ASCII identifiers only."""
_SOURCE_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""The name of an installed task source (its entry point's name), e.g. ``sqlite``."""
_OPTION_KEY: Final = re.compile(_IDENTIFIER)


def key_of(record: object, attribute: attrs.Attribute[Any]) -> str:
    """The dotted TOML key of ``attribute`` of ``record`` (an instance or its class)."""
    declared: str | None = attribute.metadata.get("key")
    if declared is not None:
        return declared
    table: str = getattr(record, "TABLE")  # noqa: B009 - a ClassVar of every record
    return f"{table}.{attribute.name}"


def holds(valid: Callable[[Any], bool], rule: ConfigRule) -> Validator:
    """A validator that raises ``rule`` under the field's key when ``valid`` is false."""

    def check(record: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not valid(value):
            raise WorkerConfigError(key_of(record, attribute), rule)

    return check


def in_range(low: int, high: int) -> Validator:
    """An integer between ``low`` and ``high``, both included."""
    return holds(lambda value: low <= value <= high, ConfigRule.OUT_OF_RANGE)


def off_or_range(low: int, high: int) -> Validator:
    """0 (the feature is off), or an integer between ``low`` and ``high``, both included."""
    return holds(lambda value: value == 0 or low <= value <= high, ConfigRule.OUT_OF_RANGE)


def each(valid: Callable[[str], bool], rule: ConfigRule, most: int | None = None) -> Validator:
    """Every item ``valid``; errors name the item (``worker.app_path[2]``).

    More than ``most`` items is ``wrong-type`` on the array itself: a list that long is
    not the kind of value the key takes.
    """

    def check(record: object, attribute: attrs.Attribute[Any], values: tuple[str, ...]) -> None:
        key = key_of(record, attribute)
        if most is not None and len(values) > most:
            raise WorkerConfigError(key, ConfigRule.WRONG_TYPE)
        for index, item in enumerate(values):
            if not valid(item):
                raise WorkerConfigError(f"{key}[{index}]", rule)

    return check


def is_target(value: str) -> bool:
    """``module:attr``, both parts dotted ASCII identifiers, at most 256 characters."""
    return len(value) <= MAX_TARGET_CHARS and bool(_TARGET.fullmatch(value))


def is_dotted(value: str) -> bool:
    """A dotted module name (``myapp.jobs``)."""
    return bool(_DOTTED.fullmatch(value))


def is_task_source(value: str | None) -> bool:
    """Unset, the application's own ``module:factory``, or an installed source's name."""
    return value is None or is_target(value) or bool(_SOURCE_NAME.fullmatch(value))


def is_app_path(value: str) -> bool:
    """``.`` (the root itself) or a safe relative directory."""
    return value == "." or is_safe_relative_path(value)


def is_ip_address(value: str) -> bool:
    """An IPv4 or IPv6 address literal: never a name a resolver could answer falsely."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def is_runtime_path(value: str) -> bool:
    """A safe relative path that goes through no ``skeleton`` directory."""
    return is_safe_relative_path(value) and FORBIDDEN_DIRECTORY not in value.split("/")[:-1]


def is_state_path(value: str) -> bool:
    """A runtime path whose ``.tmp`` sibling (4 characters longer) is still safe."""
    return is_runtime_path(value) and is_safe_relative_path(value + STATE_TMP_SUFFIX)


def check_path_claims(claimed: Iterable[tuple[str, str]], canonical: Iterable[str]) -> None:
    """No claimed ``(key, path)`` equal to or nested in a canonical path or another key's.

    Run on the configured text when the paths are built, and again by ``start`` on the
    paths as they resolve through the root's symlinks (two texts can name one file).
    """
    reserved = tuple(canonical)
    seen: list[tuple[str, str]] = []
    for key, path in claimed:
        if any(paths_overlap(path, other) for other in reserved):
            raise WorkerConfigError(key, ConfigRule.RESERVED_PATH)
        if any(paths_overlap(path, other) for owner, other in seen if owner != key):
            raise WorkerConfigError(key, ConfigRule.OVERLAPPING_PATH)
        seen.append((key, path))


def option_items(
    record: object, attribute: attrs.Attribute[Any], items: tuple[tuple[str, object], ...]
) -> None:
    """``[worker.source_options]``: identifier keys, short scalar values.

    The task source defines and checks its own options; these bounds only keep what
    travels in the generation small and plain. A key that is not an identifier is
    reported on the table, never echoed.
    """
    table = key_of(record, attribute)
    if len(items) > MAX_OPTIONS:
        raise WorkerConfigError(table, ConfigRule.WRONG_TYPE)
    for key, value in items:
        if type(key) is not str or not _OPTION_KEY.fullmatch(key):
            raise WorkerConfigError(table, ConfigRule.UNKNOWN_KEY)
        if type(value) not in (str, int, bool):
            raise WorkerConfigError(f"{table}.{key}", ConfigRule.WRONG_TYPE)
        if type(value) is str and len(value) > MAX_OPTION_CHARS:
            raise WorkerConfigError(f"{table}.{key}", ConfigRule.OUT_OF_RANGE)


def process_tables(
    record: object, attribute: attrs.Attribute[Any], tables: tuple[Any, ...]
) -> None:
    """Each ``[[process]]`` table's own values; errors name it by position (``process[2]``).

    The rules that span entries (names, the 1,024 limit, the async flag against the
    entry's shape) are the manager's, applied when the entries are registered at ``start``.
    """
    for index, table in enumerate(tables):
        prefix = f"{key_of(record, attribute)}[{index}]."
        if not is_target(table.target):
            raise WorkerConfigError(prefix + "target", ConfigRule.INVALID_TARGET)
        if table.name is not None and not table.name:
            raise WorkerConfigError(prefix + "name", ConfigRule.WRONG_TYPE)
        if not 0 <= table.workers <= MAX_WORKERS:
            raise WorkerConfigError(prefix + "workers", ConfigRule.OUT_OF_RANGE)
