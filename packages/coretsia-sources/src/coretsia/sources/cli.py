"""``coretsia-sqlite-queue``: add work to a queue database, look at it, handle failures.

::

    coretsia-sqlite-queue enqueue --db var/queue.sqlite3 PAYLOAD...
    printf 'a\\nb\\n' | coretsia-sqlite-queue enqueue --db var/queue.sqlite3
    coretsia-sqlite-queue stats --db var/queue.sqlite3 [--json]
    coretsia-sqlite-queue failed --db var/queue.sqlite3 [--json]
    coretsia-sqlite-queue retry --db var/queue.sqlite3 (ID... | --all)
    coretsia-sqlite-queue purge --db var/queue.sqlite3 (--done | --failed)

``enqueue`` reads payloads from standard input, one per line (empty lines skipped: a
trailing blank line is almost never meant as a message), when no PAYLOAD is given or in
place of a ``-``. It creates the database if needed (privately: ``0600``, new
directories ``0700``); the other commands never do (a typo in ``--db`` should say so,
not show an empty queue).

``failed`` lists the messages that failed for good: id, attempts, when they failed
(ISO 8601, UTC) and ``last_error``; never a payload (payloads are application data, and
this output ends up in terminals, tickets and chat). ``retry`` puts failed messages back
to pending with their attempts reset; an id that is unknown or not failed is named on
stderr and the command exits 1, but the other ids are still retried (one bad id in a
pasted list should not hold back the rest; the exit status still tells a script that
something was off). ``purge`` deletes every done (or failed) message and prints the count.

Errors are one short line on stderr, never a traceback. Exit status: 0 success, 1 the
database could not be used (or some ``retry`` ids were refused), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import Literal, TextIO

from coretsia.sources._version import __version__
from coretsia.sources.sqlite_queue import STATES, FailedMessage, QueueError, SqliteQueue

PROG = "coretsia-sqlite-queue"
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


class _UsageError(Exception):
    """A command line that parses but makes no sense."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also what a man page generator would read)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Add work to a Coretsia SQLite queue, show it, and handle failed messages.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    enqueue = _command(
        commands,
        "enqueue",
        "add messages",
        "Add messages; with no PAYLOAD (or for '-') read them from stdin, one per line.",
    )
    enqueue.add_argument("payloads", nargs="*", metavar="PAYLOAD", help="a message payload")
    _command(
        commands,
        "stats",
        "show the count of messages in each state",
        "Show how many messages are pending, in flight, done and failed.",
        json_help="one JSON object, sorted keys",
    )
    _command(
        commands,
        "failed",
        "list the messages that failed for good",
        "List failed messages: id, attempts, failure time (UTC) and last error; never the payload.",
        json_help="one JSON array of objects",
    )
    retry = _command(
        commands,
        "retry",
        "put failed messages back to pending",
        "Put failed messages back to pending, attempts reset to 0. Ids that are unknown or "
        "not failed are reported on stderr (exit 1); the others are retried.",
    )
    retry.add_argument("ids", nargs="*", type=_message_id, metavar="ID", help="a message id")
    retry.add_argument("--all", action="store_true", help="every failed message")
    purge = _command(
        commands,
        "purge",
        "delete done or failed messages",
        "Delete every done (or failed) message; print how many.",
    )
    which = purge.add_mutually_exclusive_group(required=True)
    which.add_argument("--done", action="store_const", const="done", dest="state")
    which.add_argument("--failed", action="store_const", const="failed", dest="state")
    return parser


def _command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    summary: str,
    description: str,
    *,
    json_help: str | None = None,
) -> argparse.ArgumentParser:
    """A subcommand; every one works on the database named by ``--db``.

    ``json_help`` gives it a ``--json`` flag (machine-readable output), so described.
    """
    command = commands.add_parser(name, help=summary, description=description)
    command.add_argument("--db", required=True, metavar="PATH", help="the queue database")
    if json_help is not None:
        command.add_argument("--json", action="store_true", help=json_help)
    return command


_MAX_ID = 2**63 - 1
"""The largest id SQLite can hold (a signed 64-bit INTEGER): a larger one cannot be bound."""


