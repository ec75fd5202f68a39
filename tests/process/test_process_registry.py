"""ProcessManager registration rules of seed 003: naming, batches, limit, disabled, identity."""

from __future__ import annotations

from typing import Any

import pytest

from coretsia.supervisor.process import (
    MAX_WORKERS,
    AsyncOverride,
    DuplicateProcessNameError,
    InvalidProcessNameError,
    ProcessArgumentError,
    ProcessDefinition,
    ProcessError,
    ProcessLimitExceededError,
    ProcessManager,
    ProcessNotFoundError,
    RegistrationClosedError,
)


def work(pool: Any, worker_id: int) -> None:
    """A module-level entry: re-creatable by ``module:qualname``."""


def other_work(pool: Any, worker_id: int) -> None:
    """A second module-level entry."""


class Job:
    """A Process with plain attributes."""

    enabled = True
    enable_async = False

    def execute(self, pool: Any, worker_id: int) -> None:
        """Do nothing."""


class DisabledJob(Job):
    """A Process whose enabled hook is false."""

    enabled = False


class PropertyJob:
    """A Process whose flags are read-only properties, as the protocol allows."""

    @property
    def enabled(self) -> bool:
        return True

    @property
    def enable_async(self) -> bool:
        return False

    def execute(self, pool: Any, worker_id: int) -> None:
        """Do nothing."""


class TestNaming:
    def test_unnamed_entries_take_their_registration_index(self) -> None:
        """An unnamed entry is named by its zero-based registration index, as a string."""
        manager = ProcessManager().add(work).add(other_work).add(Job())
        assert list(manager.all()) == ["0", "1", "2"]

    def test_named_entry_keeps_its_name(self) -> None:
        """A named single registration keeps its name exactly."""
        manager = ProcessManager().add(work, name="maintenance")
        assert list(manager.all()) == ["maintenance"]

    def test_named_batch_expands_with_index_suffixes(self) -> None:
        """A named batch of several workers becomes ``name:0``, ``name:1``, ..."""
        manager = ProcessManager().add_batch(3, work, name="consumer")
        assert list(manager.all()) == ["consumer:0", "consumer:1", "consumer:2"]

    def test_one_worker_batch_keeps_the_name(self) -> None:
        """A batch of one keeps the bare name (no ``:0``)."""
        manager = ProcessManager().add_batch(1, work, name="scheduler")
        assert list(manager.all()) == ["scheduler"]

    def test_unnamed_batch_names_each_worker_by_its_id(self) -> None:
        """An unnamed batch gives each worker its own registration index."""
        manager = ProcessManager().add(work, name="first").add_batch(2, other_work)
        assert list(manager.all()) == ["first", "1", "2"]

    def test_zero_workers_is_a_no_op(self) -> None:
        """A batch of zero adds nothing and takes no index."""
        manager = ProcessManager().add_batch(0, work, name="none").add(other_work)
        assert list(manager.all()) == ["0"]

    def test_names_are_case_sensitive(self) -> None:
        """``Job`` and ``job`` are two names."""
        manager = ProcessManager().add(work, name="job").add(other_work, name="Job")
        assert list(manager.all()) == ["job", "Job"]

    def test_fully_qualified_names_are_kept_whole(self) -> None:
        """A long dotted class name is neither truncated nor normalised."""
        name = "app.very.deeply.nested.package.module." + "VeryLongProcessClassName" * 10
        manager = ProcessManager().add_batch(2, Job(), name=name)
        assert list(manager.all()) == [f"{name}:0", f"{name}:1"]

    def test_all_follows_worker_id_order(self) -> None:
        """all() lists names in worker-id order, mixing named and unnamed entries."""
        manager = ProcessManager().add_batch(2, work, name="a").add(other_work).add(Job(), name="b")
        assert list(manager.all()) == ["a:0", "a:1", "2", "b"]
        assert [e.worker_id for e in manager.entries()] == [0, 1, 2, 3]
        assert [e.name for e in manager.entries()] == list(manager.all())

    @pytest.mark.parametrize("bad", ["", 0, b"name", ["x"], "\ud800"])
    def test_invalid_names_are_refused(self, bad: object) -> None:
        """A name is a non-empty string that UTF-8 can store."""
        manager = ProcessManager()
        with pytest.raises(InvalidProcessNameError):
            manager.add(work, name=bad)  # type: ignore[arg-type]
        assert manager.all() == {}


