"""A control server that is not the pool's: records every byte and answers as told (script).

Run as ``python forged_server.py (--port N | --fd N) [--as-nobody] MODE...``. It listens
on 127.0.0.1:N (bound after dropping privileges, as an unprivileged squatter on a freed
port would) or on the already bound socket ``N`` it inherited (``listen`` is called after
the drop, so the kernel reports the listener as ``nobody``), prints ``ready <uid>``, then
serves one connection per MODE, in order:

* ``v1``: answers as a version 1 supervisor would, after the first line it receives: a
  forged ``running 4/4`` status, a healthy health and a ``stopped``;
* ``v2``: answers as a version 2 supervisor that does not hold the credential: a
  challenge with a MAC it made up, then the same forged answers, sealed likewise;
* ``replay:<hex>``: sends these bytes (a real supervisor's, recorded on an earlier
  connection) after the first line it receives;
* ``honest:<credential>:<transport>:<address>``: the real handshake (it holds the
  credential) and a ``status`` answer: only the listener's identity is wrong.

After each connection it prints ``{"mode": ..., "received": "<hex>"}``: every byte the
client sent, up to its close. ``--as-nobody`` (root only) drops to ``nobody`` first.

Tests import it as ``forged_server`` (``tests/support`` is on pytest's pythonpath) and run
it with :class:`ForgedServer`.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import select
import socket
import subprocess
import sys
from collections.abc import Collection

from coretsia.worker_protocol.control import (
    Hello,
    PoolSummary,
    StatusResponse,
)
from coretsia.worker_protocol.control_conversation import ServerConversation
from coretsia.worker_protocol.exceptions import ProtocolError
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.vocabulary import Driver, PoolStatus, Transport

TIMEOUT_S = 5.0

_SUMMARY: dict[str, object] = {
    "control_transport": "tcp",
    "driver": "fork",
    "endpoint_hash": "0" * 32,
    "pid": 1,
    "pool_status": "running",
    "ready_worker_count": 4,
    "worker_count": 4,
}
_ANSWERS: list[dict[str, object]] = [
    {**_SUMMARY, "type": "status"},
    {**_SUMMARY, "healthy": True, "reason": "worker-pool-healthy", "type": "health"},
    {"type": "stopped"},
]


def _lines(version: int, *, challenge: bool) -> bytes:
    """The forged answers, as a supervisor of ``version`` without the credential sends."""
    frames: list[dict[str, object]] = []
    if challenge:
        frames.append({"server_nonce": os.urandom(32).hex(), "type": "challenge"})
    out = b""
    for frame in [*frames, *_ANSWERS]:
        line = {**frame, "version": version}
        if version == 2:
            line["mac"] = os.urandom(32).hex()
        out += json.dumps(line, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    return out


def _drop_to_nobody() -> None:
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)


def _read_line(conn: socket.socket, received: bytearray) -> None:
    """Read until the first newline (or the client's close)."""
    while b"\n" not in received:
        chunk = conn.recv(4096)
        if not chunk:
            return
        received += chunk


def _honest(conn: socket.socket, spec: str, received: bytearray) -> None:
    credential, transport, address = spec.split(":", 2)
    conversation = ServerConversation(credential, Transport(transport), address)
    while True:
        event = conversation.next_event()
        if event is Need.DATA:
            chunk = conn.recv(4096)
            received += chunk
            conversation.receive_data(chunk)
        elif isinstance(event, Hello):
            conn.sendall(conversation.challenge())
        elif event is Need.CLOSED:
            return
        else:
            summary = PoolSummary(
                PoolStatus.RUNNING, 1, 4, 4, Driver.FORK, Transport.UNIX, "0" * 32
            )
            conn.sendall(conversation.send(StatusResponse(summary)))
            return


def _serve(conn: socket.socket, mode: str) -> bytes:
    received = bytearray()
    conn.settimeout(TIMEOUT_S)
    try:
        if mode.startswith("honest:"):
            _honest(conn, mode.removeprefix("honest:"), received)
        else:
            _read_line(conn, received)
            if mode == "v1":
                conn.sendall(_lines(1, challenge=False))
            elif mode == "v2":
                conn.sendall(_lines(2, challenge=True))
            else:
                conn.sendall(bytes.fromhex(mode.removeprefix("replay:")))
        while chunk := conn.recv(4096):  # whatever else the client says, up to its close
            received += chunk
    except (OSError, ProtocolError):
        pass
    return bytes(received)


def main() -> None:
    parser = argparse.ArgumentParser()
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--port", type=int)
    where.add_argument("--fd", type=int)
    parser.add_argument("--as-nobody", action="store_true")
    parser.add_argument("modes", nargs="+")
    args = parser.parse_args()
    if args.fd is not None:
        listener = socket.socket(fileno=args.fd)
    if args.as_nobody:
        _drop_to_nobody()
    if args.port is not None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", args.port))
    listener.listen(8)
    print("ready", os.getuid(), flush=True)
    for mode in args.modes:
        conn, _ = listener.accept()
        with conn:
            received = _serve(conn, mode)
        print(json.dumps({"mode": mode.split(":")[0], "received": received.hex()}), flush=True)
    listener.close()


class ForgedServer:
    """This script in a process of its own, listening once it is constructed."""

    def __init__(self, *args: str, pass_fds: Collection[int] = ()) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=pass_fds,
        )
        assert self.proc.stdout is not None
        if not select.select([self.proc.stdout], [], [], 30)[0]:
            self.close()
            raise AssertionError("the forged server did not start")
        line = self.proc.stdout.readline()
        assert line.startswith("ready "), (line, self.close())
        self.uid = int(line.split()[1])
        """The user it listens as."""

    def records(self) -> list[dict[str, str]]:
        """Wait for it to serve every mode; one record per connection, in order."""
        out, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err
        return [json.loads(line) for line in out.splitlines()]

    def close(self) -> str:
        """Kill it if it still runs; what it said on stderr."""
        if self.proc.poll() is None:
            self.proc.kill()
        _out, err = self.proc.communicate(timeout=30)
        return err


if __name__ == "__main__":
    main()
