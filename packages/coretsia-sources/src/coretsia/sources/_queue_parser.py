"""The queue commands' argument parsers, and nothing else: the man pages are built from them.

``coretsia-queue`` (:func:`queue_parser`) and its deprecated alias
``coretsia-sqlite-queue`` (:func:`sqlite_parser`) have the same commands; they differ in
how ``--db`` names the queue, and both parse it into a :class:`Database`. This module
imports the standard library only (and the package's version), so that the build hook
(``hatch_build.py``) can load it without the package's dependencies, as argparse-manpage
needs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NamedTuple, Protocol

from coretsia.sources._pg_names import DEFAULT_QUEUE, MAX_QUEUE_NAME, valid_queue_name
from coretsia.sources._version import __version__

SQLITE_PROG = "coretsia-sqlite-queue"
SQLITE_DESCRIPTION = (
    "Deprecated alias of coretsia-queue for an SQLite file (--db PATH): add work to a "
    "Coretsia SQLite queue, show it, and handle failed messages."
)


QUEUE_PROG = "coretsia-queue"
QUEUE_DESCRIPTION = (
    "Add work to a Coretsia queue (SQLite or PostgreSQL), show it, and handle failed messages."
)
_SQLITE = "sqlite:///"


class _Subcommands(Protocol):
    """What :func:`_command` uses of ``add_subparsers()``'s result (its class is private)."""

    def add_parser(self, name: str, *, help: str, description: str) -> argparse.ArgumentParser: ...


_POSTGRES = ("postgresql://", "postgres://")


class Database(NamedTuple):
    """A parsed ``--db``: the backend and where (a path, or a libpq URI: a secret)."""

    backend: str
    target: str

    def __repr__(self) -> str:  # argparse or a traceback must never show a URI
        return f"Database({self.backend!r})"


def database_url(text: str) -> Database:
    """An argparse type: ``sqlite:///PATH`` or a ``postgresql://`` URI; never echoed."""
    if text.startswith(_SQLITE) and len(text) > len(_SQLITE):
        return Database("sqlite", text[len(_SQLITE) :])
    if text.startswith(_POSTGRES):
        return Database("postgres", text)
    raise argparse.ArgumentTypeError(
        "not a queue URL: give sqlite:///PATH, sqlite:////ABSOLUTE/PATH or postgresql://..."
    )


def queue_name(text: str) -> str:
    """An argparse type: a queue name (1 to 40 of ``A-Z a-z 0-9 _ . -``)."""
    if not valid_queue_name(text):
        raise argparse.ArgumentTypeError(
            f"a queue name is 1 to {MAX_QUEUE_NAME} characters of A-Z a-z 0-9 _ . -"
        )
    return text


def _url_db(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--db",
        required=True,
        type=database_url,
        metavar="URL",
        help="the queue database: sqlite:///PATH or postgresql://...",
    )
    command.add_argument(
        "--queue",
        type=queue_name,
        default=DEFAULT_QUEUE,
        metavar="NAME",
        help=f"the queue (PostgreSQL: several share a database; default {DEFAULT_QUEUE})",
    )


def sqlite_parser() -> argparse.ArgumentParser:
    """``coretsia-sqlite-queue``'s parser: ``--db PATH``, an SQLite file."""
    return build_parser(SQLITE_PROG, SQLITE_DESCRIPTION, _sqlite_db)


def queue_parser() -> argparse.ArgumentParser:
    """``coretsia-queue``'s parser: ``--db URL`` (either backend) and ``--queue NAME``."""
    return build_parser(QUEUE_PROG, QUEUE_DESCRIPTION, _url_db)


def build_parser(
    prog: str, description: str, add_db: Callable[[argparse.ArgumentParser], None]
) -> argparse.ArgumentParser:
    """A queue command's parser; ``add_db`` adds the options naming the queue to each
    command."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    enqueue = _command(
        commands,
        add_db,
        "enqueue",
        "add messages",
        "Add messages; with no PAYLOAD (or for '-') read them from stdin, one per line.",
    )
    enqueue.add_argument("payloads", nargs="*", metavar="PAYLOAD", help="a message payload")
    _command(
        commands,
        add_db,
        "stats",
        "show the count of messages in each state",
        "Show how many messages are pending, in flight, done and failed.",
        json_help="one JSON object, sorted keys",
    )
    _command(
        commands,
        add_db,
        "failed",
        "list the messages that failed for good",
        "List failed messages: id, attempts, failure time (UTC) and last error; never the payload.",
        json_help="one JSON array of objects",
    )
    retry = _command(
        commands,
        add_db,
        "retry",
        "put failed messages back to pending",
        "Put failed messages back to pending, attempts reset to 0. Ids that are unknown or "
        "not failed are reported on stderr (exit 1); the others are retried.",
    )
    retry.add_argument("ids", nargs="*", type=_message_id, metavar="ID", help="a message id")
    retry.add_argument("--all", action="store_true", help="every failed message")
    purge = _command(
        commands,
        add_db,
        "purge",
        "delete done or failed messages",
        "Delete every done (or failed) message; print how many.",
    )
    which = purge.add_mutually_exclusive_group(required=True)
    which.add_argument("--done", action="store_const", const="done", dest="state")
    which.add_argument("--failed", action="store_const", const="failed", dest="state")
    _command(
        commands,
        add_db,
        "check",
        "check that the queue is sound",
        "Run SQLite's integrity check and the schema check (PostgreSQL: the schema check). "
        "Print 'ok' and exit 0, or print a token (queue-corrupt, queue-full, "
        "queue-schema-invalid, queue-unavailable) on stderr and exit 1.",
    )
    recover = _command(
        commands,
        add_db,
        "recover",
        "copy what can be read of a damaged SQLite queue into a new file",
        "Copy every readable message (id, state, attempts, last error kept) of a damaged "
        "SQLite queue into a new queue file; the damaged file is only read. Print the "
        "counts; the ids that could not be read go to stderr (exit 1).",
    )
    recover.add_argument(
        "--to", required=True, metavar="PATH", help="the new queue file (must not exist)"
    )
    return parser


def _command(
    commands: _Subcommands,
    add_db: Callable[[argparse.ArgumentParser], None],
    name: str,
    summary: str,
    description: str,
    *,
    json_help: str | None = None,
) -> argparse.ArgumentParser:
    """A subcommand; every one works on the queue named by the options ``add_db`` adds.

    ``json_help`` gives it a ``--json`` flag (machine-readable output), so described.
    """
    command = commands.add_parser(name, help=summary, description=description)
    add_db(command)
    if json_help is not None:
        command.add_argument("--json", action="store_true", help=json_help)
    return command


def _sqlite_db(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--db", required=True, type=sqlite_path, metavar="PATH", help="the queue database"
    )
    command.set_defaults(queue=DEFAULT_QUEUE)


def sqlite_path(text: str) -> Database:
    """An argparse type: the alias's ``--db``, an SQLite file's path."""
    return Database("sqlite", text)


_MAX_ID = 2**63 - 1
"""The largest id SQLite (a signed 64-bit INTEGER) and PostgreSQL (a bigint) can hold."""


def _message_id(text: str) -> int:
    """An argparse type: an id from 1 to ``_MAX_ID`` (anything else is a usage error)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= _MAX_ID:
        raise argparse.ArgumentTypeError(f"not a message id: {text!r} (ids are 1 to {_MAX_ID})")
    return value
