"""The private lifecycle locator v1: how a client finds and authenticates to a supervisor.

The supervisor writes ``var/tmp/worker.lifecycle.json`` (mode 0600, temp file and rename)
after its listener, signal handling and ``starting`` state are ready and before any worker
is spawned. Clients read it only while the lifecycle lock is held. It holds the one secret
of a running pool, the control credential, so it is never printed, logged or copied.

Exact schema, by transport::

    {"credential": "<64 hex>", "force_kill_timeout_ms": 1000, "path": "var/tmp/worker.sock",
     "stop_timeout_ms": 10000, "transport": "unix", "version": 1}
    {"credential": "<64 hex>", "force_kill_timeout_ms": 1000, "host": "127.0.0.1",
     "port": 9327, "stop_timeout_ms": 10000, "transport": "tcp", "version": 1}

``path`` is relative to the project root. The decoder checks the shape; whether the
endpoint is acceptable to connect to (inside the root, loopback only) is the client's
endpoint-consistency check.
"""

from __future__ import annotations

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol._codec import Codec, Frame
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.paths import is_safe_relative_path
from coretsia.worker_protocol.records import field
from coretsia.worker_protocol.vocabulary import CREDENTIAL_HEX_LEN, MAX_TIMEOUT_MS, Transport

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import Final

LOCATOR_VERSION: Final = 1
"""The version of the locator schema."""

MAX_LOCATOR_BYTES: Final = 4096
"""A locator file larger than this is rejected before it is parsed."""

_TIMEOUT: Final = s.Int(1, MAX_TIMEOUT_MS)


class Locator(Frame):
    """The active supervisor's endpoint, credential and stop budgets.

    ``path`` is the root-relative UNIX socket path (``unix`` only); ``host`` (always
    ``127.0.0.1`` for a sane supervisor) and ``port`` are ``tcp``'s. The keys of the other
    transport are absent from the file, not null.
    """

    transport: Transport = field(kind=s.Choice(Transport))
    credential: str = field(kind=s.Hex(CREDENTIAL_HEX_LEN), secret=True)
    stop_timeout_ms: int = field(kind=_TIMEOUT)
    force_kill_timeout_ms: int = field(kind=_TIMEOUT)
    path: str | None = field(default=None, kind=s.Omissible(s.Str()))
    host: str | None = field(default=None, kind=s.Omissible(s.Str(64)))
    port: int | None = field(default=None, kind=s.Omissible(s.Int(1, 65535)))

    @property
    def stop_wait_ms(self) -> int:
        """Longest a whole shutdown may take: cooperative, then terminate, then kill."""
        return self.stop_timeout_ms + 2 * self.force_kill_timeout_ms

    @property
    def address(self) -> str:
        """The endpoint as the handshake binds it: the socket's path, or ``host:port``."""
        return self.path if self.path is not None else f"{self.host}:{self.port}"

    def _check(self) -> None:
        # Each transport has exactly its own keys: another's is unknown, its own required.
        if self.transport is Transport.UNIX:
            s.require(self.host is None and self.port is None, "", Reason.FRAME_UNKNOWN_KEY)
            s.require(self.path is not None, "path", Reason.FRAME_MISSING_KEY)
            s.require(is_safe_relative_path(self.path or ""), "path")
        else:
            s.require(self.path is None, "", Reason.FRAME_UNKNOWN_KEY)
            s.require(self.host is not None, "host", Reason.FRAME_MISSING_KEY)
            s.require(self.port is not None, "port", Reason.FRAME_MISSING_KEY)


_LOCATOR: Final = Codec(LOCATOR_VERSION, (Locator,), tagged=False, max_bytes=MAX_LOCATOR_BYTES)


def encode_locator(locator: Locator) -> bytes:
    """Encode the locator file's bytes, checked by the rules every reader applies."""
    return _LOCATOR.encode(locator)


def decode_locator(data: bytes) -> Locator:
    """Decode the locator file's bytes; anything off is a :class:`RemoteProtocolError`."""
    locator: Locator = _LOCATOR.decode(data)
    return locator
