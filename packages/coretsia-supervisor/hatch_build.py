"""Build hook: put the ``coretsia-supervisor(1)`` man page into the wheel.

The page is generated at build time by argparse-manpage from the CLI's own parser
(``coretsia.supervisor.parser.build_parser``), so it can never drift from ``--help``; it is
never committed. It lands at ``share/man/man1/coretsia-supervisor.1`` in the installed
environment. ``SOURCE_DATE_EPOCH`` (if set) fixes its date, for reproducible wheels.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class ManpageBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Generates the man page and adds it to the wheel's shared data."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        from argparse_manpage.manpage import Manpage

        sys.path.insert(0, str(Path(self.root) / "src"))
        try:
            from coretsia.supervisor.parser import DESCRIPTION, build_parser
            from coretsia.supervisor.shared._version import __version__
        finally:
            sys.path.pop(0)
        page = Manpage(
            build_parser(),
            _data={
                "project_name": "coretsia-supervisor",
                "version": __version__,
                "manual_title": "Coretsia Worker",
                "description": DESCRIPTION,
            },
        )
        out = Path(self.directory) / "man" / "coretsia-supervisor.1"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(str(page), encoding="utf-8")
        build_data["shared_data"][str(out)] = "share/man/man1/coretsia-supervisor.1"
