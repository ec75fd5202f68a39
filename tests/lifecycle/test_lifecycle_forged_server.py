"""A forged server on a freed TCP port gets nothing and convinces no client (issue 14).

The supervisor dies while its guardian still drains (a task that ignores the stop keeps
the workers alive): the lock is held, the locator is still there, and the TCP port is
free. An unprivileged process (root drops to ``nobody``) binds it, records every byte,
and answers as a version 1 supervisor, as a version 2 one without the credential, and by
replaying what the real supervisor sent on an earlier connection. The real ``status``,
``health`` and ``stop`` commands each exit 4 (``worker-communication-failed``), and the
squatter received only nonces: no credential, no command, no MAC.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from forged_server import ForgedServer
from pools import Supervisors, cli, lock_held, wait_for, wait_gone, write_root
from ports import free_port

from coretsia.worker_protocol.control import Challenge, ControlRequest
from coretsia.worker_protocol.control_conversation import ClientConversation
from coretsia.worker_protocol.locator import decode_locator
from coretsia.worker_protocol.vocabulary import ControlCommand

LOCATOR = "var/tmp/worker.lifecycle.json"
COMMANDS = ("status", "health", "stop")
REFUSED = "CORETSIA_WORKER_COMMUNICATION_FAILED: worker-communication-failed\n"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the squatter drops from root")


def _recorded_status(root: Path, port: int) -> bytes:
    """Every byte the real supervisor sends for a genuine ``status``: its challenge and
    its sealed answer, for the squatter to replay later."""
    locator = decode_locator((root / LOCATOR).read_bytes())
    conversation = ClientConversation(locator.credential, locator.transport, locator.address)
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(conversation.hello())
        while chunk := sock.recv(4096):
            received += chunk
            conversation.receive_data(chunk)
            if isinstance(conversation.next_event(), Challenge):
                sock.sendall(conversation.send(ControlRequest(ControlCommand.STATUS)))
    assert b'"type":"status"' in received
    return received


def test_a_squatter_on_the_freed_port_gets_nothing(
    short_root: Path, supervisors: Supervisors
) -> None:
    """status, health and stop against a squatter (three ways of forging) each exit 4,
    and the squatter received no credential, no command and no MAC."""
    port = free_port()
    root = write_root(short_root, task_source="lifecycle_app:stubborn", stop_timeout_ms=60000)
    with (root / "coretsia.toml").open("a") as config:
        config.write(f'\n[worker.control]\ntransport = "tcp"\n\n[worker.tcp]\nport = {port}\n')
    supervisor = supervisors(root)
    supervisor.wait_running()
    locator = (root / LOCATOR).read_bytes()
    credential = json.loads(locator)["credential"]
    replay = _recorded_status(root, port).hex()
    guardian, workers = supervisor.guardian(), supervisor.workers()

    supervisor.kill()  # the guardian drains: the stubborn tasks hold the workers
    assert lock_held(root)
    assert guardian.is_running()
    assert (root / LOCATOR).read_bytes() == locator

    modes = ["v1", "v2", f"replay:{replay}"]
    squatter = ForgedServer(
        "--port", str(port), "--as-nobody", *(m for m in modes for _ in COMMANDS)
    )
    try:
        assert squatter.uid != 0
        for _mode in modes:
            for command in COMMANDS:
                result = cli(root, command, timeout=30)
                assert (result.returncode, result.stdout, result.stderr) == (4, "", REFUSED)
        records = squatter.records()
    finally:
        squatter.close()
        for worker in workers:
            worker.kill()  # the guardian then finishes its drain at once

    assert [r["mode"] for r in records] == [m.split(":")[0] for m in modes for _ in COMMANDS]
    for record in records:
        received = bytes.fromhex(record["received"])
        assert credential.encode() not in received
        assert bytes.fromhex(credential) not in received
        assert locator not in received
        (hello,) = received.splitlines()  # nothing after the hello: no request, no proof
        assert set(json.loads(hello)) == {"client_nonce", "type", "version"}
        assert json.loads(hello)["type"] == "hello"
    wait_for(lambda: not lock_held(root))
    assert wait_gone(root) == []
