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
from coretsia.worker_protocol._frozen import Frozen
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import LocalProtocolError
from coretsia.worker_protocol.paths import is_safe_relative_path
from coretsia.worker_protocol.vocabulary import CREDENTIAL_HEX_LEN, MAX_TIMEOUT_MS, Transport

# Not ``from typing import ...``: ``status`` is a Kubernetes exec probe, where importing
# typing costs milliseconds; type checkers honour a module-level TYPE_CHECKING.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

LOCATOR_VERSION: Final = 1
"""The version of the locator schema."""

MAX_LOCATOR_BYTES: Final = 4096
"""A locator file larger than this is rejected before it is parsed."""

_COMMON: Final = frozenset(
    {"version", "transport", "credential", "stop_timeout_ms", "force_kill_timeout_ms"}
)


class Locator(Frozen):
    """The active supervisor's endpoint, credential and stop budgets."""

    __slots__ = (
        "_credential",
        "_force_kill_timeout_ms",
        "_host",
        "_path",
        "_port",
        "_stop_timeout_ms",
        "_transport",
    )
    __match_args__ = _fields = (
        "transport",
        "credential",
        "stop_timeout_ms",
        "force_kill_timeout_ms",
        "path",
        "host",
        "port",
    )
    _shown = ("transport", "stop_timeout_ms", "force_kill_timeout_ms", "path", "host", "port")
    _transport: Transport
    _credential: str
    _stop_timeout_ms: int
    _force_kill_timeout_ms: int
    _path: str | None
    _host: str | None
    _port: int | None

    def __init__(
        self,
        transport: Transport,
        credential: str,
        stop_timeout_ms: int,
        force_kill_timeout_ms: int,
        path: str | None = None,
        host: str | None = None,
        port: int | None = None,
    ) -> None:
        self._set(transport, credential, stop_timeout_ms, force_kill_timeout_ms, path, host, port)

    @property
    def transport(self) -> Transport:
        return self._transport

    @property
    def credential(self) -> str:
        return self._credential

    @property
    def stop_timeout_ms(self) -> int:
        return self._stop_timeout_ms

    @property
    def force_kill_timeout_ms(self) -> int:
        return self._force_kill_timeout_ms

    @property
    def path(self) -> str | None:
        """Root-relative UNIX socket path (``unix`` only)."""
        return self._path

    @property
    def host(self) -> str | None:
        """Always ``127.0.0.1`` for a sane supervisor (``tcp`` only)."""
        return self._host

    @property
    def port(self) -> int | None:
        """The TCP port (``tcp`` only)."""
        return self._port

    @property
    def stop_wait_ms(self) -> int:
        """Longest a whole shutdown may take: cooperative, then terminate, then kill."""
        return self.stop_timeout_ms + 2 * self.force_kill_timeout_ms


def _read(obj: s.JsonObject) -> Locator:
    s.check_version(obj, LOCATOR_VERSION)
    if "transport" not in obj:
        raise s.FieldError(Reason.FRAME_MISSING_KEY, "$.transport")
    transport = s.get_enum(obj, "transport", Transport)
    path = host = port = None
    if transport is Transport.UNIX:
        s.check_keys(obj, _COMMON | {"path"})
        path = s.get_str(obj, "path")
        if not is_safe_relative_path(path):
            raise s.FieldError(Reason.FRAME_INVALID_VALUE, "$.path")
    else:
        s.check_keys(obj, _COMMON | {"host", "port"})
        host = s.get_str(obj, "host", 64)
        port = s.get_int(obj, "port", 1, 65535)
    return Locator(
        transport=transport,
        credential=s.get_hex(obj, "credential", CREDENTIAL_HEX_LEN),
        stop_timeout_ms=s.get_int(obj, "stop_timeout_ms", 1, MAX_TIMEOUT_MS),
        force_kill_timeout_ms=s.get_int(obj, "force_kill_timeout_ms", 1, MAX_TIMEOUT_MS),
        path=path,
        host=host,
        port=port,
    )


def encode_locator(locator: Locator) -> bytes:
    """Encode the locator file's bytes, checked by the rules every reader applies."""
    obj: s.JsonObject = {
        "version": LOCATOR_VERSION,
        "transport": locator.transport.value,
        "credential": locator.credential,
        "stop_timeout_ms": locator.stop_timeout_ms,
        "force_kill_timeout_ms": locator.force_kill_timeout_ms,
    }
    if locator.transport is Transport.UNIX:
        obj["path"] = locator.path
        stray = locator.host is not None or locator.port is not None
    else:
        obj.update(host=locator.host, port=locator.port)
        stray = locator.path is not None
    if stray:  # a field of the other transport would be silently dropped
        raise LocalProtocolError(Reason.FRAME_INVALID_VALUE)
    return s.encode_checked(obj, _read)


def decode_locator(data: bytes) -> Locator:
    """Decode the locator file's bytes; anything off is a :class:`RemoteProtocolError`."""
    return s.decode_checked(data, _read, MAX_LOCATOR_BYTES)
