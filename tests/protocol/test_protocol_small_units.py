"""The small pure units: endpoint hash, safe paths, lifecycle paths and the task-source SPI."""

from __future__ import annotations

import pickle
import re

import pytest

from coretsia.worker_protocol.catalogue import ConfigRule, SourceFault
from coretsia.worker_protocol.endpoint import ENDPOINT_KEY_BYTES, endpoint_hash
from coretsia.worker_protocol.lifecycle import (
    CANONICAL_PATHS,
    LOCATOR_PATH,
    LOCATOR_TMP_PATH,
    LOCK_PATH,
    RUNTIME_DIR,
)
from coretsia.worker_protocol.paths import MAX_PATH_CHARS, is_safe_relative_path, paths_overlap
from coretsia.worker_protocol.task_source import (
    Task,
    TaskSource,
    TaskSourceContext,
    TaskSourceOptionError,
    TaskSourceUnavailableError,
)
from coretsia.worker_protocol.vocabulary import Transport

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))


class TestEndpointHash:
    def test_deterministic(self) -> None:
        """The same key, transport and address always hash the same."""
        first = endpoint_hash(KEY, Transport.UNIX, "var/tmp/worker.sock")
        assert endpoint_hash(KEY, Transport.UNIX, "var/tmp/worker.sock") == first

    def test_shape_is_32_lowercase_hex(self) -> None:
        """The hash is 32 lowercase hexadecimal characters."""
        value = endpoint_hash(KEY, Transport.TCP, "127.0.0.1:9327")
        assert re.fullmatch(r"[0-9a-f]{32}", value)

    def test_differs_by_key(self) -> None:
        """Another root's key gives another hash for the same endpoint."""
        address = "var/tmp/worker.sock"
        assert endpoint_hash(KEY, Transport.UNIX, address) != endpoint_hash(
            OTHER_KEY, Transport.UNIX, address
        )

    def test_differs_by_transport(self) -> None:
        """The same address string under another transport hashes differently."""
        assert endpoint_hash(KEY, Transport.UNIX, "x") != endpoint_hash(KEY, Transport.TCP, "x")

    def test_differs_by_address(self) -> None:
        """Neighbouring ports hash differently."""
        assert endpoint_hash(KEY, Transport.TCP, "127.0.0.1:9327") != endpoint_hash(
            KEY, Transport.TCP, "127.0.0.1:9328"
        )

    def test_does_not_contain_the_address(self) -> None:
        """The hash reveals nothing of the port or path it identifies."""
        value = endpoint_hash(KEY, Transport.TCP, "127.0.0.1:9327")
        assert "9327" not in value

    @pytest.mark.parametrize("size", [0, 16, 31, 33])
    def test_rejects_a_key_of_the_wrong_size(self, size: int) -> None:
        """A key that is not exactly 32 bytes is a ValueError, without echoing the key."""
        key = b"k" * size
        with pytest.raises(ValueError) as info:
            endpoint_hash(key, Transport.UNIX, "var/tmp/worker.sock")
        if key:
            assert key.decode() not in str(info.value)

    def test_key_size_constant(self) -> None:
        """The per-root key is 32 bytes."""
        assert ENDPOINT_KEY_BYTES == 32


class TestSafeRelativePath:
    @pytest.mark.parametrize(
        "path", ["var/tmp/worker.sock", "worker.sock", "var/a-b_c.d/x", "var/.hidden", "v/1"]
    )
    def test_accepts_plain_relative_paths(self, path: str) -> None:
        """Plain root-relative paths with ``/`` separators are safe."""
        assert is_safe_relative_path(path)

    @pytest.mark.parametrize(
        ("path", "rule"),
        [
            ("", "empty"),
            ("/abs", "absolute"),
            ("a/../b", "parent segment"),
            ("..", "parent only"),
            ("./a", "current segment"),
            ("a/.", "trailing current segment"),
            ("a//b", "empty segment"),
            ("a/", "trailing slash"),
            ("a\\b", "backslash"),
            ("a b", "space"),
            ("a\tb", "tab"),
            ("a\nb", "newline"),
            ("x\x01", "control character"),
            ("x\x7f", "delete character"),
            ("a\u00a0b", "non-breaking space"),
            ("php://x", "stream wrapper"),
            ("file:x", "scheme-like first segment"),
            ("@x/y", "leading at-sign segment"),
            ("a/@b", "inner at-sign segment"),
            ("C:/x", "drive letter"),
            ("c:x", "drive-relative"),
            ("a" * (MAX_PATH_CHARS + 1), "too long"),
        ],
    )
    def test_rejects_each_seed_rule(self, path: str, rule: str) -> None:
        """Each unsafe shape of seed 000's path rules is refused."""
        assert not is_safe_relative_path(path), rule

    def test_accepts_the_longest_path(self) -> None:
        """A path of exactly MAX_PATH_CHARS is accepted."""
        assert is_safe_relative_path("a" * MAX_PATH_CHARS)

    def test_colon_after_the_first_segment_is_allowed(self) -> None:
        """Only the first segment may not carry a colon (a drive or scheme)."""
        assert is_safe_relative_path("var/a:b")


class TestPathsOverlap:
    def test_equal_paths_overlap(self) -> None:
        """A path overlaps itself."""
        assert paths_overlap("var/tmp", "var/tmp")

    def test_parent_and_child_overlap(self) -> None:
        """A directory overlaps a path inside it, in either order."""
        assert paths_overlap("var/tmp", "var/tmp/worker.lock")
        assert paths_overlap("var/tmp/worker.lock", "var/tmp")

    def test_siblings_do_not_overlap(self) -> None:
        """Two sibling paths do not overlap."""
        assert not paths_overlap("var/tmp/a", "var/tmp/b")

    def test_shared_prefix_is_not_overlap(self) -> None:
        """``var/tmp`` and ``var/tmp2`` only share characters, not a directory."""
        assert not paths_overlap("var/tmp", "var/tmp2")


