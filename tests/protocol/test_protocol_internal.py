"""The internal frames (guardian and proc-host channels) on the protocol's one strict codec.

They carry no stability promise, but they are held to the same strictness as the public
frames: the coercions a lax converter such as cattrs makes ("5" to 5, "false" to True, a
string to a tuple of characters) are all refused, and every failure is one
RemoteProtocolError that echoes no value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from frame_checks import Codec, echoes, obj_of, reject

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.framing import MAX_FRAME_BYTES
from coretsia.worker_protocol.internal import guardian as g
from coretsia.worker_protocol.internal import proc_host as p
from coretsia.worker_protocol.internal.handshake import check_peer_version
from coretsia.worker_protocol.internal.runtime.exit_kind import ExitKind
from coretsia.worker_protocol.vocabulary import Containment, Driver, ShutdownPhase

SECRET = "sk_live_TOPSECRET_0451"

GUARDIAN_FRAMES: list[Any] = [
    g.Hello(
        peer_version="1.2.3",
        driver=Driver.FORK,
        stop_timeout_ms=10000,
        force_kill_timeout_ms=1000,
        umask=0o022,
        log_json=False,
        containment=Containment.PROCESS,
        root_id="0" * 16,
    ),
    g.Welcome(peer_version="1.2.3", pid=77),
    g.Locked(),
    g.Refused(reason=Reason.ALREADY_RUNNING),
    g.Spawn(slot=0, argv=("python", "-m", "app", "--coretsia-worker-artifact-root=var/g")),
    g.Spawn(slot=3, argv=()),
    g.Spawned(slot=0, pid=1234),
    g.SpawnFailed(slot=1, reason=Reason.FORK_FAILED),
    g.Exited(slot=2, exit_kind=ExitKind.SIGNAL_KILL),
    g.GenerationFailed(reason=Reason.PROCESS_HOST_FAILED),
    g.HostStarted(pid=4321),
    g.Shutdown(),
    g.Phase(phase=ShutdownPhase.TERMINATE, budget_ms=1000),
    g.Drained(clean=True),
    g.Drained(clean=False),
    g.Release(),
    g.Released(),
]
PROC_HOST_FRAMES: list[Any] = [
    p.HostHello(peer_version="1.2.3"),
    g.Welcome(peer_version="1.2.3", pid=77),
    g.Refused(reason=Reason.PEER_VERSION_MISMATCH),
    g.Spawn(slot=0, argv=("python", "worker.py")),
    g.Spawned(slot=0, pid=1234),
    g.SpawnFailed(slot=1, reason=Reason.CHILD_START_FAILED),
    g.Exited(slot=2, exit_kind=ExitKind.EXIT_0),
    p.Signal(slot=2, signal=p.SignalName.TERM),
    p.Signal(slot=2, signal=p.SignalName.KILL),
    p.Quit(),
]

GUARDIAN: Codec = (g.encode_guardian_frame, g.decode_guardian_frame)
PROC_HOST: Codec = (p.encode_proc_host_frame, p.decode_proc_host_frame)
ALL: list[tuple[Codec, Any]] = [(GUARDIAN, f) for f in GUARDIAN_FRAMES] + [
    (PROC_HOST, f) for f in PROC_HOST_FRAMES
]
IDS = [f"guardian-{type(f).__name__}" for f in GUARDIAN_FRAMES] + [
    f"proc-host-{type(f).__name__}" for f in PROC_HOST_FRAMES
]
DECODERS = [g.decode_guardian_frame, p.decode_proc_host_frame]
DECODER_IDS = ["guardian", "proc-host"]


class TestRoundTrip:
    @pytest.mark.parametrize(("codec", "frame"), ALL, ids=IDS)
    def test_frame_round_trips(self, codec: Codec, frame: Any) -> None:
        """Decoding an encoded internal frame gives back an equal frame."""
        assert codec[1](codec[0](frame)) == frame

    @pytest.mark.parametrize(("codec", "frame"), ALL, ids=IDS)
    def test_encoding_is_deterministic_json(self, codec: Codec, frame: Any) -> None:
        """Internal frames are canonical JSON lines too (sorted keys, compact)."""
        data = codec[0](frame)
        canonical = json.dumps(
            json.loads(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        assert data == canonical.encode() + b"\n"

    @pytest.mark.parametrize(("codec", "frame"), ALL, ids=IDS)
    def test_frame_carries_its_tag_and_version(self, codec: Codec, frame: Any) -> None:
        """Every internal frame names its class tag and version 1."""
        obj = obj_of(codec, frame)
        assert obj["type"] == type(frame).TAG
        assert obj["version"] == 1

    def test_every_guardian_class_is_covered(self) -> None:
        """The round-trip list covers every class of the guardian union."""
        assert {type(f) for f in GUARDIAN_FRAMES} == set(g.GuardianFrame.__args__)

    def test_every_proc_host_class_is_covered(self) -> None:
        """The round-trip list covers every class of the proc-host union."""
        assert {type(f) for f in PROC_HOST_FRAMES} == set(p.ProcHostFrame.__args__)

    def test_guardian_only_frame_is_unknown_to_proc_host(self) -> None:
        """A guardian-only frame is an unknown type on the proc-host channel."""
        data = g.encode_guardian_frame(g.Shutdown())
        assert reject(p.decode_proc_host_frame, data).reason is Reason.FRAME_UNKNOWN_TYPE


SPAWN = g.Spawn(slot=1, argv=("a", "b"))
HELLO = g.Hello(
    peer_version="1",
    driver=Driver.PROC,
    stop_timeout_ms=1,
    force_kill_timeout_ms=1,
    umask=0,
    log_json=True,
    containment=Containment.PROCESS,
    root_id="0" * 16,
)


class TestStrictness:
    @pytest.mark.parametrize(("codec", "frame"), ALL, ids=IDS)
    def test_extra_key(self, codec: Codec, frame: Any) -> None:
        """An extra key is worker-frame-unknown-key, and the key is not echoed."""
        obj = obj_of(codec, frame)
        obj[SECRET] = 1
        error = reject(codec[1], obj)
        assert error.reason is Reason.FRAME_UNKNOWN_KEY
        assert not echoes(error, SECRET)

    @pytest.mark.parametrize(("codec", "frame"), ALL, ids=IDS)
    def test_missing_key(self, codec: Codec, frame: Any) -> None:
        """Dropping any one field is worker-frame-missing-key."""
        for key in obj_of(codec, frame):
            if key in ("version", "type"):
                continue
            obj = obj_of(codec, frame)
            del obj[key]
            assert reject(codec[1], obj).reason is Reason.FRAME_MISSING_KEY, key

    @pytest.mark.parametrize("bad", ["5", True, 5.9, 5.0, None, [5]])
    def test_int_field_accepts_only_int(self, bad: Any) -> None:
        """``"5"``, ``true``, ``5.9`` and friends are not an int: worker-frame-wrong-type."""
        obj = obj_of(GUARDIAN, SPAWN)
        obj["slot"] = bad
        assert reject(g.decode_guardian_frame, obj).reason is Reason.FRAME_WRONG_TYPE

    @pytest.mark.parametrize("bad", ["false", "true", 0, 1, None])
    def test_bool_field_accepts_only_bool(self, bad: Any) -> None:
        """``"false"`` is not False (cattrs would make it True): worker-frame-wrong-type."""
        obj = obj_of(GUARDIAN, g.Drained(clean=True))
        obj["clean"] = bad
        assert reject(g.decode_guardian_frame, obj).reason is Reason.FRAME_WRONG_TYPE

    @pytest.mark.parametrize("bad", [1, 1.5, True, None, ["1"]])
    def test_str_field_accepts_only_str(self, bad: Any) -> None:
        """A number is not a string: worker-frame-wrong-type."""
        obj = obj_of(GUARDIAN, g.Welcome(peer_version="1", pid=1))
        obj["peer_version"] = bad
        assert reject(g.decode_guardian_frame, obj).reason is Reason.FRAME_WRONG_TYPE

    def test_str_for_tuple_is_rejected(self) -> None:
        """A string is not iterated into a tuple of characters: worker-frame-wrong-type."""
        obj = obj_of(GUARDIAN, SPAWN)
        obj["argv"] = "ab"
        assert reject(g.decode_guardian_frame, obj).reason is Reason.FRAME_WRONG_TYPE

    @pytest.mark.parametrize("bad", [{"a": 1}, 5, None])
    def test_non_list_for_tuple_is_rejected(self, bad: Any) -> None:
        """Only a JSON array becomes a tuple."""
        obj = obj_of(GUARDIAN, SPAWN)
        obj["argv"] = bad
        assert reject(g.decode_guardian_frame, obj).reason is Reason.FRAME_WRONG_TYPE

    def test_tuple_items_are_strict(self) -> None:
        """Items of a tuple are checked by their own exact-type hook."""
        obj = obj_of(GUARDIAN, SPAWN)
        obj["argv"] = ["a", 1]
        assert reject(g.decode_guardian_frame, obj).reason is Reason.FRAME_WRONG_TYPE

    @pytest.mark.parametrize(
        ("frame", "key"),
        [
            (HELLO, "driver"),
            (g.Refused(reason=Reason.NOT_RUNNING), "reason"),
            (g.Phase(phase=ShutdownPhase.KILL, budget_ms=1), "phase"),
            (g.Exited(slot=0, exit_kind=ExitKind.EXIT_0), "exit_kind"),
        ],
    )
    def test_unknown_enum_value(self, frame: Any, key: str) -> None:
        """A string outside an enum is worker-frame-invalid-value, not echoed."""
        obj = obj_of(GUARDIAN, frame)
        obj[key] = SECRET
        error = reject(g.decode_guardian_frame, obj)
        assert error.reason is Reason.FRAME_INVALID_VALUE
        assert not echoes(error, SECRET)

    @pytest.mark.parametrize("decoder", DECODERS, ids=DECODER_IDS)
    @pytest.mark.parametrize("value", ["exit-1", "signal-9", "EXIT-0", ""])
    def test_exit_kind_is_bounded(self, decoder: Callable[[bytes], Any], value: str) -> None:
        """``exited`` carries one of the five exit kinds: anything else, from the guardian
        or the proc host, is a protocol violation; sending one is refused before it goes."""
        obj = obj_of(GUARDIAN, g.Exited(slot=0, exit_kind=ExitKind.SIGNAL_TERM))
        obj["exit_kind"] = value
        assert reject(decoder, obj).reason is Reason.FRAME_INVALID_VALUE
        with pytest.raises(LocalProtocolError):
            g.encode_guardian_frame(g.Exited(slot=0, exit_kind=value))  # type: ignore[arg-type]

    def test_every_exit_kind_travels(self) -> None:
        for kind in ExitKind:
            frame = g.Exited(slot=3, exit_kind=kind)
            assert p.decode_proc_host_frame(g.encode_guardian_frame(frame)) == frame

    def test_auto_is_not_a_resolved_driver(self) -> None:
        """The handshake carries the resolved driver: ``auto`` is refused."""
        obj = obj_of(GUARDIAN, HELLO)
        obj["driver"] = "auto"
        assert reject(g.decode_guardian_frame, obj).reason is Reason.FRAME_INVALID_VALUE

    def test_enum_field_rejects_non_string(self) -> None:
        """An enum field holding a number is worker-frame-wrong-type."""
        obj = obj_of(PROC_HOST, p.Signal(slot=1, signal=p.SignalName.TERM))
        obj["signal"] = 15
        assert reject(p.decode_proc_host_frame, obj).reason is Reason.FRAME_WRONG_TYPE

    @pytest.mark.parametrize("decoder", DECODERS, ids=DECODER_IDS)
    def test_unknown_tag(self, decoder: Callable[[bytes], Any]) -> None:
        """An unknown ``type`` is worker-frame-unknown-type, not echoed."""
        error = reject(decoder, {"version": 1, "type": SECRET})
        assert error.reason is Reason.FRAME_UNKNOWN_TYPE
        assert not echoes(error, SECRET)

    @pytest.mark.parametrize("tag", [5, None, [], {}])
    @pytest.mark.parametrize("decoder", DECODERS, ids=DECODER_IDS)
    def test_non_string_tag(self, decoder: Callable[[bytes], Any], tag: Any) -> None:
        """A non-string ``type`` is a RemoteProtocolError (never a TypeError)."""
        reject(decoder, {"version": 1, "type": tag})

    @pytest.mark.parametrize("decoder", DECODERS, ids=DECODER_IDS)
    def test_missing_tag(self, decoder: Callable[[bytes], Any]) -> None:
        """A frame without ``type`` is worker-frame-missing-key."""
        error = reject(decoder, {"version": 1})
        assert error.reason is Reason.FRAME_MISSING_KEY
        assert error.path == "$.type"

    @pytest.mark.parametrize(("codec", "frame"), ALL, ids=IDS)
    def test_wrong_version(self, codec: Codec, frame: Any) -> None:
        """Version 2 is worker-frame-unsupported-version, checked before the keys."""
        obj = obj_of(codec, frame)
        obj["version"] = 2
        obj["added_in_v2"] = 1
        assert reject(codec[1], obj).reason is Reason.FRAME_UNSUPPORTED_VERSION

    @pytest.mark.parametrize("version", ["1", True, 1.0])
    def test_version_must_be_the_integer(self, version: Any) -> None:
        """``"1"``, ``true`` and ``1.0`` are not version 1."""
        obj = obj_of(GUARDIAN, g.Locked())
        obj["version"] = version
        assert reject(g.decode_guardian_frame, obj).reason is Reason.FRAME_WRONG_TYPE

    def test_missing_version(self) -> None:
        """A frame without a version is worker-frame-missing-key."""
        error = reject(g.decode_guardian_frame, {"type": "locked"})
        assert error.reason is Reason.FRAME_MISSING_KEY

    @pytest.mark.parametrize("decoder", DECODERS, ids=DECODER_IDS)
    def test_malformed_bytes(self, decoder: Callable[[bytes], Any]) -> None:
        """Duplicate keys, bad UTF-8, NaN and non-objects are all RemoteProtocolError."""
        assert reject(decoder, b'{"version":1,"version":1}').reason is (Reason.FRAME_DUPLICATE_KEY)
        assert reject(decoder, b'{"x":"\xff"}').reason is Reason.FRAME_NOT_UTF8
        assert reject(decoder, b'{"version":NaN}').reason is Reason.FRAME_NOT_JSON
        assert reject(decoder, b"[1]").reason is Reason.FRAME_NOT_OBJECT

    @pytest.mark.parametrize("decoder", DECODERS, ids=DECODER_IDS)
    def test_oversized(self, decoder: Callable[[bytes], Any]) -> None:
        """A frame over MAX_FRAME_BYTES is worker-frame-oversized."""
        data = b'{"pad":"' + b"x" * MAX_FRAME_BYTES + b'"}'
        assert reject(decoder, data).reason is Reason.FRAME_OVERSIZED

    def test_wrong_type_value_is_not_echoed(self) -> None:
        """A secret-looking value in a wrongly typed field is not echoed."""
        obj = obj_of(GUARDIAN, SPAWN)
        obj["slot"] = SECRET
        error = reject(g.decode_guardian_frame, obj)
        assert not echoes(error, SECRET)
        assert error.__cause__ is None

    def test_lone_surrogate_is_rejected(self) -> None:
        """A ``\\ud800`` escape UTF-8 cannot encode is refused, as the public codec does."""
        raw = b'{"peer_version":"\\ud800","pid":1,"type":"welcome","version":1}'
        assert reject(g.decode_guardian_frame, raw).reason is Reason.FRAME_INVALID_VALUE

    def test_lone_surrogate_in_a_tuple_is_rejected(self) -> None:
        """The surrogate rule also applies to the items of a tuple."""
        raw = b'{"argv":["\\udfff"],"slot":1,"type":"spawn","version":1}'
        assert reject(g.decode_guardian_frame, raw).reason is Reason.FRAME_INVALID_VALUE


class TestEncodingInvalidFrames:
    def test_bool_for_int_is_a_local_error(self) -> None:
        """Encoding a frame whose int field holds a bool is LocalProtocolError."""
        with pytest.raises(LocalProtocolError):
            g.encode_guardian_frame(g.Welcome(peer_version="1", pid=True))

    def test_int_for_bool_is_a_local_error(self) -> None:
        """Encoding a frame whose bool field holds 1 is LocalProtocolError."""
        with pytest.raises(LocalProtocolError):
            g.encode_guardian_frame(g.Drained(clean=1))  # type: ignore[arg-type]

    def test_nan_is_a_local_error(self) -> None:
        """Encoding NaN is LocalProtocolError, not json's bare ValueError."""
        with pytest.raises(LocalProtocolError):
            g.encode_guardian_frame(g.Spawned(slot=1, pid=float("nan")))  # type: ignore[arg-type]

    def test_unserialisable_value_is_a_local_error(self) -> None:
        """Encoding an object JSON cannot hold is LocalProtocolError, not TypeError."""
        with pytest.raises(LocalProtocolError):
            g.encode_guardian_frame(g.Spawn(slot=1, argv=(object(),)))  # type: ignore[arg-type]

    def test_lone_surrogate_is_a_local_error(self) -> None:
        """Encoding a string UTF-8 cannot hold is LocalProtocolError."""
        with pytest.raises(LocalProtocolError):
            g.encode_guardian_frame(g.Welcome(peer_version="\ud800", pid=1))

    def test_oversized_frame_is_a_local_error(self) -> None:
        """Encoding a frame the peer would reject as oversized is LocalProtocolError."""
        frame = g.Spawn(slot=1, argv=("x" * MAX_FRAME_BYTES,))
        with pytest.raises(LocalProtocolError) as info:
            g.encode_guardian_frame(frame)
        assert info.value.reason is Reason.FRAME_OVERSIZED

    def test_largest_accepted_frame_encodes(self) -> None:
        """A frame of exactly MAX_FRAME_BYTES encodes and decodes."""
        empty = len(g.encode_guardian_frame(g.Spawn(slot=1, argv=("",)))) - 1
        frame = g.Spawn(slot=1, argv=("x" * (MAX_FRAME_BYTES - empty),))
        data = g.encode_guardian_frame(frame)
        assert len(data) == MAX_FRAME_BYTES + 1
        assert g.decode_guardian_frame(data) == frame


class TestHandshake:
    def test_same_version_passes(self) -> None:
        """Equal package versions pass the handshake check."""
        check_peer_version("1.2.3", "1.2.3")

    def test_other_version_is_a_peer_mismatch(self) -> None:
        """Any other version is worker-peer-version-mismatch, not echoed."""
        with pytest.raises(WorkerStartFailedError) as info:
            check_peer_version("1.2.3", SECRET)
        assert info.value.reason is Reason.PEER_VERSION_MISMATCH
        assert not echoes(info.value, SECRET)
