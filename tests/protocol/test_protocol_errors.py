"""The typed exceptions: each class owns one code and subclasses its stdlib type, its message
is exactly ``CODE: reason-token`` and never a wrapped exception's text, a config error's key
is shown only when plain, and every error pickles back whole, without its cause.
"""

from __future__ import annotations

import pickle

import pytest

from coretsia.worker_protocol.catalogue import (
    EXIT_CODES,
    REASON_CODES,
    ConfigRule,
    ErrorCode,
    Reason,
)
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    RuntimeEntrypointError,
    WorkerAlreadyRunningError,
    WorkerCommunicationFailedError,
    WorkerConfigError,
    WorkerError,
    WorkerForkFailedError,
    WorkerLifecycleFailedError,
    WorkerNotRunningError,
    WorkerStartFailedError,
    error_for,
)

SECRET = "sk_live_TOPSECRET_0451"

#: The class that owns each code, with the stdlib type it must also be.
CLASSES: list[tuple[type[WorkerError], ErrorCode, type[BaseException]]] = [
    (WorkerStartFailedError, ErrorCode.START_FAILED, RuntimeError),
    (WorkerLifecycleFailedError, ErrorCode.LIFECYCLE_FAILED, RuntimeError),
    (WorkerForkFailedError, ErrorCode.FORK_FAILED, ChildProcessError),
    (WorkerAlreadyRunningError, ErrorCode.ALREADY_RUNNING, RuntimeError),
    (WorkerCommunicationFailedError, ErrorCode.COMMUNICATION_FAILED, ConnectionError),
    (WorkerNotRunningError, ErrorCode.NOT_RUNNING, ProcessLookupError),
    (WorkerConfigError, ErrorCode.CONFIG_INVALID, ValueError),
    (LocalProtocolError, ErrorCode.PROTOCOL_VIOLATION, ValueError),
    (RemoteProtocolError, ErrorCode.PROTOCOL_VIOLATION, ValueError),
    (RuntimeEntrypointError, ErrorCode.RUNTIME_ENTRYPOINT_FAILED, LookupError),
]
CLASS_IDS = [cls.__name__ for cls, _, _ in CLASSES]
PLAIN_CODES = {
    ErrorCode.START_FAILED,
    ErrorCode.LIFECYCLE_FAILED,
    ErrorCode.FORK_FAILED,
    ErrorCode.ALREADY_RUNNING,
    ErrorCode.COMMUNICATION_FAILED,
    ErrorCode.NOT_RUNNING,
}


def build(reason: Reason) -> WorkerError:
    """An instance of the class that owns ``reason``'s code, carrying that reason."""
    code = REASON_CODES[reason]
    if code is ErrorCode.CONFIG_INVALID:
        return WorkerConfigError("worker.count", ConfigRule.OUT_OF_RANGE)
    if code is ErrorCode.PROTOCOL_VIOLATION:
        return RemoteProtocolError(reason, "$.pid")
    if code is ErrorCode.RUNTIME_ENTRYPOINT_FAILED:
        return RuntimeEntrypointError("http.worker")
    cls = next(c for c, owned, _ in CLASSES if owned is code)
    return cls(reason)


def shows(error: BaseException, text: str) -> bool:
    """True when ``text`` appears in the error's str, repr or args."""
    return text in str(error) or text in repr(error) or text in repr(error.args)


def raise_wrapping(reason: Reason) -> None:
    """Raise the error of ``reason`` from an OSError whose message holds a secret path."""
    try:
        raise OSError(13, SECRET, "/home/alice/.secret")
    except OSError as inner:
        raise build(reason) from inner


def raise_while_handling() -> None:
    """Raise a lifecycle error while a KeyError holding a secret is being handled."""
    try:
        raise KeyError(SECRET)
    except KeyError:
        raise WorkerLifecycleFailedError(Reason.CHILD_EXITED)  # noqa: B904