class TestDuplicatesAndLimit:
    def test_duplicate_name_is_refused(self) -> None:
        """Names are unique across the pool."""
        manager = ProcessManager().add(work, name="job")
        with pytest.raises(DuplicateProcessNameError):
            manager.add(other_work, name="job")
        assert list(manager.all()) == ["job"]

    def test_explicit_name_colliding_with_an_index_name_is_refused(self) -> None:
        """An unnamed entry's index name still has to be unique."""
        manager = ProcessManager().add(work, name="1")
        with pytest.raises(DuplicateProcessNameError):
            manager.add(other_work)  # its index is 1: name "1" is taken
        assert list(manager.all()) == ["1"]

    def test_batch_colliding_on_one_name_adds_nothing(self) -> None:
        """A batch is atomic: one colliding expanded name rejects the whole batch."""
        manager = ProcessManager().add(work, name="pool:2")
        with pytest.raises(DuplicateProcessNameError):
            manager.add_batch(4, other_work, name="pool")
        assert list(manager.all()) == ["pool:2"]

    def test_limit_allows_exactly_1024_workers(self) -> None:
        """1,024 workers in total fit."""
        manager = ProcessManager().add_batch(MAX_WORKERS - 1, work, name="w").add(other_work)
        assert len(manager.all()) == MAX_WORKERS == 1024

    def test_batch_past_the_limit_adds_nothing(self) -> None:
        """A batch that would pass 1,024 workers is refused whole."""
        manager = ProcessManager().add_batch(1000, work, name="w")
        with pytest.raises(ProcessLimitExceededError):
            manager.add_batch(25, other_work, name="x")
        assert len(manager.all()) == 1000
        manager.add_batch(24, other_work, name="x")
        assert len(manager.all()) == MAX_WORKERS

    def test_single_add_past_the_limit_is_refused(self) -> None:
        """The 1,025th worker is refused."""
        manager = ProcessManager().add_batch(MAX_WORKERS, work, name="w")
        with pytest.raises(ProcessLimitExceededError):
            manager.add(other_work)

    @pytest.mark.parametrize("bad", [-1, 1025, True, 1.0, "2", None])
    def test_invalid_worker_counts_are_refused(self, bad: object) -> None:
        """A worker count is an int from 0 to 1,024 (a bool is not a count)."""
        with pytest.raises(ProcessArgumentError):
            ProcessManager().add_batch(bad, work)  # type: ignore[arg-type]


class TestDisabled:
    def test_disabled_task_is_skipped_and_takes_no_index(self) -> None:
        """A disabled entry consumes neither a name nor a worker id."""
        manager = ProcessManager().add(DisabledJob()).add(work)
        assert list(manager.all()) == ["0"]
        assert manager.entries()[0].target.endswith(":work")

    def test_disabled_batch_is_skipped_and_frees_its_name(self) -> None:
        """add_batch skips a disabled task too; its name stays available."""
        manager = ProcessManager().add_batch(3, DisabledJob(), name="job").add(work, name="job")
        assert list(manager.all()) == ["job"]

    def test_disabled_definition_is_skipped(self) -> None:
        """A ProcessDefinition with enabled=False is skipped like any disabled task."""
        manager = ProcessManager().add(ProcessDefinition(work, enabled=False))
        assert manager.all() == {}

    def test_disabled_task_does_not_count_towards_the_limit(self) -> None:
        """Skipped workers never reach the 1,024 limit."""
        manager = ProcessManager().add_batch(MAX_WORKERS, work, name="w")
        manager.add_batch(MAX_WORKERS, DisabledJob(), name="d")
        assert len(manager.all()) == MAX_WORKERS


