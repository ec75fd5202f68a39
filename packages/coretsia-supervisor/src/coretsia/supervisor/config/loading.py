"""Reading ``coretsia.toml``: the file's own failures, then the converter.

Only the default file may be absent (that means "all defaults"); a file named with
``--config`` must exist, and its name must be a safe relative path. Whatever the file
holds, an error names the key ``config`` and never quotes the file.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Mapping
from typing import Any, Final

from coretsia.supervisor.config.converter import structure_config
from coretsia.supervisor.config.records import PoolConfig
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.paths import is_safe_relative_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

__all__ = ["CONFIG_FILE", "FILE_KEY", "load_config", "parse_config"]

CONFIG_FILE: Final = "coretsia.toml"
"""The default configuration file, relative to the project root."""

FILE_KEY: Final = "config"
"""The key named by errors about the file as a whole (missing, unreadable, not TOML).

It is also the key of an unsafe ``--config`` path: the option's own spelling cannot be
used, because :class:`WorkerConfigError` masks any key that does not start with a letter,
digit or underscore.
"""


def parse_config(worker: Mapping[str, object]) -> PoolConfig:
    """Validate the content of the ``[worker]`` table alone, already parsed from TOML."""
    return structure_config({"worker": worker})


def load_config(root: pathlib.Path, config_file: str | None = None) -> PoolConfig:
    """Read and validate the configuration file of the project at ``root``.

    ``config_file`` is relative to ``root`` (``--config``); when it is None the default
    ``coretsia.toml`` is read, and its absence simply means "all defaults".
    """
    if config_file is not None and not is_safe_relative_path(config_file):
        raise WorkerConfigError(FILE_KEY, ConfigRule.UNSAFE_PATH)
    path = root / (CONFIG_FILE if config_file is None else config_file)
    try:
        with path.open("rb") as stream:
            raw = stream.read()
    except (FileNotFoundError, NotADirectoryError) as exc:
        if config_file is None and not path.is_symlink():
            return PoolConfig()
        # A dangling symlink at the default name is a broken file, not an absent one.
        rule = ConfigRule.FILE_MISSING if config_file is not None else ConfigRule.FILE_UNREADABLE
        raise WorkerConfigError(FILE_KEY, rule) from exc
    except OSError as exc:  # a directory, no permission, an I/O error
        raise WorkerConfigError(FILE_KEY, ConfigRule.FILE_UNREADABLE) from exc
    try:
        document: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        # `from None`: a UnicodeDecodeError carries the file's bytes in `.object`.
        raise WorkerConfigError(FILE_KEY, ConfigRule.NOT_TOML) from None
    return structure_config(document)