class TestMessages:
    def test_each_class_str_is_code_colon_reason(self) -> None:
        """For every reason, the owning class's str() is exactly ``CODE: reason-token``."""
        wrong = {
            reason: str(build(reason))
            for reason in Reason
            if str(build(reason)) != f"{REASON_CODES[reason].value}: {reason.value}"
        }
        assert wrong == {}

    def test_error_for_str_is_code_colon_reason(self) -> None:
        """error_for builds the owning class, whose str() is ``CODE: reason-token``."""
        for reason in (r for r in Reason if REASON_CODES[r] in PLAIN_CODES):
            error = error_for(reason)
            assert str(error) == f"{REASON_CODES[reason].value}: {reason.value}"
            assert error.reason is reason
            assert error.code is REASON_CODES[reason]

    def test_error_for_maps_config_and_protocol_to_communication(self) -> None:
        """A config or protocol reason arriving as data becomes a communication failure."""
        for reason in (r for r in Reason if REASON_CODES[r] not in PLAIN_CODES):
            error = error_for(reason)
            assert type(error) is WorkerCommunicationFailedError, reason
            assert str(error) == (
                "CORETSIA_WORKER_COMMUNICATION_FAILED: worker-communication-failed"
            )

    def test_args_hold_only_the_message(self) -> None:
        """``args`` is the single safe message."""
        error = WorkerNotRunningError()
        assert error.args == ("CORETSIA_WORKER_NOT_RUNNING: worker-not-running",)

    @pytest.mark.parametrize(("cls", "code", "base"), CLASSES[:6], ids=CLASS_IDS[:6])
    def test_default_reason_is_the_first_of_its_code(
        self, cls: type[WorkerError], code: ErrorCode, base: type[BaseException]
    ) -> None:
        """With no reason a class uses the catch-all token of its code."""
        error = cls()
        assert error.reason is next(r for r, c in REASON_CODES.items() if c is code)

    def test_reason_of_another_code_is_refused(self) -> None:
        """A reason that belongs to another code is a programming error (ValueError)."""
        with pytest.raises(ValueError) as info:
            WorkerNotRunningError(Reason.FORK_FAILED)
        assert not isinstance(info.value, WorkerError)

    def test_reason_may_be_given_as_its_string(self) -> None:
        """A reason token passed as a plain string is normalised to the enum."""
        error = WorkerStartFailedError("worker-readiness-timeout")  # type: ignore[arg-type]
        assert error.reason is Reason.READINESS_TIMEOUT

    @pytest.mark.parametrize(("cls", "code", "base"), CLASSES, ids=CLASS_IDS)
    def test_exit_code_property(
        self, cls: type[WorkerError], code: ErrorCode, base: type[BaseException]
    ) -> None:
        """Every error knows the exit code of its code."""
        error = build(next(r for r, c in REASON_CODES.items() if c is code))
        assert error.exit_code is EXIT_CODES[code]


class TestWrappedExceptions:
    def test_cause_message_never_leaks(self) -> None:
        """For every reason, a wrapped exception's message is absent from str, repr and args."""
        leaks = []
        for reason in Reason:
            with pytest.raises(WorkerError) as info:
                raise_wrapping(reason)
            assert info.value.__cause__ is not None
            if shows(info.value, SECRET) or shows(info.value, "/home/alice"):
                leaks.append(reason)
        assert leaks == []

    def test_context_message_never_leaks(self) -> None:
        """An exception raised while handling another does not absorb its message."""
        with pytest.raises(WorkerLifecycleFailedError) as info:
            raise_while_handling()
        assert not shows(info.value, SECRET)


class TestClasses:
    @pytest.mark.parametrize(("cls", "code", "base"), CLASSES, ids=CLASS_IDS)
    def test_subclasses_its_stdlib_type(
        self, cls: type[WorkerError], code: ErrorCode, base: type[BaseException]
    ) -> None:
        """Each concrete class is also the closest stdlib exception type."""
        assert issubclass(cls, base)
        assert issubclass(cls, WorkerError)

    @pytest.mark.parametrize(("cls", "code", "base"), CLASSES, ids=CLASS_IDS)
    def test_class_code(
        self, cls: type[WorkerError], code: ErrorCode, base: type[BaseException]
    ) -> None:
        """Each class owns one code."""
        assert cls.code is code

    def test_protocol_error_is_abstract(self) -> None:
        """ProtocolError itself cannot be instantiated."""
        with pytest.raises(TypeError):
            ProtocolError(Reason.FRAME_NOT_JSON)

    def test_protocol_subclasses_share_the_base(self) -> None:
        """Local and remote protocol errors are both ProtocolError."""
        assert issubclass(LocalProtocolError, ProtocolError)
        assert issubclass(RemoteProtocolError, ProtocolError)
        assert not issubclass(LocalProtocolError, RemoteProtocolError)

    def test_protocol_error_path_defaults_to_root(self) -> None:
        """A protocol error without a field path points at the whole frame."""
        assert RemoteProtocolError(Reason.FRAME_NOT_JSON).path == "$"

    def test_protocol_error_refuses_a_non_protocol_reason(self) -> None:
        """A protocol error must carry a protocol-violation token."""
        with pytest.raises(ValueError):
            RemoteProtocolError(Reason.NOT_RUNNING)


