"""How an end of the control conversation refuses a frame whose proof fails: the client with
``CredentialRefusedError`` at ``$.mac``, the server the same way and then in silence.
"""

from __future__ import annotations

import pytest
from conversation_pairs import STATUS

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control_conversation import (
    ClientConversation,
    ControlState,
    CredentialRefusedError,
    ServerConversation,
)
from coretsia.worker_protocol.exceptions import LocalProtocolError


def refused_by_client(client: ClientConversation, data: bytes) -> None:
    """Feed ``data`` to ``client``: its proof is refused, and the client's end is over."""
    client.receive_data(data)
    with pytest.raises(CredentialRefusedError) as info:
        client.next_event()
    assert (info.value.reason, info.value.path) == (Reason.FRAME_INVALID_VALUE, "$.mac")
    assert client.state is ControlState.ERROR


def refused_by_server(server: ServerConversation, data: bytes) -> None:
    """Feed ``data`` to ``server``: its proof is refused, and the server may answer nothing."""
    server.receive_data(data)
    with pytest.raises(CredentialRefusedError):
        server.next_event()
    assert server.state is ControlState.ERROR
    with pytest.raises(LocalProtocolError):  # silence: nothing can be answered
        server.send(STATUS)
