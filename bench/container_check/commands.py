"""The commands ``docs/deploy`` shows, as the check runs them.

Each is an argv template: ``IMAGE`` and ``CONTAINER`` stand for the names. The docs show
them with ``myapp-workers`` and ``workers`` (``tests/test_deploy_examples.py`` checks they
are there, word for word); the check fills in its own names and adds what this machine
needs after the subcommand (``--network host`` and ``--build-arg BASE=...`` to the build,
a marker variable to ``docker run``). Stdlib only: the test loads this file alone.
"""

from __future__ import annotations

from collections.abc import Sequence

IMAGE = "{image}"
CONTAINER = "{container}"
DIST = "docs/deploy/dist"
"""Where the wheels go: the Dockerfile copies them from there (the context is the root)."""

BUILD_WHEELS = ("uv", "build", "--all-packages", "--wheel", "-o", DIST)
BUILD_IMAGE = ("docker", "build", "-t", IMAGE, "-f", "docs/deploy/Dockerfile", ".")
RUN = ("docker", "run", "-d", "--name", CONTAINER, "--network", "none", IMAGE)
STATUS = ("docker", "exec", CONTAINER, "coretsia-supervisor", "status", "--root", "/app")
HEALTH = ("docker", "exec", CONTAINER, "coretsia-supervisor", "health", "--root", "/app")
STOP = ("docker", "stop", CONTAINER)
KILL = ("docker", "kill", CONTAINER)

DOCUMENTED = (BUILD_WHEELS, BUILD_IMAGE, RUN, STATUS, HEALTH, STOP, KILL)
DOCS_NAMES = {"image": "myapp-workers", "container": "workers"}
"""The names the docs use in place of ``IMAGE`` and ``CONTAINER``."""


def render(template: Sequence[str], names: dict[str, str], extra: Sequence[str] = ()) -> list[str]:
    """``template`` with the names filled in and ``extra`` put after its subcommand."""
    words = [word.format(**names) for word in template]
    return [*words[:2], *extra, *words[2:]]
