"""``[worker.source_options]`` read by the protocol's strict field kinds, one table per source.

The options are an untrusted map (a TOML table): each value is read by a
:class:`~coretsia.worker_protocol._strict.Kind`, as every frame of the protocol is (the
exact type, ``True`` is not an integer; the range), and a refusal names the key and a
:class:`ConfigRule`, never the value (``dsn`` may hold a password). Checked in a fixed
order, unknown keys first, so that one file always reports the same error. Imports
nothing heavier than the SPI: the supervisor runs these checks at ``start``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple

from coretsia.sources._source_common import DEFAULT_MAX_ATTEMPTS, SourceOptionError
from coretsia.worker_protocol._strict import Bool, FieldError, Int, Kind, Str
from coretsia.worker_protocol.catalogue import ConfigRule, Reason

REQUIRED: Final = object()
"""The default of an option that must be given."""


class Text(Str):
    """A string (any length) for which ``valid`` holds."""

    __slots__ = ("valid",)

    def __init__(self, valid: Callable[[str], bool]) -> None:
        super().__init__(None, min_len=0)
        self.valid = valid

    def read(self, value: object, path: str) -> str:
        text = super().read(value, path)
        if not self.valid(text):
            raise FieldError(Reason.FRAME_INVALID_VALUE, path)
        return text


class Option(NamedTuple):
    """One key: how its value is read, its default, the rule a value out of bounds breaks."""

    kind: Kind
    default: object
    rule: ConfigRule = ConfigRule.OUT_OF_RANGE


def _is_target(target: str) -> bool:
    """Shaped ``module:attr.path`` (dotted identifiers); whether it imports is the worker's
    check."""
    module_name, _, attr_path = target.partition(":")
    return all(part.isidentifier() for part in (*module_name.split("."), *attr_path.split(".")))


COMMON_OPTIONS: Final = {
    "handler": Option(Text(_is_target), REQUIRED, ConfigRule.INVALID_TARGET),
    "max_attempts": Option(Int(1), DEFAULT_MAX_ATTEMPTS),
    "keep_error_messages": Option(Bool(), default=False),
}
"""The options every queue source takes (each adds where its queue lives)."""


def parse(options: Mapping[str, object], table: Mapping[str, Option]) -> dict[str, Any]:
    """Every option of ``table`` checked, in its order (unknown keys first); the values.

    A key set to None counts as left out.
    """
    unknown = sorted(set(options) - set(table))
    if unknown:
        raise SourceOptionError(str(unknown[0]), ConfigRule.UNKNOWN_KEY)
    values: dict[str, Any] = {}
    for key, option in table.items():
        value = options.get(key)
        if value is None:
            if option.default is REQUIRED:
                raise SourceOptionError(key, ConfigRule.REQUIRED)
            values[key] = option.default
            continue
        try:
            values[key] = option.kind.read(value, key)
        except FieldError as error:
            wrong_type = error.reason is Reason.FRAME_WRONG_TYPE
            raise SourceOptionError(
                key, ConfigRule.WRONG_TYPE if wrong_type else option.rule
            ) from None
    return values
