"""The command line of ``coretsia-supervisor``, as one argparse parser.

It lives alone in a module that imports only :mod:`argparse` because two very different
callers need it: the CLI itself, whose ``status``/``health`` commands are Kubernetes exec
probes and must start fast, and argparse-manpage, which imports this module to build the
man page so that the page can never drift from ``--help``.
"""

from __future__ import annotations

import argparse

from coretsia.supervisor.shared._version import __version__

PROG = "coretsia-supervisor"

DESCRIPTION = (
    "Run and operate a supervised pool of long-lived Python workers: one fenced worker "
    "generation at a time, real readiness, bounded shutdown, authenticated control."
)

EPILOG = (
    "exit codes: 0 ok (running, healthy, stopped); 1 failure (pool failed, unhealthy); "
    "2 usage; 3 not running; 4 status unknown (communication failure); "
    "6 configuration invalid. Each command's --help lists the ones it returns."
)

_USAGE = (2, "usage: a bad command line")
_NO_ROOT = (6, "--root is not a directory")
_PROBE_CODES = (
    (3, "not running: no generation holds the root's lock"),
    (4, "status unknown: the lock is held but the supervisor cannot be reached or trusted"),
)

COMMAND_EXIT_CODES: dict[str, tuple[tuple[int, str], ...]] = {
    "start": (
        (0, "the pool ran and stopped cleanly"),
        (
            1,
            "the pool failed or could not start (already running, a runtime entrypoint "
            "unavailable, this platform runs no pool...)",
        ),
        _USAGE,
        (6, "configuration invalid (an unavailable driver included), or --root is not a directory"),
        (8, "the pool stopped, but a worker had to be sent SIGTERM or SIGKILL (a task cut short)"),
    ),
    "stop": (
        (0, "stopped: every worker gone, the lock free"),
        (1, "the shutdown failed, or a killed generation is still draining"),
        _USAGE,
        *_PROBE_CODES,
        _NO_ROOT,
    ),
    "status": (
        (0, "a supervisor answered"),
        (1, "a killed generation is still draining"),
        _USAGE,
        *_PROBE_CODES,
        _NO_ROOT,
    ),
    "health": (
        (0, "healthy"),
        (1, "unhealthy, or a killed generation is still draining"),
        _USAGE,
        *_PROBE_CODES,
        _NO_ROOT,
    ),
}
"""Every exit status each command can end with, shown by its ``--help`` (and the man
page); ``docs/operations.md``'s exit-code table says the same (a test compares them).
Any command also ends with 1 on a platform that runs no pool."""


def _epilog(command: str) -> str:
    codes = "; ".join(f"{code} {meaning}" for code, meaning in COMMAND_EXIT_CODES[command])
    return f"exit codes: {codes}."


def _add_root(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--root",
        metavar="DIR",
        default=".",
        help="project root holding coretsia.toml and var/ (default: the working directory)",
    )


def _add_json(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--json",
        action="store_true",
        help="print one line of deterministic JSON with safe fields only",
    )


def build_parser() -> argparse.ArgumentParser:
    """Build the parser; argparse-manpage calls this too (see module docstring)."""
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    start = commands.add_parser(
        "start",
        epilog=_epilog("start"),
        help="start the pool in the foreground and supervise it until it is stopped",
        description="Validate the configuration, claim the generation lock, spawn every "
        "worker, wait until all are ready, then serve status/health/stop until shutdown.",
    )
    _add_root(start)
    start.add_argument(
        "--log-format",
        choices=("auto", "json", "text"),
        default="auto",
        help="log lines on stderr: JSON, readable text, or auto (JSON unless a terminal)",
    )
    start.add_argument(
        "--config",
        metavar="FILE",
        default=None,
        help="configuration file relative to the root (default: coretsia.toml)",
    )

    stop = commands.add_parser(
        "stop",
        epilog=_epilog("stop"),
        help="stop the running pool and wait until every worker is gone",
        description="Ask the running supervisor to stop; returns after the terminal "
        "'stopped' answer, when every worker has exited and the lock is free.",
    )
    _add_root(stop)
    _add_json(stop)

    status = commands.add_parser(
        "status",
        epilog=_epilog("status"),
        help="print the live state of the pool (exit 0 running, 3 not running)",
        description="Ask the running supervisor for its live state. Finds it through the "
        "lock and the private locator only; never reads the configuration.",
    )
    _add_root(status)
    _add_json(status)

    health = commands.add_parser(
        "health",
        epilog=_epilog("health"),
        help="print whether the pool is healthy (exit 0 healthy, 1 unhealthy)",
        description="Healthy means running, every worker ready, no failure pending.",
    )
    _add_root(health)
    _add_json(health)
    return parser
