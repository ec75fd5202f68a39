"""The ``sqlite`` task source's factory and its options: the entry point, the defaults, the
options the factory and the start-time ``check_options`` refuse (with the key and the rule),
and a database that is not ready.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from fake_context import FakeContext, MakeContext

from coretsia.sources.sqlite_queue import QueueCorruptError, QueueError
from coretsia.sources.sqlite_source import (
    SourceOptionError,
    SqliteSource,
    check_options,
    make_source,
)
from coretsia.worker_protocol.catalogue import ConfigRule, Reason
from coretsia.worker_protocol.task_source import (
    TaskSource,
    TaskSourceOptionError,
    TaskSourceStorageError,
)

BAD_OPTIONS: list[tuple[dict[str, object], str, ConfigRule]] = [
    ({"handler": None}, "handler", ConfigRule.REQUIRED),
    ({"handler": 5}, "handler", ConfigRule.WRONG_TYPE),
    ({"handler": "no_colon"}, "handler", ConfigRule.INVALID_TARGET),
    ({"handler": "cq_handlers:"}, "handler", ConfigRule.INVALID_TARGET),
    ({"handler": "a:b:c"}, "handler", ConfigRule.INVALID_TARGET),
    ({"handler": "my app:f"}, "handler", ConfigRule.INVALID_TARGET),
    ({"max_attempts": 0}, "max_attempts", ConfigRule.OUT_OF_RANGE),
    ({"max_attempts": True}, "max_attempts", ConfigRule.WRONG_TYPE),
    ({"max_attempts": "3"}, "max_attempts", ConfigRule.WRONG_TYPE),
    ({"database": ""}, "database", ConfigRule.UNSAFE_PATH),
    ({"database": "a\0b"}, "database", ConfigRule.UNSAFE_PATH),
    ({"database": 7}, "database", ConfigRule.WRONG_TYPE),
    ({"keep_error_messages": "yes"}, "keep_error_messages", ConfigRule.WRONG_TYPE),
    ({"keep_error_messages": 1}, "keep_error_messages", ConfigRule.WRONG_TYPE),
    ({"surprise": 1}, "surprise", ConfigRule.UNKNOWN_KEY),
]
"""Options both ``check_options`` and ``make_source`` refuse (``handler: None``: left out)."""


def _with_handler(options: dict[str, object], handler: str) -> dict[str, object]:
    """``options`` over a good ``handler``; ``handler: None`` leaves it out."""
    merged: dict[str, object] = {"handler": handler, **options}
    if merged["handler"] is None:
        del merged["handler"]
    return merged


class TestFactory:
    def test_registered_as_the_sqlite_entry_point_for_queue(self) -> None:
        """The supervisor finds the source by its entry point and reads its task type."""
        found = entry_points(group="coretsia.worker.task_sources", name="sqlite")
        (entry,) = list(found)
        assert entry.value == "coretsia.sources.sqlite_source:make_source"
        assert entry.load() is make_source
        assert make_source.task_type == "queue"

    def test_defaults(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]], root: Path
    ) -> None:
        source, _ = build()
        assert isinstance(source, TaskSource)
        assert source.queue.path == str(root / "var" / "queue.sqlite3")
        assert (root / "var" / "queue.sqlite3").is_file()
        source.assert_ready()

    def test_database_option_is_root_relative(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]], root: Path
    ) -> None:
        source, _ = build(database="data/jobs.db")
        assert source.queue.path == str(root / "data" / "jobs.db")

    @pytest.mark.parametrize(
        ("options", "key", "rule"),
        [
            *BAD_OPTIONS,
            ({"handler": "no_such_module_cq:f"}, "handler", ConfigRule.INVALID_TARGET),
            ({"handler": "cq_handlers:missing"}, "handler", ConfigRule.INVALID_TARGET),
            ({"handler": "cq_handlers:not_callable"}, "handler", ConfigRule.INVALID_TARGET),
        ],
    )
    def test_bad_options_name_the_key(
        self,
        root: Path,
        handlers: str,
        make_context: MakeContext,
        options: dict[str, object],
        key: str,
        rule: ConfigRule,
    ) -> None:
        """The factory refuses what the start-time check refuses, and a handler it cannot use."""
        with pytest.raises(SourceOptionError) as caught:
            make_source(make_context(_with_handler(options, f"{handlers}:record")))
        assert (caught.value.key, caught.value.rule) == (key, rule)
        assert str(caught.value) == f"worker.source_options.{key}: {rule.value}"

    def test_without_options_the_handler_is_missing(
        self, root: Path, make_context: MakeContext
    ) -> None:
        """A runtime without context.options still gets a clear error, not an AttributeError."""
        with pytest.raises(SourceOptionError, match="handler: required"):
            make_source(make_context(None))

    def test_serves_queue_only(self, root: Path, handlers: str, make_context: MakeContext) -> None:
        context = make_context({"handler": f"{handlers}:record"}, task_type="http")
        with pytest.raises(ValueError, match="task_type 'queue' only"):
            make_source(context)

    def test_an_unusable_database_is_reported_by_assert_ready(
        self, root: Path, handlers: str, make_context: MakeContext
    ) -> None:
        """The factory succeeds (the source resolved); the backend is what is not ready,
        and a file that is not a database is named: corrupt (SQLITE_NOTADB)."""
        (root / "var").mkdir()
        (root / "var" / "queue.sqlite3").write_text("not a database\n" * 100)
        source = make_source(make_context({"handler": f"{handlers}:record"}))
        try:
            for step in (source.assert_ready, source.receive):
                with pytest.raises(TaskSourceStorageError) as raised:
                    step()
                assert raised.value.reason is Reason.TASK_SOURCE_CORRUPT
                assert isinstance(raised.value.__cause__, QueueCorruptError)
        finally:
            source.close()

    def test_assert_ready_fails_on_a_broken_database(
        self, build: Callable[..., tuple[SqliteSource, FakeContext]]
    ) -> None:
        source, _ = build()
        source.queue.close()
        with pytest.raises(QueueError):
            source.assert_ready()


class TestCheckOptions:
    """``make_source.check_options``: the SPI's start-time check, run by the supervisor."""

    def test_attached_to_the_factory(self) -> None:
        """The supervisor finds the check as an attribute of the entry point's factory."""
        assert make_source.check_options is check_options  # type: ignore[attr-defined]

    @pytest.mark.parametrize(
        "options",
        [
            {"handler": "app.jobs:handle"},
            {"handler": "jobs:Handler.run", "database": "/srv/q.db", "max_attempts": 1},
            {"handler": "jobs:handle", "keep_error_messages": True},
        ],
    )
    def test_accepts_good_options(self, options: dict[str, object]) -> None:
        check_options(options)

    @pytest.mark.parametrize(("options", "key", "rule"), BAD_OPTIONS)
    def test_bad_options_name_the_key_and_the_rule(
        self, options: dict[str, object], key: str, rule: ConfigRule
    ) -> None:
        with pytest.raises(TaskSourceOptionError) as caught:
            check_options(_with_handler(options, "jobs:handle"))
        assert type(caught.value) is SourceOptionError
        assert (caught.value.key, caught.value.rule) == (key, rule)

    def test_imports_nothing(self) -> None:
        """At start the supervisor must not import the application: neither does the check."""
        before = set(sys.modules)
        check_options({"handler": "cq_never_imported.jobs:handle", "database": "x.db"})
        assert set(sys.modules) - before == set()

    def test_the_handler_module_is_not_imported(self, root: Path) -> None:
        """Importability is the worker's check: a handler that is not there passes here."""
        check_options({"handler": "no_such_module_cq:f"})
        assert not (root / "var").exists()  # nor is the database created or opened

    def test_the_first_unknown_key_in_name_order(self) -> None:
        """Unknown keys are reported before anything else, the same one every time."""
        with pytest.raises(SourceOptionError) as caught:
            check_options({"zeta": 1, "alpha": 2, "max_attempts": "x"})
        assert (caught.value.key, caught.value.rule) == ("alpha", ConfigRule.UNKNOWN_KEY)
