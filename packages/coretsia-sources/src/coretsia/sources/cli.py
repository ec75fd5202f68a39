"""``coretsia-queue``: add work to a queue (SQLite or PostgreSQL), look at it, handle failures.

::

    coretsia-queue enqueue --db URL [--queue NAME] PAYLOAD...
    printf 'a\\nb\\n' | coretsia-queue enqueue --db sqlite:///var/queue.sqlite3
    coretsia-queue stats --db URL [--queue NAME] [--json]
    coretsia-queue failed --db URL [--queue NAME] [--json]
    coretsia-queue retry --db URL [--queue NAME] (ID... | --all)
    coretsia-queue purge --db URL [--queue NAME] (--done | --failed)
    coretsia-queue check --db URL [--queue NAME]
    coretsia-queue recover --db sqlite:///PATH --to NEW_PATH

``URL`` names the backend: ``sqlite:///relative/path`` or ``sqlite:////absolute/path``
(SQLAlchemy's convention: the path is what follows the third slash), or a libpq URI,
``postgresql://...`` (``postgres://`` too), including the socket form
``postgresql:///dbname?host=/socket/dir&user=name``. A password is better left to the
``PGPASSWORD`` or ``PGPASSFILE`` environment variables than written on a command line that
``ps`` shows; the URL is never echoed, in an error or elsewhere. ``stats --json`` has the
keys ``pending``, ``in_flight``, ``done`` and ``failed`` for both backends. An SQLite file
holds one queue: ``--queue`` other than ``default`` is for PostgreSQL only.

``coretsia-sqlite-queue`` is the same commands with ``--db PATH`` (an SQLite file, no
``--queue``): a deprecated alias, kept for a release, that says so in one line on stderr
before anything else.

``enqueue`` reads payloads from standard input, one per line (empty lines skipped: a
trailing blank line is almost never meant as a message), when no PAYLOAD is given or in
place of a ``-``. It creates the queue if needed (SQLite: the file, privately: ``0600``,
new directories ``0700``; PostgreSQL: the tables and migration table); the other commands
never do (a typo in ``--db`` should say so, not show an empty queue).

``failed`` lists the messages that failed for good: id, attempts, when they failed
(ISO 8601, UTC) and ``last_error``; never a payload (payloads are application data, and
this output ends up in terminals, tickets and chat). ``retry`` puts failed messages back
to pending with their attempts reset; an id that is unknown or not failed is named on
stderr and the command exits 1, but the other ids are still retried (one bad id in a
pasted list should not hold back the rest; the exit status still tells a script that
something was off). ``purge`` deletes every done (or failed) message and prints the count.

``check`` runs SQLite's ``integrity_check`` (PostgreSQL: nothing more) and the schema
check and prints ``ok``; a queue that is not sound is one token on stderr,
``CHECK: TOKEN (detail)``, and exit 1: ``queue-corrupt`` (damaged, or not a database),
``queue-full`` (no space left), ``queue-schema-invalid`` (not a queue, or another schema
version), ``queue-unavailable`` (missing, or cannot be opened). ``recover`` copies every
readable message of a damaged SQLite queue into a new file
(:mod:`coretsia.sources._queue_salvage` says which can be saved); the ids it could not
read are named on stderr and it exits 1, as ``retry`` does.

Errors are one short line on stderr, never a traceback. Exit status: 0 success, 1 the
database could not be used (or some ``retry`` ids were refused), 2 usage.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Literal, Protocol, TextIO

from coretsia.sources._pg_names import DEFAULT_QUEUE
from coretsia.sources._queue_health import fault
from coretsia.sources._queue_maintenance import STATES
from coretsia.sources._queue_parser import SQLITE_PROG, Database, queue_parser, sqlite_parser
from coretsia.sources._queue_records import FailedMessage, QueueError, Retried
from coretsia.sources._queue_salvage import salvage
from coretsia.sources.sqlite_queue import SqliteQueue

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """A command line that parses but makes no sense."""


class OperatorQueue(Protocol):
    """What the commands use of a queue; the SQLite and the PostgreSQL queue both are one."""

    def enqueue(self, payloads: Iterable[str]) -> int: ...

    def stats(self) -> dict[str, int]: ...

    def failed(self) -> list[FailedMessage]: ...

    def retry(self, ids: Iterable[int] | Literal["all"]) -> Retried: ...

    def purge(self, state: Literal["done", "failed"]) -> int: ...

    def verify(self) -> None: ...

    def close(self) -> None: ...


Opener = Callable[[argparse.Namespace, bool], OperatorQueue]
"""Opens the queue the parsed command line names; the flag: create it if missing."""


build_parser = queue_parser
"""``coretsia-queue``'s argument parser (also what its man page is made from)."""
DEPRECATED_ALIAS = (
    f"{SQLITE_PROG}: deprecated: use coretsia-queue --db sqlite:///PATH (the same commands); "
    "this alias goes in a later release"
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return (and, as a console script, exit with) its status."""
    return run(queue_parser(), open_queue, argv)


def sqlite_alias_main(argv: Sequence[str] | None = None) -> int:
    """``coretsia-sqlite-queue``: the deprecated alias (``--db PATH``), after its note."""
    print(DEPRECATED_ALIAS, file=sys.stderr)
    return run(sqlite_parser(), open_queue, argv)


def open_queue(args: argparse.Namespace, create: bool) -> OperatorQueue:
    """The queue ``--db`` and ``--queue`` name; psycopg is imported for PostgreSQL only."""
    db: Database = args.db
    if db.backend == "sqlite":
        if args.queue != DEFAULT_QUEUE:
            raise UsageError("an SQLite file holds one queue: --queue is for PostgreSQL")
        return SqliteQueue(db.target, create=create)
    try:
        # deferred: optional extra
        from coretsia.sources.postgres_queue import PostgresQueue
    except ImportError:
        raise UsageError(
            "PostgreSQL needs the extra: pip install 'coretsia-sources[postgres]'"
        ) from None
    return PostgresQueue(db.target, args.queue, create=create)


def run(parser: argparse.ArgumentParser, opener: Opener, argv: Sequence[str] | None) -> int:
    """Parse ``argv`` with ``parser`` and run the command on the queue ``opener`` opens.

    Errors are one line on stderr under the parser's ``prog``; the database's own
    messages are the queue's :class:`QueueError` (the PostgreSQL queue's never name the
    server or the connection string).
    """
    prog = parser.prog
    args = parser.parse_args(argv)  # exits 2 with argparse's usage message

    def open_queue(*, create: bool) -> OperatorQueue:
        return opener(args, create)

    try:
        if args.command == "enqueue":
            return _enqueue(open_queue, args.payloads, sys.stdin, sys.stdout)
        if args.command == "failed":
            return _failed(open_queue, sys.stdout, as_json=args.json)
        if args.command == "retry":
            return _retry(open_queue, args.ids, sys.stdout, sys.stderr, prog, every=args.all)
        if args.command == "purge":
            return _purge(open_queue, args.state, sys.stdout)
        if args.command == "check":
            return _check(open_queue, _sqlite_path(args), sys.stdout, sys.stderr, prog)
        if args.command == "recover":
            return _recover(_sqlite_path(args), args.to, sys.stdout, sys.stderr, prog)
        return _stats(open_queue, sys.stdout, as_json=args.json)
    except UsageError as error:
        print(f"{prog}: usage error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (QueueError, sqlite3.Error, OSError, UnicodeError, ValueError) as error:
        print(f"{prog}: error: {_one_line(error)}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:  # nothing half-written: an enqueue is one transaction
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_FAILURE


class Open(Protocol):
    """Opens the command's queue; ``create``: create it (or its schema) if missing."""

    def __call__(self, *, create: bool) -> OperatorQueue: ...


