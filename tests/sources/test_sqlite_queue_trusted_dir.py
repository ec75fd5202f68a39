"""The SQLite queue trusts only the directories it set out to create: one that was there
first in its place (made by another user in a shared parent, or a link planted there)
is refused as ``queue-dir`` and nothing is created through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from coretsia.sources.sqlite_queue import SqliteQueue
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError


def test_a_link_planted_where_the_queue_directory_goes_is_refused(short_root: Path) -> None:
    shared = short_root / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: anyone may plant a name here
    target = short_root / "target"
    (shared / "queue").symlink_to(target)  # dangling: "missing" to anyone following it
    with pytest.raises(WorkerConfigError) as caught:
        SqliteQueue(shared / "queue" / "q.sqlite3")
    assert (caught.value.key, caught.value.rule) == ("queue-dir", ConfigRule.UNTRUSTED_PATH)
    assert str(short_root) not in str(caught.value)
    assert not target.exists()


def test_directories_it_creates_in_a_shared_parent_are_its_own(short_root: Path) -> None:
    shared = short_root / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    with SqliteQueue(shared / "a" / "q.sqlite3") as queue:
        queue.check()
    assert (shared / "a").stat().st_mode & 0o777 == 0o700
