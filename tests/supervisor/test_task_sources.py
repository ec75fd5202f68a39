"""A task source's ``check_options`` at ``start``: its outcomes, and what it never imports.

The real-process side (exit status, stderr, nothing spawned) is in
``tests/lifecycle/test_lifecycle_source_hooks.py::TestOptionsCheckedAtStart``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import pytest

from coretsia.supervisor.config import parse_config
from coretsia.supervisor.daemon.task_sources import check_source_options, resolve_task_source
from coretsia.worker_protocol.catalogue import ConfigRule, Reason
from coretsia.worker_protocol.exceptions import WorkerConfigError, WorkerStartFailedError
from coretsia.worker_protocol.exit_codes import ExitCode
from coretsia.worker_protocol.task_source import TaskSourceOptionError

SECRET = "s3cret-value"
APP_MODULE = "cq_app_never_imported"


@pytest.fixture
def importable_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """APP_MODULE as a real module on sys.path: importing it would succeed (and show)."""
    (tmp_path / f"{APP_MODULE}.py").write_text(
        "def handle(p):\n    return p\nmake_source = handle\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, APP_MODULE, raising=False)
    return APP_MODULE


def _factory_checking(check: object) -> object:
    def factory(context: object) -> object:
        raise AssertionError("the supervisor never builds a source")

    factory.check_options = check  # type: ignore[attr-defined]
    return factory


class TestCheckSourceOptions:
    def test_a_factory_without_a_check_is_accepted(self) -> None:
        """The check is optional: without one, nothing is checked at start."""
        check_source_options(object(), {"anything": SECRET})

    def test_the_check_sees_the_options_read_only(self) -> None:
        """It gets the options as they will reach the workers, and cannot change them."""
        seen: list[Mapping[str, object]] = []
        check_source_options(_factory_checking(seen.append), {"handler": "a:b", "n": 3})
        (options,) = seen
        assert isinstance(options, MappingProxyType)
        assert dict(options) == {"handler": "a:b", "n": 3}

    def test_an_option_error_is_a_config_error(self) -> None:
        """``TaskSourceOptionError`` names ``worker.source_options.<key>`` and the rule, exit 6."""

        def check(options: Mapping[str, object]) -> None:
            raise TaskSourceOptionError("max_attempts", ConfigRule.WRONG_TYPE)

        with pytest.raises(WorkerConfigError) as caught:
            check_source_options(_factory_checking(check), {"max_attempts": "3"})
        error = caught.value
        assert (error.key, error.rule) == ("worker.source_options.max_attempts", "wrong-type")
        assert error.exit_code is ExitCode.CONFIG_INVALID

    def test_an_unprintable_key_is_masked(self) -> None:
        """A source's key goes through the config error's own key rule."""

        def check(options: Mapping[str, object]) -> None:
            raise TaskSourceOptionError(f"{SECRET} with spaces", "unknown-key")

        with pytest.raises(WorkerConfigError) as caught:
            check_source_options(_factory_checking(check), {})
        assert caught.value.key == "<unprintable>"

    @pytest.mark.parametrize(
        "failure",
        [RuntimeError(f"saw {SECRET}"), KeyError(SECRET), ValueError(f"rule {SECRET}")],
        ids=["runtime-error", "key-error", "plain-value-error"],
    )
    def test_anything_else_is_an_unresolvable_source(self, failure: Exception) -> None:
        """A check that breaks is the source's fault: start-failed, the message kept out."""

        def check(options: Mapping[str, object]) -> None:
            raise failure

        with pytest.raises(WorkerStartFailedError) as caught:
            check_source_options(_factory_checking(check), {"x": SECRET})
        assert caught.value.reason is Reason.TASK_SOURCE_UNRESOLVABLE
        assert caught.value.__cause__ is failure  # for CORETSIA_DEBUG=1 only
        assert SECRET not in str(caught.value) + repr(caught.value)

    def test_a_check_with_a_free_text_rule_is_broken(self) -> None:
        """A rule that is no ConfigRule token fails the source, not the configuration."""

        def check(options: Mapping[str, object]) -> None:
            raise TaskSourceOptionError("handler", f"must not be {SECRET}")

        with pytest.raises(WorkerStartFailedError) as caught:
            check_source_options(_factory_checking(check), {})
        assert caught.value.reason is Reason.TASK_SOURCE_UNRESOLVABLE

    def test_a_check_that_is_not_callable_is_broken(self) -> None:
        with pytest.raises(WorkerStartFailedError) as caught:
            check_source_options(_factory_checking("not callable"), {})
        assert caught.value.reason is Reason.TASK_SOURCE_UNRESOLVABLE


class TestResolveChecksInstalledSources:
    def test_the_sqlite_source_is_checked_without_importing_the_handler(
        self, importable_app: str
    ) -> None:
        """The installed sqlite source's check runs; the application is not imported."""
        config = parse_config(
            {
                "task_source": "sqlite",
                "source_options": {"handler": f"{APP_MODULE}:handle"},
            }
        )
        assert resolve_task_source(config) == "coretsia.sources.sqlite_source:make_source"
        assert APP_MODULE not in sys.modules

    def test_the_sqlite_source_without_a_handler(self) -> None:
        config = parse_config({"task_source": "sqlite"})
        with pytest.raises(WorkerConfigError) as caught:
            resolve_task_source(config)
        assert (caught.value.key, caught.value.rule) == (
            "worker.source_options.handler",
            ConfigRule.REQUIRED,
        )

    def test_an_application_factory_is_not_imported(self, importable_app: str) -> None:
        """``module:factory`` is the workers' to import, and its options theirs to check."""
        config = parse_config(
            {"task_source": f"{APP_MODULE}:make_source", "source_options": {"x": SECRET}}
        )
        assert resolve_task_source(config) == f"{APP_MODULE}:make_source"
        assert APP_MODULE not in sys.modules
