"""The fork-server channel: requests and answers named by their tag, and whose pid a
``STARTED`` datagram carries.

Real socket pairs: the pid is the kernel's, from ``SCM_CREDENTIALS``, never the text.
"""

from __future__ import annotations

import os
import socket

import pytest

from coretsia.worker_protocol.internal.fork_server import (
    DONE,
    STARTED,
    decode_request,
    done,
    encode_request,
    parse_answer,
    started,
)
from coretsia.worker_protocol.internal.runtime.ancillary import CREDENTIALS_SPACE, sender_pid


def test_a_request_carries_its_tag_and_argv() -> None:
    data = encode_request(7, ("/usr/bin/python3", "-c", "pass"))
    assert data == b"7\0/usr/bin/python3\0-c\0pass\0"
    assert decode_request(data) == (b"7", ("/usr/bin/python3", "-c", "pass"))


@pytest.mark.parametrize("argv", [(), ("a\0b",), ("x" * 70000,)])
def test_an_argv_that_cannot_travel_is_refused(argv: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="argv"):
        encode_request(0, argv)


@pytest.mark.parametrize(
    "data", [b"", b"7", b"7\0", b"x\0argv\0", b"\0argv\0", b"7\0argv", b"7\0\xff\0"]
)
def test_what_is_not_a_request(data: bytes) -> None:
    """No tag, no argv, unterminated, not UTF-8: nothing the server could answer."""
    assert decode_request(data) is None


def test_answers_name_their_request() -> None:
    assert parse_answer(started(b"12")) == (STARTED, b"12")
    assert parse_answer(done(b"12")) == (DONE, b"12")


@pytest.mark.parametrize("data", [b"", b"+", b"-", b"*3", b"+x", b"-1 ", b"+-1"])
def test_what_is_not_an_answer(data: bytes) -> None:
    """The channel's end (empty), an answer without its tag, or anything else."""
    assert parse_answer(data) is None


def _received(*, passcred: bool) -> list[tuple[int, int, bytes]]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, theirs:
        if passcred:
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        theirs.sendall(started(b"0"))
        data, ancillary, _flags, _addr = ours.recvmsg(16, CREDENTIALS_SPACE)
    assert data == started(b"0")
    return ancillary


def test_the_sender_is_read_from_the_credentials() -> None:
    assert sender_pid(_received(passcred=True)) == os.getpid()


def test_no_credentials_no_pid() -> None:
    """Without ``SO_PASSCRED`` the datagram names nobody: no worker, not a guessed pid."""
    assert _received(passcred=False) == []
    assert sender_pid([]) is None
    rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS, b"\0\0\0\0")
    assert sender_pid([rights]) is None