def _enqueue(open_queue: Open, payloads: list[str], stdin: TextIO, stdout: TextIO) -> int:
    if payloads.count("-") > 1:
        raise UsageError("'-' (read stdin) may be given once")
    batch = list(_expand(payloads or ["-"], stdin))
    with contextlib.closing(open_queue(create=True)) as queue:
        count = queue.enqueue(batch)
    print(f"enqueued {count}", file=stdout)
    return EXIT_OK


def _expand(payloads: list[str], stdin: TextIO) -> Iterator[str]:
    for payload in payloads:
        if payload == "-":
            yield from (line.rstrip("\r\n") for line in stdin if line.rstrip("\r\n"))
        else:
            yield payload


def _stats(open_queue: Open, stdout: TextIO, *, as_json: bool) -> int:
    with contextlib.closing(open_queue(create=False)) as queue:
        counts = queue.stats()
    if as_json:
        _print_json(counts, stdout)
    else:
        width = max(map(len, STATES))
        for state in STATES:
            print(f"{state:<{width}}  {counts[state]}", file=stdout)
    return EXIT_OK


def _failed(open_queue: Open, stdout: TextIO, *, as_json: bool) -> int:
    with contextlib.closing(open_queue(create=False)) as queue:
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


def _retry(
    open_queue: Open, ids: list[int], stdout: TextIO, stderr: TextIO, prog: str, *, every: bool
) -> int:
    if every == bool(ids):
        raise UsageError("give message ids or --all, not both and not neither")
    with contextlib.closing(open_queue(create=False)) as queue:
        result = queue.retry("all" if every else ids)
    print(f"retried {result.retried}", file=stdout)
    for message_id in result.unknown:
        print(f"{prog}: error: no message {message_id}", file=stderr)
    for message_id in result.not_failed:
        print(f"{prog}: error: message {message_id} is not failed", file=stderr)
    return EXIT_FAILURE if result.unknown or result.not_failed else EXIT_OK


