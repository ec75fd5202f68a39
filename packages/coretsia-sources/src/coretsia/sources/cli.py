"""``coretsia-sqlite-queue``: add work to a queue database and look at its counts.

::

    coretsia-sqlite-queue enqueue --db var/queue.sqlite3 PAYLOAD...
    printf 'a\\nb\\n' | coretsia-sqlite-queue enqueue --db var/queue.sqlite3
    coretsia-sqlite-queue stats --db var/queue.sqlite3 [--json]

``enqueue`` reads payloads from standard input, one per line (empty lines skipped: a
trailing blank line is almost never meant as a message), when no PAYLOAD is given or in
place of a ``-``. It creates the database if needed; ``stats`` never does (a typo in
``--db`` should say so, not show an empty queue). Errors are one short line on stderr,
never a traceback. Exit status: 0 success, 1 the database could not be used, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from typing import TextIO

from coretsia.sources._version import __version__
from coretsia.sources.sqlite_queue import STATES, QueueError, SqliteQueue

PROG = "coretsia-sqlite-queue"
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


class _UsageError(Exception):
    """A command line that parses but makes no sense."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also what a man page generator would read)."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Add work to a Coretsia SQLite queue and show its counts."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    enqueue = commands.add_parser(
        "enqueue",
        help="add messages",
        description="Add messages; with no PAYLOAD (or for '-') read them from stdin, "
        "one per line.",
    )
    enqueue.add_argument("--db", required=True, metavar="PATH", help="the queue database")
    enqueue.add_argument("payloads", nargs="*", metavar="PAYLOAD", help="a message payload")

    stats = commands.add_parser(
        "stats",
        help="show the count of messages in each state",
        description="Show how many messages are pending, in flight, done and failed.",
    )
    stats.add_argument("--db", required=True, metavar="PATH", help="the queue database")
    stats.add_argument("--json", action="store_true", help="one JSON object, sorted keys")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return (and, as a console script, exit with) its status."""
    args = build_parser().parse_args(argv)  # exits 2 with argparse's usage message
    try:
        if args.command == "enqueue":
            return _enqueue(args.db, args.payloads, sys.stdin, sys.stdout)
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
        print(json.dumps(counts, sort_keys=True, separators=(",", ":")), file=stdout)
    else:
        width = max(map(len, STATES))
        for state in STATES:
            print(f"{state:<{width}}  {counts[state]}", file=stdout)
    return EXIT_OK


def _one_line(error: BaseException) -> str:
    """The error's message on one line (SQLite and OS messages are short already)."""
    text = " ".join(str(error).split())
    return text or type(error).__name__


if __name__ == "__main__":
    sys.exit(main())
