"""Our end of a real guardian's or proc host's channel, as the process above it holds it.

The guardian tests play the supervisor to a real guardian, the proc host tests play the
guardian to a real proc host: both ask for workers and read frames the same way, only the
frame codec differs.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable

from coretsia.worker_protocol.framing import LineFramer, Need
from coretsia.worker_protocol.internal.guardian import Spawn


class FramedPeer:
    """Frames to and from the process on the other end of ``sock`` (timeouts: 30 s)."""

    def __init__(
        self,
        sock: socket.socket,
        encode_spawn: Callable[[Spawn], bytes],
        decode: Callable[[bytes], object],
    ) -> None:
        self.sock = sock
        self.sock.settimeout(30)
        self.framer = LineFramer()
        self._encode_spawn = encode_spawn
        self._decode = decode

    def spawn(self, slot: int, code: str) -> socket.socket:
        """Ask for a worker running ``python -c code``; our end of its worker channel."""
        ours, theirs = socket.socketpair()
        frame = self._encode_spawn(Spawn(slot=slot, argv=(sys.executable, "-c", code)))
        socket.send_fds(self.sock, [frame], [theirs.fileno()])
        theirs.close()
        return ours

    def receive(self) -> object:
        """The next frame, decoded; None once the other end closed the channel."""
        while True:
            frame = self.framer.next_frame()
            if isinstance(frame, bytes):
                return self._decode(frame)
            if frame is Need.CLOSED:
                return None
            self.framer.receive_data(self.sock.recv(4096))