def _message_id(text: str) -> int:
    """An argparse type: an id from 1 to ``_MAX_ID`` (anything else is a usage error)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= _MAX_ID:
        raise argparse.ArgumentTypeError(f"not a message id: {text!r} (ids are 1 to {_MAX_ID})")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return (and, as a console script, exit with) its status."""
    args = build_parser().parse_args(argv)  # exits 2 with argparse's usage message
    try:
        if args.command == "enqueue":
            return _enqueue(args.db, args.payloads, sys.stdin, sys.stdout)
        if args.command == "failed":
            return _failed(args.db, sys.stdout, as_json=args.json)
        if args.command == "retry":
            return _retry(args.db, args.ids, sys.stdout, sys.stderr, every=args.all)
        if args.command == "purge":
            return _purge(args.db, args.state, sys.stdout)
        return _stats(args.db, sys.stdout, as_json=args.json)
    except _UsageError as error:
        print(f"{PROG}: usage error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (QueueError, sqlite3.Error, OSError, UnicodeError, ValueError) as error:
        print(f"{PROG}: error: {_one_line(error)}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:  # nothing half-written: an enqueue is one transaction
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_FAILURE


def _enqueue(db: str, payloads: list[str], stdin: TextIO, stdout: TextIO) -> int:
    if payloads.count("-") > 1:
        raise _UsageError("'-' (read stdin) may be given once")
    batch = list(_expand(payloads or ["-"], stdin))
    with SqliteQueue(db) as queue:
        count = queue.enqueue(batch)
    print(f"enqueued {count}", file=stdout)
    return EXIT_OK


def _expand(payloads: list[str], stdin: TextIO) -> Iterator[str]:
    for payload in payloads:
        if payload == "-":
            yield from (line.rstrip("\r\n") for line in stdin if line.rstrip("\r\n"))
        else:
            yield payload


def _stats(db: str, stdout: TextIO, *, as_json: bool) -> int:
    with SqliteQueue(db, create=False) as queue:
        counts = queue.stats()
    if as_json:
        _print_json(counts, stdout)
    else:
        width = max(map(len, STATES))
        for state in STATES:
            print(f"{state:<{width}}  {counts[state]}", file=stdout)
    return EXIT_OK


def _failed(db: str, stdout: TextIO, *, as_json: bool) -> int:
    with SqliteQueue(db, create=False) as queue:
        messages = queue.failed()
    if as_json:
        rows = [
            {
                "id": m.id,
                "attempts": m.attempts,
                "settled_at": _utc(m.settled_at),
                "last_error": m.last_error,
            }
            for m in messages
        ]
        _print_json(rows, stdout)
        return EXIT_OK
    for m in messages:
        print(_failed_line(m), file=stdout)
    return EXIT_OK


def _failed_line(message: FailedMessage) -> str:
    """``ID  ATTEMPTS  TIME  ERROR``; the error made printable (it may hold anything)."""
    error = "" if message.last_error is None else _printable(message.last_error)
    return f"{message.id}\t{message.attempts}\t{_utc(message.settled_at) or '-'}\t{error}"


def _retry(db: str, ids: list[int], stdout: TextIO, stderr: TextIO, *, every: bool) -> int:
    if every == bool(ids):
        raise _UsageError("give message ids or --all, not both and not neither")
    with SqliteQueue(db, create=False) as queue:
        result = queue.retry("all" if every else ids)
    print(f"retried {result.retried}", file=stdout)
    for message_id in result.unknown:
        print(f"{PROG}: error: no message {message_id}", file=stderr)
    for message_id in result.not_failed:
        print(f"{PROG}: error: message {message_id} is not failed", file=stderr)
    return EXIT_FAILURE if result.unknown or result.not_failed else EXIT_OK


def _purge(db: str, state: Literal["done", "failed"], stdout: TextIO) -> int:
    with SqliteQueue(db, create=False) as queue:
        count = queue.purge(state)
    print(f"purged {count}", file=stdout)
    return EXIT_OK


def _print_json(value: object, stdout: TextIO) -> None:
    """One line of compact JSON, keys sorted: the same bytes for the same answer."""
    print(json.dumps(value, sort_keys=True, separators=(",", ":")), file=stdout)


def _utc(timestamp: float | None) -> str | None:
    """ISO 8601 in UTC with a ``Z``: one unambiguous form for people and scripts."""
    if timestamp is None:
        return None
    moment = datetime.fromtimestamp(timestamp, tz=timezone.utc)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _printable(text: str) -> str:
    """One line, no control characters: an error text must not drive the terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _one_line(error: BaseException) -> str:
    """The error's message on one line (SQLite and OS messages are short already)."""
    text = " ".join(str(error).split())
    return text or type(error).__name__


if __name__ == "__main__":
    sys.exit(main())
