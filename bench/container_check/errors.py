"""The check's two ways to end early, each with a stable reason token."""

from __future__ import annotations


class ContainerCheckError(Exception):
    """A step of the container check went wrong; ``token`` says which (never a message)."""

    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


class EngineUnavailable(ContainerCheckError):
    """No Docker engine can run here: the session is skipped, not failed."""


class CheckFailed(ContainerCheckError):
    """The engine runs, but the image, the pool or a check in it did not do its part."""
