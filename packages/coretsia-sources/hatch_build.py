"""Build hook: put the man pages of the queue commands into the wheel.

``coretsia-queue(1)`` and ``coretsia-sqlite-queue(1)`` are generated at build time by
argparse-manpage from the commands' own parsers (``coretsia.sources._queue_parser``, which
imports the standard library only: the build has none of the package's dependencies), so
they never drift from
``--help``; they are never committed, and land in ``share/man/man1/`` of the installed
environment, as the supervisor's page does. ``SOURCE_DATE_EPOCH`` (if set) fixes their
date.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PAGES = {"coretsia-queue": "queue_parser", "coretsia-sqlite-queue": "sqlite_parser"}
"""Each command's name, and the function of ``_queue_parser`` that builds its parser."""


class ManpagesBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Generates one page per command and adds each to the wheel's shared data."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        from argparse_manpage.manpage import Manpage

        sys.path.insert(0, str(Path(self.root) / "src"))
        try:
            release = importlib.import_module("coretsia.sources._version").__version__
            module = importlib.import_module("coretsia.sources._queue_parser")
            parsers = {name: getattr(module, function)() for name, function in PAGES.items()}
        finally:
            sys.path.pop(0)
        for name, parser in parsers.items():
            page = Manpage(
                parser,
                _data={
                    "project_name": name,
                    "version": release,
                    "manual_title": "Coretsia Worker",
                    "description": parser.description,
                },
            )
            out = Path(self.directory) / "man" / f"{name}.1"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(str(page), encoding="utf-8")
            build_data["shared_data"][str(out)] = f"share/man/man1/{name}.1"
