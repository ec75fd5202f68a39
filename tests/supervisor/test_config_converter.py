"""The strict cattrs converter that structures the configuration tree: nothing coerced, no
unknown key in any table, the shape reported before values, and no error chained to what
cattrs saw.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from config_files import SECRET, assert_no_secret, config_error

from coretsia.worker_protocol.catalogue import ConfigRule


class TestConverterStrictness:
    """The cattrs converter: nothing coerced, no unknown key, in every table."""

    @pytest.mark.parametrize(
        ("body", "key"),
        [
            ("[worker]\nworkers = true", "worker.workers"),
            ("[worker]\nworkers = 4.0", "worker.workers"),
            ("[worker]\ntask_source = true", "worker.task_source"),
            ("[worker]\napp_path = 'src'", "worker.app_path"),  # never split into characters
            ("[worker]\ndriver = false", "worker.driver"),
            ("[worker]\nsource_options = 1", "worker.source_options"),
            ("[worker.source_options]\nsize = 1.5", "worker.source_options.size"),
            ("[worker.hooks]\nbefore = [true]", "worker.hooks.before[0]"),
            ("[worker]\nhooks = ['a:b']", "worker.hooks"),
            ("[worker.control]\ntransport = 1", "worker.control.transport"),
            ("[worker.tcp]\nport = true", "worker.tcp.port"),
            ("[worker.tcp]\nhost = true", "worker.tcp.host"),
            ("[worker]\nsocket_path = false", "worker.socket_path"),
            ("[worker]\nstop_timeout_ms = true", "worker.stop_timeout_ms"),
            ("[worker]\ndebug = 0", "worker.debug"),
            ("[worker]\nmetrics_port = false", "worker.metrics_port"),
            ("[worker]\nmetrics_host = 2130706433", "worker.metrics_host"),
            ("[worker]\nmsg_queue_key = true", "worker.msg_queue_key"),
            ("[worker]\nevent_loop = ['trio']", "worker.event_loop"),
            ("[worker]\nprocess_modules = 'jobs'", "worker.process_modules"),
            ("[worker]\nrestart_intensity = 1.0", "worker.restart_intensity"),
            ("[[process]]\ntarget = 'jobs:run'\nworkers = true", "process[0].workers"),
            ("[[process]]\ntarget = 'jobs:run'\nenable_async = 0", "process[0].enable_async"),
            ("[[process]]\ntarget = 'jobs:run'\nname = 1", "process[0].name"),
            ("[[process]]\ntarget = ['jobs:run']", "process[0].target"),
        ],
    )
    def test_a_wrong_type_in_each_table(self, tmp_path: Path, body: str, key: str) -> None:
        """A boolean is not an integer, an integer not a boolean, a string not an array."""
        error = config_error(tmp_path, body + "\n")
        assert (error.key, error.rule) == (key, ConfigRule.WRONG_TYPE)

    @pytest.mark.parametrize(
        ("body", "key"),
        [
            ("[worker]\npaths = {}", "worker.paths"),  # the records' groups are not keys
            ("[worker]\nbudgets = 1", "worker.budgets"),
            ("[worker]\nentries = []", "worker.entries"),
            ("[worker]\nworker = {}", "worker.worker"),
            ("[worker.hooks]\nbefore = []\nduring = []", "worker.hooks.during"),
            ("[worker.tcp]\nport = 1\n[worker.tcp.extra]", "worker.tcp.extra"),
            ("[[process]]\ntarget = 'jobs:run'\nindex = 0", "process[0].index"),
            ("entries = []", "entries"),
        ],
    )
    def test_an_unknown_key_in_each_table(self, tmp_path: Path, body: str, key: str) -> None:
        error = config_error(tmp_path, body + "\n")
        assert (error.key, error.rule) == (key, ConfigRule.UNKNOWN_KEY)

    def test_the_shape_comes_before_values(self, tmp_path: Path) -> None:
        """Unknown keys and tables that are not tables, anywhere, before any value."""
        error = config_error(tmp_path, "[worker]\nworkers = '4'\n[worker.tcp]\nbind = 1\n")
        assert (error.key, error.rule) == ("worker.tcp.bind", ConfigRule.UNKNOWN_KEY)
        error = config_error(tmp_path, "[worker]\nworkers = -1\ncontrol = 'unix'\n")
        assert (error.key, error.rule) == ("worker.control", ConfigRule.WRONG_TYPE)
        body = "[worker]\nworkers = -1\n[[process]]\ntarget = 'a:b'\n[[process]]\nx = 1\n"
        error = config_error(tmp_path, body)
        assert (error.key, error.rule) == ("process[1].x", ConfigRule.UNKNOWN_KEY)

    def test_a_group_reports_its_types_before_its_values(self, tmp_path: Path) -> None:
        error = config_error(tmp_path, "[worker.tcp]\nhost = 'localhost'\nport = '1'\n")
        assert (error.key, error.rule) == ("worker.tcp.port", ConfigRule.WRONG_TYPE)

    def test_groups_follow_the_tree(self, tmp_path: Path) -> None:
        """The pool's keys, then the subtables, paths, budgets, observability, processes."""
        body = "[worker]\nmsg_queue_key = -1\nmetrics_port = -1\nstop_timeout_ms = 0\n"
        assert config_error(tmp_path, body).key == "worker.stop_timeout_ms"
        body = "[worker]\nmsg_queue_key = -1\nmetrics_port = -1\n"
        assert config_error(tmp_path, body).key == "worker.metrics_port"
        body = "[worker]\nstop_timeout_ms = 0\n[worker.tcp]\nport = 0\n"
        assert config_error(tmp_path, body).key == "worker.tcp.port"

    def test_a_required_process_target_is_reported_with_other_errors(self, tmp_path: Path) -> None:
        error = config_error(tmp_path, "[[process]]\nname = 'a'\nworkers = 'x'\n")
        assert (error.key, error.rule) == ("process[0].target", ConfigRule.WRONG_TYPE)

    def test_no_error_chains_to_what_cattrs_saw(self, tmp_path: Path) -> None:
        """The error is raised afresh: no cattrs group, note or hook frame holding a value."""
        error = config_error(tmp_path, f"[worker.tcp]\nport = '{SECRET}'\n")
        assert error.__cause__ is None
        assert error.__context__ is None
        assert not getattr(error, "__notes__", None)
        assert_no_secret(error)
