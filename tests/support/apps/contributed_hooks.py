"""Hooks an installed distribution contributes (``coretsia.worker.hooks`` entries).

Built into fixture wheels by the lifecycle source tests; each wheel registers only some
of them: the good ones, one of no known kind (``during``) or one that is not callable
(``inert``). The good ones log one ``unit <pid> <word>`` line each to ``events.log``.
"""

import os


def _log(word):
    fd = os.open("events.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"unit {os.getpid()} {word}\n".encode())
    finally:
        os.close(fd)


def before_a():
    _log("contributed-before-a")


def before_b():
    _log("contributed-before-b")


def after():
    _log("contributed-after")


def reset():
    _log("contributed-reset")


def during():
    pass


# The SPI's declaration of each hook's kind: an attribute of the function.
before_a.kind = "before"  # type: ignore[attr-defined]
before_b.kind = "before"  # type: ignore[attr-defined]
after.kind = "after"  # type: ignore[attr-defined]
reset.kind = "reset"  # type: ignore[attr-defined]
during.kind = "during"  # type: ignore[attr-defined]  # no such kind


class _Inert:
    kind = "before"


inert = _Inert()
"""A hook entry of a known kind that cannot be called."""
