"""The Docker client, pointed at one engine, every call bounded in time."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

from container_check.errors import CheckFailed


class Docker:
    """Runs ``docker`` against the engine at ``host`` (a ``DOCKER_HOST`` address)."""

    def __init__(self, client: str, host: str) -> None:
        self.client = client
        self.host = host

    @property
    def env(self) -> dict[str, str]:
        """The environment of every call: this engine, and the legacy builder's output."""
        return {**os.environ, "DOCKER_HOST": self.host}

    def argv(self, words: Sequence[str]) -> list[str]:
        """A rendered command (``docker ...``) with this client's path in front."""
        assert words[0] == "docker", words
        return [self.client, *words[1:]]

    def run(
        self, words: Sequence[str], *, timeout: float, token: str, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run ``docker ...`` to its end; ``CheckFailed(token)`` if it fails or overruns.

        On a failure the command's own error output goes to stderr: this is a
        developer's session, and Docker's words are what says why.
        """
        try:
            done = subprocess.run(
                self.argv(words),
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise CheckFailed(f"{token}-timed-out") from exc
        if check and done.returncode != 0:
            sys.stderr.write(done.stderr[-2000:])
            raise CheckFailed(token)
        return done

    def answers(self) -> bool:
        """True if an engine answers at this address (within 10 s)."""
        try:
            done = subprocess.run(
                [self.client, "version", "--format", "{{.Server.Version}}"],
                env=self.env,
                capture_output=True,
                timeout=10,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0

    def server_version(self) -> str:
        """The engine's version string."""
        done = self.run(
            ("docker", "version", "--format", "{{.Server.Version}}"),
            timeout=30,
            token="engine-version",
        )
        return done.stdout.strip()

    def image_exists(self, tag: str) -> bool:
        """True if the engine holds an image tagged ``tag``."""
        done = self.run(
            ("docker", "image", "inspect", tag), timeout=30, token="image-inspect", check=False
        )
        return done.returncode == 0

    def inspect(self, container: str, template: str) -> str:
        """One field of a container's state (``docker inspect -f``)."""
        done = self.run(
            ("docker", "inspect", "-f", template, container), timeout=30, token="inspect"
        )
        return done.stdout.strip()
