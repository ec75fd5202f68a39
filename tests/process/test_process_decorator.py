"""The ``@process`` decorator itself: it records the raw declaration on the class and returns
the class unchanged, and refuses a bad argument, a function, or a second declaration at once.
"""

from __future__ import annotations

from typing import Any

import pytest
from process_work import loaded_work

from coretsia.supervisor.process import (
    InvalidProcessNameError,
    ProcessArgumentError,
    ProcessDeclaration,
    ProcessTargetError,
    process,
)
from coretsia.supervisor.process_entries.decorator import DECLARATION_ATTRIBUTE, declaration_of


class TestDecorator:
    def test_bare_and_called_forms_store_the_raw_declaration(self) -> None:
        """``@process`` and ``@process()`` store the defaults; None stays None."""

        @process
        class Bare:
            pass

        @process()
        class Called:
            pass

        assert declaration_of(Bare) == ProcessDeclaration(None, 1, None)
        assert declaration_of(Called) == ProcessDeclaration(None, 1, None)

    def test_none_is_kept_distinct_from_false(self) -> None:
        """An explicit False is recorded as False, not folded into None."""

        @process(name="n", workers=3, enable_async=False)
        class Explicit:
            pass

        declaration = vars(Explicit)[DECLARATION_ATTRIBUTE]
        assert declaration.enable_async is False
        assert (declaration.name, declaration.workers) == ("n", 3)

    def test_decorator_returns_the_class_unchanged(self) -> None:
        """The decorator only records; it returns the same class."""

        class Plain:
            pass

        assert process(name="x")(Plain) is Plain

    @pytest.mark.parametrize(
        ("kwargs", "error"),
        [
            ({"name": ""}, InvalidProcessNameError),
            ({"workers": -1}, ProcessArgumentError),
            ({"workers": 1025}, ProcessArgumentError),
            ({"workers": True}, ProcessArgumentError),
            ({"enable_async": 1}, ProcessArgumentError),
        ],
    )
    def test_invalid_arguments_fail_at_decoration(self, kwargs: Any, error: type) -> None:
        """A bad declaration fails when the module is imported, not at start."""
        with pytest.raises(error):
            process(**kwargs)

    def test_decorating_a_function_is_refused(self) -> None:
        """``@process`` is a class decorator."""
        with pytest.raises(ProcessTargetError):
            process()(loaded_work)  # type: ignore[type-var]

    def test_decorating_twice_is_refused(self) -> None:
        """A class has one declaration."""

        @process
        class Once:
            pass

        with pytest.raises(ProcessTargetError):
            process(name="again")(Once)