class TestLifecyclePaths:
    def test_canonical_paths_are_safe(self) -> None:
        """Every canonical lifecycle path passes the safe-path rule."""
        assert all(is_safe_relative_path(path) for path in CANONICAL_PATHS)

    def test_seed_paths(self) -> None:
        """The lock, locator and its temp file are seed 000's canonical paths."""
        assert LOCK_PATH == "var/tmp/worker.lock"
        assert LOCATOR_PATH == "var/tmp/worker.lifecycle.json"
        assert LOCATOR_TMP_PATH == "var/tmp/worker.lifecycle.json.tmp"

    def test_lifecycle_files_live_in_the_runtime_dir(self) -> None:
        """The lock and locator live under var/tmp."""
        assert paths_overlap(RUNTIME_DIR, LOCK_PATH)
        assert paths_overlap(RUNTIME_DIR, LOCATOR_PATH)


class GoodTask:
    def run(self) -> object:
        return 1

    def complete(self, result: object) -> None:
        pass

    def fail(self, error: BaseException) -> None:
        pass


class GoodSource:
    def assert_ready(self) -> None:
        pass

    def receive(self) -> GoodTask | None:
        return None


class NoReceive:
    def assert_ready(self) -> None:
        pass


class GoodContext:
    task_type = "queue"
    slot = 0
    generation = "0123456789abcdef-000001-0123456789abcdef"
    options: dict[str, object] = {}  # noqa: RUF012 - a read-only stand-in
    stopping = False

    def stop_fileno(self) -> int:
        return 0

    def wait_for_stop(self, timeout: float | None) -> bool:
        return False

    def report_unavailable(self, fault: SourceFault) -> None:
        pass

    def report_available(self) -> None:
        pass

    def report_lease_lost(self) -> None:
        pass


class TestTaskSourceProtocols:
    def test_minimal_source_is_a_task_source(self) -> None:
        """A class with assert_ready and receive satisfies TaskSource at runtime."""
        assert isinstance(GoodSource(), TaskSource)

    def test_object_without_receive_is_not_a_task_source(self) -> None:
        """An object lacking receive is not a TaskSource."""
        assert not isinstance(NoReceive(), TaskSource)

    def test_minimal_task_is_a_task(self) -> None:
        """A class with run, complete and fail satisfies Task at runtime."""
        assert isinstance(GoodTask(), Task)

    def test_source_is_not_a_task(self) -> None:
        """A task source without run/complete/fail is not a Task."""
        assert not isinstance(GoodSource(), Task)

    def test_minimal_context_is_a_context(self) -> None:
        """An object with the context's members satisfies TaskSourceContext."""
        assert isinstance(GoodContext(), TaskSourceContext)

    def test_plain_object_is_nothing(self) -> None:
        """A bare object satisfies none of the Protocols."""
        assert not isinstance(object(), (TaskSource, Task, TaskSourceContext))


class TestTaskSourceUnavailableError:
    def test_fault_and_message(self) -> None:
        """A ConnectionError with a fault of the closed vocabulary (its token accepted)."""
        error = TaskSourceUnavailableError("missing-database")
        assert error.fault is SourceFault.MISSING_DATABASE
        assert isinstance(error, ConnectionError)
        assert str(error) == "the task source is unavailable: missing-database"
        assert str(TaskSourceUnavailableError("permission", "no grant")) == "no grant"

    def test_free_text_is_not_a_fault(self) -> None:
        with pytest.raises(ValueError, match="is not a valid SourceFault"):
            TaskSourceUnavailableError("host db.internal refused")

    def test_pickles(self) -> None:
        clone = pickle.loads(pickle.dumps(TaskSourceUnavailableError("unreachable", "gone")))
        assert (type(clone), clone.fault, str(clone)) == (
            TaskSourceUnavailableError,
            SourceFault.UNREACHABLE,
            "gone",
        )


class TestTaskSourceOptionError:
    def test_key_and_rule(self) -> None:
        """It carries the option's key and a configuration rule, and is a ValueError."""
        error = TaskSourceOptionError("handler", ConfigRule.REQUIRED)
        assert (error.key, error.rule) == ("handler", ConfigRule.REQUIRED)
        assert isinstance(error, ValueError)

    def test_rule_token_becomes_the_member(self) -> None:
        """A source may pass the rule's token without importing the catalogue."""
        assert TaskSourceOptionError("n", "wrong-type").rule is ConfigRule.WRONG_TYPE

    def test_message_is_the_dotted_key_and_the_token(self) -> None:
        """``str()`` names the key under its table and the rule, nothing else."""
        error = TaskSourceOptionError("max_attempts", ConfigRule.OUT_OF_RANGE)
        assert str(error) == "worker.source_options.max_attempts: out-of-range"

    def test_a_phrase_is_not_a_rule(self) -> None:
        """Free text (which could carry a value) is refused: the source's programming error."""
        with pytest.raises(ValueError, match="is not a valid ConfigRule"):
            TaskSourceOptionError("handler", "must be a string, got 's3cret'")

    def test_pickles(self) -> None:
        """Key and rule survive pickling (the message is rebuilt, not carried)."""
        clone = pickle.loads(pickle.dumps(TaskSourceOptionError("database", "unsafe-path")))
        assert (type(clone), clone.key, clone.rule) == (
            TaskSourceOptionError,
            "database",
            ConfigRule.UNSAFE_PATH,
        )