def _purge(open_queue: Open, state: Literal["done", "failed"], stdout: TextIO) -> int:
    with contextlib.closing(open_queue(create=False)) as queue:
        count = queue.purge(state)
    print(f"purged {count}", file=stdout)
    return EXIT_OK


def _sqlite_path(args: argparse.Namespace) -> str | None:
    """The SQLite file ``--db`` names; None for PostgreSQL."""
    db: Database = args.db
    return db.target if db.backend == "sqlite" else None


def _check(open_queue: Open, path: str | None, stdout: TextIO, stderr: TextIO, prog: str) -> int:
    try:
        with contextlib.closing(open_queue(create=False)) as queue:
            queue.verify()
    except (QueueError, sqlite3.Error, OSError) as error:
        token = error.token if isinstance(error, QueueError) else "queue-unavailable"
        kind = None if path is None else fault(error, path)
        if kind is not None:
            token = f"queue-{kind}"
        print(f"{prog}: check: {token} ({_one_line(error)})", file=stderr)
        return EXIT_FAILURE
    print("ok", file=stdout)
    return EXIT_OK


def _recover(path: str | None, target: str, stdout: TextIO, stderr: TextIO, prog: str) -> int:
    if path is None:
        raise UsageError("recover copies an SQLite queue; PostgreSQL keeps its own storage")
    result = salvage(path, target)
    counts = ", ".join(f"{state} {result.saved[state]}" for state in STATES)
    print(f"saved {sum(result.saved.values())} ({counts})", file=stdout)
    if result.unreadable:
        print(
            f"{prog}: error: {len(result.unreadable)} messages could not be read: ids "
            f"{_ranges(result.unreadable)}",
            file=stderr,
        )
        return EXIT_FAILURE
    return EXIT_OK


def _ranges(ids: list[int]) -> str:
    """Sorted ids as ``1-3,7``: a damaged page loses a run of neighbours."""
    runs: list[list[int]] = []
    for message_id in ids:
        if runs and message_id == runs[-1][1] + 1:
            runs[-1][1] = message_id
        else:
            runs.append([message_id, message_id])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


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
