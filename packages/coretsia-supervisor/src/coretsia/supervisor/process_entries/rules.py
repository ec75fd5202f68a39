"""The value rules of seed 003 shared by registration and snapshot loading.

``MAX_WORKERS`` is the protocol's: seed 003's 1,024 workers in total, the same bound as
seed 000's slots.

The manager checks a value when it is registered and :func:`load_snapshot` checks it
again when a frozen description is read back (a generation file can be edited or come
from another version), so both use these functions. Like :mod:`.errors` this module
imports nothing but the protocol's vocabulary (on every worker's boot path anyway):
loading a snapshot sits on a worker's boot path.
"""

from __future__ import annotations

from coretsia.supervisor.process_entries.errors import (
    InvalidProcessNameError,
    ProcessArgumentError,
)
from coretsia.worker_protocol.vocabulary import MAX_WORKERS

__all__ = [
    "EVENT_LOOPS",
    "IPC_MSGQUEUE",
    "IPC_NONE",
    "IPC_TYPES",
    "IPC_UNIXSOCK",
    "KINDS",
    "KIND_CALLABLE",
    "KIND_FUNCTION",
    "KIND_PROCESS",
    "MAX_MESSAGE_BYTES",
    "MAX_MSG_QUEUE_KEY",
    "MAX_WORKERS",
    "check_flag",
    "check_ipc_type",
    "check_msg_queue_key",
    "check_name",
    "check_worker_num",
    "is_target",
]

EVENT_LOOPS = ("asyncio", "trio")
"""What an async entry runs under (``event_loop``); asyncio is what most libraries need."""

IPC_NONE = "none"
IPC_UNIXSOCK = "unixsock"
IPC_MSGQUEUE = "msgqueue"
IPC_TYPES = frozenset({IPC_NONE, IPC_UNIXSOCK, IPC_MSGQUEUE})
"""The pool-wide IPC modes of seed 003 (``socket`` is deliberately absent)."""

_IPC_SOCKET = "socket"

KIND_FUNCTION = "function"
KIND_PROCESS = "process"
KIND_CALLABLE = "callable"
KINDS = frozenset({KIND_FUNCTION, KIND_PROCESS, KIND_CALLABLE})
"""How a worker turns an entry's address back into something to run (see :mod:`.targets`)."""

MAX_MESSAGE_BYTES = 8192
"""The largest message, in every mode: Linux's default ``msgmax``, far below a datagram's
limit, so an application can switch modes without meeting a new bound. (Here because
both sides size by it: the supervisor's queue and a worker's endpoint.)"""

MAX_MSG_QUEUE_KEY = 0x7FFF_FFFF
"""System V ``key_t`` is a signed 32-bit int; keys above this would not survive the call."""


def check_name(name: object) -> str:
    """Return ``name`` as a plain ``str`` if it is a valid explicit entry name.

    Seed 003: non-empty, case-sensitive, kept whole (no truncation, no normalisation).
    A name that cannot be encoded as UTF-8 (a lone surrogate) is refused too, because
    the generation stores names in UTF-8 JSON.
    """
    if not isinstance(name, str) or not name:
        raise InvalidProcessNameError
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidProcessNameError from None
    return str(name)


def check_worker_num(worker_num: object) -> int:
    """A worker count is an ``int`` (not a ``bool``) between 0 and :data:`MAX_WORKERS`."""
    if type(worker_num) is not int or worker_num < 0:
        raise ProcessArgumentError("a worker count must be a non-negative integer")
    if worker_num > MAX_WORKERS:
        raise ProcessArgumentError("a worker count cannot exceed 1024")
    return worker_num


def check_flag(value: object, *, optional: bool) -> bool | None:
    """A flag is a ``bool``; an override may also be ``None`` (inherit)."""
    if value is None and optional:
        return None
    if type(value) is not bool:
        raise ProcessArgumentError("an async or enabled flag must be a bool")
    return value


def check_ipc_type(ipc_type: object) -> str:
    """One of :data:`IPC_TYPES`; ``socket`` gets its own explanation."""
    if isinstance(ipc_type, str) and ipc_type == _IPC_SOCKET:
        raise ProcessArgumentError(
            "the socket IPC type is not supported: it needs a listen step before start "
            "that this manager does not have"
        )
    if not isinstance(ipc_type, str) or ipc_type not in IPC_TYPES:
        raise ProcessArgumentError("the IPC type must be one of none, unixsock, msgqueue")
    return str(ipc_type)


def check_msg_queue_key(key: object) -> int:
    """An ``int`` (not a ``bool``) from 0 (a private queue) to :data:`MAX_MSG_QUEUE_KEY`."""
    if type(key) is not int or not 0 <= key <= MAX_MSG_QUEUE_KEY:
        raise ProcessArgumentError("the message queue key must be an integer from 0 to 2147483647")
    return key


def is_target(target: object) -> bool:
    """Whether ``target`` has the ``module:qualname`` form, both parts dotted identifiers."""
    if not isinstance(target, str) or target.count(":") != 1:
        return False
    return all(part.isidentifier() for half in target.split(":") for part in half.split("."))
