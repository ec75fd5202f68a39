"""Fixtures of the ``sqlite`` task source's tests: a root that is the working directory, as the
launcher sets a worker's, and sources built on it with the test handlers, closed at teardown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fake_context import FakeContext, MakeContext

from coretsia.sources.sqlite_source import SqliteSource, make_source


@pytest.fixture
def root(short_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A root that is the working directory, as the launcher sets a worker's."""
    monkeypatch.chdir(short_root)
    return short_root


@pytest.fixture
def sources() -> Iterator[list[SqliteSource]]:
    """Sources a test built; closed at teardown so no socket file is left."""
    built: list[SqliteSource] = []
    yield built
    for source in built:
        source.close()


@pytest.fixture
def build(
    root: Path, handlers: str, make_context: MakeContext, sources: list[SqliteSource]
) -> Callable[..., tuple[SqliteSource, FakeContext]]:
    """Build a source and its context: the test handler ``record`` unless the options name
    another, generation ``gen-a`` unless given; each source is closed at teardown."""

    def build_one(
        *, generation: str | None = "gen-a", **options: object
    ) -> tuple[SqliteSource, FakeContext]:
        options.setdefault("handler", f"{handlers}:record")
        context = make_context(options, generation=generation)
        source = make_source(context)
        sources.append(source)
        return source, context

    return build_one
