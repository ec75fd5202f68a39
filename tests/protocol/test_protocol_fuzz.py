"""Fuzzing every decoder, public and internal.

The fuzzing contract: whatever bytes arrive, a decoder either returns a frame or raises
RemoteProtocolError (never a KeyError, TypeError, UnicodeError, RecursionError...), and
a frame it accepts re-encodes to the same JSON object.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from frame_strategies import CODECS, FUZZ, FUZZ_EACH, NAMES, Codec
from hypothesis import given
from hypothesis import strategies as st

from coretsia.worker_protocol.catalogue import ErrorCode, HealthReason, Reason
from coretsia.worker_protocol.exceptions import RemoteProtocolError
from coretsia.worker_protocol.vocabulary import (
    Containment,
    ContainmentRequest,
    ControlCommand,
    Driver,
    DriverRequest,
    PoolStatus,
    ShutdownPhase,
    Transport,
    TransportRequest,
)

# -- arbitrary JSON ----------------------------------------------------------------------

#: Every key and type tag any schema uses, so fuzzed objects often look almost right.
KNOWN_KEYS = [
    "argv",
    "attempt",
    "budget_ms",
    "clean",
    "client_nonce",
    "code",
    "command",
    "containment",
    "control_transport",
    "control_transport_requested",
    "credential",
    "driver",
    "driver_requested",
    "endpoint_hash",
    "error_type",
    "exit_kind",
    "force_kill_timeout_ms",
    "healthy",
    "host",
    "mac",
    "path",
    "peer_version",
    "phase",
    "pid",
    "pool_status",
    "port",
    "ready_worker_count",
    "reason",
    "retried",
    "root_id",
    "server_nonce",
    "signal",
    "slot",
    "status",
    "stop_timeout_ms",
    "token",
    "transport",
    "type",
    "umask",
    "version",
    "worker_count",
]
KNOWN_TAGS = [
    "challenge",
    "request",
    "status",
    "health",
    "stop-progress",
    "stopped",
    "error",
    "ready",
    "failed",
    "retiring",
    "task-failed",
    "shutdown-request",
    "hello",
    "welcome",
    "locked",
    "refused",
    "spawn",
    "spawned",
    "spawn-failed",
    "exited",
    "shutdown",
    "phase",
    "drained",
    "release",
    "released",
    "host-hello",
    "signal",
    "quit",
]
#: Strings that are valid somewhere: enum values, hex of the right lengths, a safe path.
KNOWN_STRINGS = st.sampled_from(
    [m.value for e in (ControlCommand, PoolStatus, Driver, DriverRequest, Transport) for m in e]
    + [m.value for e in (Containment, ContainmentRequest) for m in e]
    + [m.value for e in (TransportRequest, ShutdownPhase, HealthReason, Reason) for m in e]
    + [m.value for m in ErrorCode]
    + ["0" * 64, "a" * 32, "var/tmp/worker.sock", "127.0.0.1", "term", "kill", *KNOWN_TAGS]
)

#: Any text, lone surrogates included (a ``\ud800`` escape decodes to one; UTF-8 cannot
#: encode it, so a decoder that accepts one cannot re-encode what it accepted).
#: (Built from a list: ``st.text`` quietly drops surrogates from a mixed alphabet.)
any_text = st.lists(st.characters() | st.sampled_from(["\ud800", "\udfff"]), max_size=20).map(
    "".join
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | any_text
    | KNOWN_STRINGS
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KNOWN_KEYS) | any_text, children, max_size=4)
    ),
    max_leaves=12,
)
keys = st.sampled_from(KNOWN_KEYS) | any_text


@st.composite
def json_objects(draw: st.DrawFn) -> dict[str, Any]:
    """An arbitrary JSON object, usually with a plausible version and type tag."""
    obj = draw(st.dictionaries(keys, json_values, max_size=12))
    if draw(st.integers(0, 3)):
        obj["version"] = draw(st.sampled_from([1, 1, 1, 2, 0, True, "1", 1.0]))
    if draw(st.booleans()):
        obj["type"] = draw(st.sampled_from(KNOWN_TAGS) | scalars)
    return obj


def dumps(obj: Any) -> bytes:
    """Plain JSON bytes, \\u-escaping what UTF-8 cannot hold (a lone surrogate)."""
    return json.dumps(obj).encode("ascii")


def check_decoder(codec: Codec, data: bytes) -> None:
    """The fuzzing contract: reject with RemoteProtocolError, or accept and re-encode."""
    try:
        frame = codec.decode(data)
    except RemoteProtocolError:
        return
    encoded = codec.encode(frame)
    assert codec.decode(encoded) == frame
    assert json.loads(encoded) == json.loads(data)


def check_every_decoder(data: bytes) -> None:
    """Apply the fuzzing contract to every decoder, naming the one that breaks it."""
    for name in NAMES:
        try:
            check_decoder(CODECS[name], data)
        except Exception as exc:
            msg = f"the {name} decoder broke the contract with {type(exc).__name__}"
            raise AssertionError(msg) from exc


class TestFuzzDecoders:
    @FUZZ
    @given(raw=st.binary(max_size=300))
    def test_arbitrary_bytes(self, raw: bytes) -> None:
        """Arbitrary bytes are rejected by every decoder with RemoteProtocolError only."""
        check_every_decoder(raw)

    @FUZZ
    @given(obj=json_objects())
    def test_arbitrary_json_objects(self, obj: dict[str, Any]) -> None:
        """Arbitrary JSON objects are rejected with RemoteProtocolError or accepted exactly."""
        check_every_decoder(dumps(obj))

    @FUZZ
    @given(value=json_values)
    def test_arbitrary_json_values(self, value: Any) -> None:
        """Any JSON value at top level is rejected with RemoteProtocolError or accepted."""
        check_every_decoder(dumps(value))

    @pytest.mark.parametrize("name", NAMES)
    @FUZZ_EACH
    @given(data=st.data())
    def test_mutated_valid_frames(self, name: str, data: st.DataObject) -> None:
        """A valid frame with a key dropped, added, retyped or re-texted is still handled."""
        codec = CODECS[name]
        obj = json.loads(codec.encode(data.draw(codec.frames)))
        mutation = data.draw(st.sampled_from(["drop", "add", "retype", "replace", "retext"]))
        key = data.draw(st.sampled_from(sorted(obj)))
        if mutation == "retext":
            # Splice arbitrary text (lone surrogates included) into a string field.
            texts = [k for k, v in obj.items() if isinstance(v, str) and k != "type"]
            key = data.draw(st.sampled_from(texts or ["type"]))
            at = data.draw(st.integers(0, len(obj[key])))
            splice = data.draw(st.sampled_from(["\ud800", "\udfff", "\x00", "\n", "é"]) | any_text)
            obj[key] = obj[key][:at] + splice + obj[key][at:]
        elif mutation == "drop":
            del obj[key]
        elif mutation == "add":
            obj[data.draw(keys)] = data.draw(json_values)
        elif mutation == "retype":
            original = obj[key]
            obj[key] = data.draw(json_values.filter(lambda v: type(v) is not type(original)))
        else:
            obj[key] = data.draw(json_values)
        check_decoder(codec, dumps(obj))

    @pytest.mark.parametrize("name", NAMES)
    @FUZZ_EACH
    @given(data=st.data())
    def test_corrupted_valid_bytes(self, name: str, data: st.DataObject) -> None:
        """A valid frame with one byte changed, cut short or padded is still handled."""
        codec = CODECS[name]
        raw = bytearray(codec.encode(data.draw(codec.frames)))
        at = data.draw(st.integers(0, len(raw) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            raw[at] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del raw[at:]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=4))
        check_decoder(codec, bytes(raw))