class TestIdentity:
    def test_task_identity_is_kept_without_override(self) -> None:
        """Without enable_async, get() returns the registered object itself."""
        job = Job()
        manager = ProcessManager().add(job, name="job")
        assert manager.get("job") is job

    def test_get_returns_the_same_object_every_time(self) -> None:
        """Repeated lookups return one object, and all() agrees."""
        manager = ProcessManager().add(work, name="fn")
        first = manager.get("fn")
        assert manager.get("fn") is first
        assert manager.all()["fn"] is first

    def test_batch_shares_one_task(self) -> None:
        """Every worker of a batch runs the same registered task object."""
        job = Job()
        manager = ProcessManager().add_batch(3, job, name="job")
        assert all(task is job for task in manager.all().values())

    def test_callable_is_adapted_to_a_definition(self) -> None:
        """A plain callable becomes a ProcessDefinition with seed 003's defaults."""
        task = ProcessManager().add(work, name="fn").get("fn")
        assert isinstance(task, ProcessDefinition)
        assert task.function is work
        assert task.enabled is True
        assert task.enable_async is False

    def test_definition_identity_is_kept(self) -> None:
        """A ProcessDefinition given directly is kept as it is."""
        definition = ProcessDefinition(work)
        assert ProcessManager().add(definition, name="d").get("d") is definition

    def test_override_adapts_without_mutating(self) -> None:
        """An explicit flag wraps the task; the original keeps its own flag."""

        job = PropertyJob()
        manager = ProcessManager().add(job, enable_async=False, name="job")
        task = manager.get("job")
        assert isinstance(task, AsyncOverride)
        assert task.task is job
        assert task.enable_async is False
        assert task.enabled is True
        assert job.enable_async is False

    def test_override_on_a_definition_leaves_it_unchanged(self) -> None:
        """An override on a given ProcessDefinition does not change that definition."""
        definition = ProcessDefinition(work)
        task = ProcessManager().add(definition, enable_async=False, name="d").get("d")
        assert task is not definition
        assert isinstance(task, AsyncOverride)
        assert task.task is definition

    def test_override_wrapper_delegates_execute(self) -> None:
        """The wrapper runs the original task's execute."""
        calls: list[tuple[object, int]] = []

        class Recording(Job):
            def execute(self, pool: Any, worker_id: int) -> None:
                calls.append((pool, worker_id))

        wrapper = AsyncOverride(Recording(), enable_async=False)
        wrapper.execute("pool", 7)
        assert calls == [("pool", 7)]

    def test_copying_registrations_keeps_the_effective_flag(self) -> None:
        """Registering get()'s result elsewhere carries the override along (seed 003)."""
        source = ProcessManager().add(PropertyJob(), enable_async=False, name="job")
        copy = ProcessManager()
        for name, task in source.all().items():
            copy.add(task, name=name)
        assert copy.get("job") is source.get("job")
        assert copy.get("job").enable_async is False
        assert copy.entries()[0].target == source.entries()[0].target

    def test_entries_are_read_only(self) -> None:
        """The records entries() returns cannot be changed behind the registry's back."""
        entry = ProcessManager().add(work, name="job").entries()[0]
        with pytest.raises(AttributeError):
            entry.name = "other"  # type: ignore[misc]

    def test_get_missing_name_raises_lookup_error(self) -> None:
        """A missing name raises ProcessNotFoundError, a LookupError and ProcessError."""
        manager = ProcessManager().add(work, name="job")
        with pytest.raises(ProcessNotFoundError) as caught:
            manager.get("other")
        assert isinstance(caught.value, LookupError)
        assert isinstance(caught.value, ProcessError)
        with pytest.raises(LookupError):
            manager.get(3)  # type: ignore[arg-type]

    def test_has_reports_registration_only(self) -> None:
        """has() is true for registered names and false otherwise (never raises)."""
        manager = ProcessManager().add_batch(2, work, name="job")
        assert manager.has("job:0")
        assert manager.has("job:1")
        assert not manager.has("job")
        assert not manager.has("JOB:0")
        assert not manager.has(0)  # type: ignore[arg-type]

    def test_all_is_a_copy(self) -> None:
        """Changing the dict all() returned does not change the registry."""
        manager = ProcessManager().add(work, name="job")
        manager.all().clear()
        assert manager.has("job")

    def test_add_and_add_batch_chain(self) -> None:
        """add, add_batch and the setters return the manager."""
        manager = ProcessManager()
        assert manager.add(work) is manager
        assert manager.add_batch(0, work) is manager
        assert manager.set_ipc_type("unixsock") is manager
        assert manager.set_msg_queue_key(5) is manager


