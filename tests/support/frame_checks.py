"""Helpers shared by the protocol tests: build, mutate and reject frames."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from coretsia.worker_protocol.exceptions import RemoteProtocolError

Codec = tuple[Callable[[Any], bytes], Callable[[bytes], Any]]
"""An (encode, decode) pair."""


def obj_of(codec: Codec, frame: Any) -> dict[str, Any]:
    """The JSON object a valid frame encodes to, ready to be mutated."""
    result: dict[str, Any] = json.loads(codec[0](frame))
    return result


def reject(decoder: Callable[[bytes], Any], data: bytes | dict[str, Any]) -> RemoteProtocolError:
    """Decode ``data`` and return the RemoteProtocolError it must raise."""
    raw = json.dumps(data).encode() if isinstance(data, dict) else data
    with pytest.raises(RemoteProtocolError) as info:
        decoder(raw)
    return info.value


def echoes(error: BaseException, value: str) -> bool:
    """True when ``value`` shows up in the error's str, repr, args or path."""
    text = str(error) + repr(error) + repr(error.args) + str(getattr(error, "path", ""))
    return value in text
