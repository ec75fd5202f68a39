"""Fixtures for the reference SQLite queue and source: a fake worker context, test handlers,
an open queue and where one goes.

Their directories are the shared ``short_root``: a waiter's notification socket lives next
to the database, and an AF_UNIX path longer than about 100 bytes cannot be bound (pytest's
tmp_path is long).
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pools import install_app

from coretsia.sources.sqlite_queue import SqliteQueue


class FakeContext:
    """A TaskSourceContext like the launcher's: a pipe whose write end closing means stop."""

    def __init__(
        self,
        options: Mapping[str, object] | None = None,
        *,
        generation: str | None = "gen-a",
        task_type: str = "queue",
    ) -> None:
        self._read, self._write = os.pipe()
        self._task_type = task_type
        if options is not None:
            self.options = dict(options)
        if generation is not None:
            self.generation = generation

    @property
    def task_type(self) -> str:
        return self._task_type

    @property
    def slot(self) -> int:
        return 0

    @property
    def stopping(self) -> bool:
        return self.wait_for_stop(0)

    def stop_fileno(self) -> int:
        return self._read

    def wait_for_stop(self, timeout: float | None) -> bool:
        return bool(select.select([self._read], [], [], timeout)[0])

    def stop(self) -> None:
        """Request a cooperative stop: the read end becomes readable (end of file)."""
        if self._write >= 0:
            os.close(self._write)
            self._write = -1

    def close(self) -> None:
        self.stop()
        os.close(self._read)


@pytest.fixture
def make_context() -> Iterator[Callable[..., FakeContext]]:
    """Build FakeContexts; their pipes are closed at teardown."""
    made: list[FakeContext] = []

    def make(*args: Any, **kwargs: Any) -> FakeContext:
        context = FakeContext(*args, **kwargs)
        made.append(context)
        return context

    yield make
    for context in made:
        context.close()


@pytest.fixture
def handlers(short_root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test handlers (``apps/cq_handlers.py``) as an importable module ``cq_handlers``
    in ``app/`` of the root; its name is returned."""
    package = short_root / "app"
    package.mkdir()
    install_app(package, "cq_handlers.py")
    monkeypatch.syspath_prepend(str(package))
    monkeypatch.delitem(sys.modules, "cq_handlers", raising=False)
    return "cq_handlers"


@pytest.fixture
def queue(short_root: Path) -> Iterator[SqliteQueue]:
    """An open SQLite queue in a fresh short root (``var/q.sqlite3``), closed at teardown."""
    with SqliteQueue(short_root / "var" / "q.sqlite3") as q:
        yield q


@pytest.fixture
def db(short_root: Path) -> Path:
    """Where a queue database goes in a fresh short root; nothing is created there."""
    return short_root / "var" / "q.sqlite3"
