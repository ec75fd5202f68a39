"""The launcher tests' ``root``, in place of the shared pool root: a launcher reads a
published generation, not ``coretsia.toml``, and its task sources sit on ``apps/``."""

from __future__ import annotations

from pathlib import Path

import pytest
from pools import install_app


@pytest.fixture
def root(short_root: Path) -> Path:
    """A project root with the test task sources on ``apps/`` (no generation yet)."""
    (short_root / "apps").mkdir()
    install_app(short_root / "apps", "launcher_sources.py", "sources.py")
    return short_root
