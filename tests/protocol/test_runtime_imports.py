"""The one import walk every frozen ``module:attr`` address goes through."""

from __future__ import annotations

import os.path

import pytest

from coretsia.worker_protocol.internal.runtime.imports import import_target


def test_module_and_dotted_attribute() -> None:
    assert import_target("os.path:join") is os.path.join
    assert (
        import_target("coretsia.worker_protocol.internal.runtime.imports:import_target.__name__")
        == "import_target"
    )


def test_module_alone() -> None:
    """An entry point may name a module only (``module`` or ``module:``)."""
    assert import_target("os.path") is os.path
    assert import_target("os.path:") is os.path


@pytest.mark.parametrize(
    ("target", "error"),
    [
        (":join", ValueError),
        ("", ValueError),
        ("no_such_module_here:x", ModuleNotFoundError),
        ("os.path:no_such_attribute", AttributeError),
    ],
)
def test_failures_are_the_callers_to_name(target: str, error: type[Exception]) -> None:
    """Raised as they are: each caller maps them to its own reason."""
    with pytest.raises(error):
        import_target(target)