class TestSettings:
    def test_defaults(self) -> None:
        """IPC defaults to none with a private queue key 0."""
        manager = ProcessManager()
        assert manager.get_ipc_type() == "none"
        assert manager.get_msg_queue_key() == 0

    @pytest.mark.parametrize("ipc_type", ["none", "unixsock", "msgqueue"])
    def test_supported_ipc_types(self, ipc_type: str) -> None:
        """The three supported modes are accepted by the setter and the constructor."""
        assert ProcessManager().set_ipc_type(ipc_type).get_ipc_type() == ipc_type
        assert ProcessManager(ipc_type=ipc_type).get_ipc_type() == ipc_type

    def test_socket_ipc_is_refused_with_its_reason(self) -> None:
        """``socket`` is refused, saying why; the setting is unchanged."""
        manager = ProcessManager()
        with pytest.raises(ProcessArgumentError, match="socket IPC type is not supported"):
            manager.set_ipc_type("socket")
        with pytest.raises(ProcessArgumentError, match="socket"):
            ProcessManager(ipc_type="socket")
        assert manager.get_ipc_type() == "none"

    @pytest.mark.parametrize("bad", ["NONE", "pipe", "", 1, None])
    def test_unknown_ipc_types_are_refused(self, bad: object) -> None:
        """Anything else is refused without echoing the value."""
        with pytest.raises(ProcessArgumentError) as caught:
            ProcessManager().set_ipc_type(bad)  # type: ignore[arg-type]
        assert str(caught.value) == "the IPC type must be one of none, unixsock, msgqueue"

    @pytest.mark.parametrize("key", [0, 1, 0x1234, 2**31 - 1])
    def test_msg_queue_keys(self, key: int) -> None:
        """Keys from 0 (private) to the largest positive key_t are accepted."""
        assert ProcessManager().set_msg_queue_key(key).get_msg_queue_key() == key
        assert ProcessManager(msg_queue_key=key).get_msg_queue_key() == key

    @pytest.mark.parametrize("bad", [-1, 2**31, True, 1.5, "1"])
    def test_invalid_msg_queue_keys_are_refused(self, bad: object) -> None:
        """A key is a non-negative int that fits key_t; bools are not keys."""
        with pytest.raises(ProcessArgumentError):
            ProcessManager().set_msg_queue_key(bad)  # type: ignore[arg-type]

    @pytest.mark.parametrize("bad", [0, 1, "true", "none"])
    def test_invalid_override_flags_are_refused(self, bad: object) -> None:
        """enable_async is None or a bool, nothing truthy."""
        with pytest.raises(ProcessArgumentError):
            ProcessManager().add(work, enable_async=bad)  # type: ignore[arg-type]


class TestClosedRegistration:
    def test_open_until_a_start_attempt(self) -> None:
        """A new manager is open; closing is what the first start attempt does."""
        manager = ProcessManager()
        seen = [manager.closed]
        manager.registry.close()
        seen.append(manager.closed)
        manager.registry.close()
        seen.append(manager.closed)
        assert seen == [False, True, True]

    @pytest.mark.parametrize(
        "call",
        [
            lambda m: m.add(other_work),
            lambda m: m.add_batch(2, other_work, name="x"),
            lambda m: m.add_batch(0, other_work),
            lambda m: m.set_ipc_type("unixsock"),
            lambda m: m.set_msg_queue_key(1),
        ],
        ids=["add", "add_batch", "add_batch_zero", "set_ipc_type", "set_msg_queue_key"],
    )
    def test_registration_and_settings_refused_after_close(self, call: Any) -> None:
        """Every registration and setter is refused once closed; nothing changes."""
        manager = ProcessManager().add(work, name="job")
        manager.registry.close()
        with pytest.raises(RegistrationClosedError):
            call(manager)
        assert list(manager.all()) == ["job"]
        assert manager.get_ipc_type() == "none"
        assert manager.get_msg_queue_key() == 0

    def test_queries_still_work_after_close(self) -> None:
        """Registry queries stay available after close (seed 003)."""
        manager = ProcessManager().add(work, name="job")
        manager.registry.close()
        assert manager.has("job")
        assert manager.get("job") is manager.all()["job"]