class TestConfigError:
    def test_carries_key_and_rule(self) -> None:
        """A config error names the key and the rule it broke."""
        error = WorkerConfigError("worker.control.port", ConfigRule.OUT_OF_RANGE)
        assert error.key == "worker.control.port"
        assert error.rule is ConfigRule.OUT_OF_RANGE
        assert error.reason is Reason.CONFIG_INVALID

    def test_str_has_neither_key_nor_rule(self) -> None:
        """str() stays ``CODE: reason``; key and rule are separate fields."""
        error = WorkerConfigError("worker.count", ConfigRule.WRONG_TYPE)
        assert str(error) == "CORETSIA_WORKER_CONFIG_INVALID: worker-config-invalid"

    @pytest.mark.parametrize(
        "key",
        [
            "worker count",
            "a" * 200,
            SECRET + "=" + SECRET,
            "",
            "worker.\nkey",
            "/etc/passwd",
            "-leading-dash",
            "--",
            "---x",
            "--" + "a" * 65,
            "\u00e9t\u00e9",  # letters, but not ASCII
            "\uff11",  # a digit, but not ASCII
        ],
    )
    def test_unsafe_key_is_unprintable(self, key: str) -> None:
        """A key that is not a short plain name is reported as ``<unprintable>``."""
        error = WorkerConfigError(key, ConfigRule.UNKNOWN_KEY)
        assert error.key == "<unprintable>"
        if key:
            assert not shows(error, key)

    @pytest.mark.parametrize(
        "key",
        ["worker", "worker.task_type", "entries[0].name", "a-b_c.9", "--root", "a" * 64, "_"],
    )
    def test_plain_key_is_kept(self, key: str) -> None:
        """Plain dotted keys, with indexes, are kept as they are."""
        assert WorkerConfigError(key, ConfigRule.UNKNOWN_KEY).key == key

    def test_rule_given_as_string_is_normalised(self) -> None:
        """A rule passed as its string becomes the ConfigRule member."""
        error = WorkerConfigError("worker", "unsafe-path")  # type: ignore[arg-type]
        assert error.rule is ConfigRule.UNSAFE_PATH


class TestPickling:
    def test_round_trip(self) -> None:
        """Every error pickles back to the same class, reason and message."""
        for reason in Reason:
            error = build(reason)
            clone = pickle.loads(pickle.dumps(error))
            assert type(clone) is type(error), reason
            assert clone.reason is error.reason
            assert str(clone) == str(error)
            assert clone.args == error.args

    def test_config_error_keeps_key_and_rule(self) -> None:
        """A pickled config error keeps its key and rule."""
        clone = pickle.loads(pickle.dumps(WorkerConfigError("worker.x", ConfigRule.NOT_TOML)))
        assert (clone.key, clone.rule) == ("worker.x", ConfigRule.NOT_TOML)

    def test_protocol_error_keeps_its_path(self) -> None:
        """A pickled protocol error keeps its field path."""
        clone = pickle.loads(pickle.dumps(LocalProtocolError(Reason.FRAME_WRONG_TYPE, "$.pid")))
        assert clone.path == "$.pid"
        assert type(clone) is LocalProtocolError

    def test_pickle_drops_the_cause(self) -> None:
        """Pickling carries no wrapped exception text across a process boundary."""
        with pytest.raises(WorkerStartFailedError) as info:
            raise WorkerStartFailedError() from RuntimeError(SECRET)
        assert SECRET.encode() not in pickle.dumps(info.value)
