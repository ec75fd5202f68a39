"""The one record base (``records.Frozen``) and the codec built on its declarations.

Every frame, the state and locator files, the process snapshot and the guardian's spawn
requests are declared on this base, so what it promises is tested once here: the
constructor, immutability, value semantics, secrets kept out of ``repr``, pickling, and
that a frame class must declare a kind for every field before a codec accepts it.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys

import pytest

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol._codec import Codec, Frame, Spread
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import LocalProtocolError
from coretsia.worker_protocol.internal import guardian as g
from coretsia.worker_protocol.records import Frozen, field
from coretsia.worker_protocol.worker_channel import Retiring, TaskFailed

SECRET = "sk_live_TOPSECRET_0451"


class Point(Frozen):
    x: int
    y: int = 0
    key: str = field(default="", secret=True)


class Named(Frozen, kw_only=True):
    name: str
    size: int = 1


class TestConstructor:
    def test_positional_and_keyword(self) -> None:
        """Fields are taken positionally in declaration order, or by name."""
        assert Point(1, 2) == Point(x=1, y=2) == Point(1, y=2)

    def test_defaults(self) -> None:
        """A field left out takes its default."""
        assert (Point(1).y, Point(1).key) == (0, "")

    @pytest.mark.parametrize(
        "build",
        [
            lambda: Point(),  # type: ignore[call-arg]
            lambda: Point(1, 2, "k", 4),  # type: ignore[call-arg]
            lambda: Point(1, x=1),  # type: ignore[misc]
            lambda: Point(1, z=1),  # type: ignore[call-arg]
        ],
        ids=["missing", "too-many", "twice", "unknown"],
    )
    def test_wrong_arguments(self, build: object) -> None:
        """Missing, surplus, repeated and unknown arguments are a TypeError."""
        with pytest.raises(TypeError):
            build()  # type: ignore[operator]

    def test_keyword_only(self) -> None:
        """A ``kw_only`` record takes no positional argument and matches no position."""
        assert Named(name="a").size == 1
        with pytest.raises(TypeError):
            Named("a")  # type: ignore[call-arg]
        assert Named.__match_args__ == ()

    def test_required_after_default_is_refused(self) -> None:
        """As with dataclasses, a field without a default cannot follow one with a default."""
        with pytest.raises(TypeError):

            class _Bad(Frozen):
                a: int = 0
                b: int  # type: ignore[misc]

    def test_fields_are_slots(self) -> None:
        """A record has no ``__dict__``: its fields are slots."""
        assert vars(Point)["__slots__"] == ("x", "y", "key")
        assert not hasattr(Point(1), "__dict__")


class TestValueSemantics:
    def test_assignment_is_refused(self) -> None:
        """Assigning or deleting is dataclasses.FrozenInstanceError, as before."""
        point = Point(1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            point.x = 2  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            del point.x

    def test_equal_and_hash_by_value_and_class(self) -> None:
        """Equal values of the same class are equal and hash alike; another class is not."""
        assert Point(1, 2) == Point(1, 2)
        assert hash(Point(1, 2)) == hash(Point(1, 2))
        assert Point(1, 2) != Point(2, 1)
        assert Retiring() != g.Locked()

    def test_repr_hides_secrets(self) -> None:
        """A secret field never reaches ``repr``; the others do, by name."""
        assert repr(Point(1, 2, SECRET)) == "Point(x=1, y=2)"

    @pytest.mark.parametrize(
        "record",
        [Point(1, 2, "k"), Named(name="n"), TaskFailed("E", 1), g.Spawn(slot=1, argv=("a",))],
    )
    def test_pickle_and_copy(self, record: Frozen) -> None:
        """Records pickle and copy back to equal records (keyword-only ones too)."""
        assert pickle.loads(pickle.dumps(record)) == record
        assert copy.copy(record) == record
        assert copy.deepcopy(record) == record

    def test_asdict(self) -> None:
        """``_asdict`` gives the fields by name, in declaration order."""
        assert list(Point(1, 2, "k")._asdict().items()) == [("x", 1), ("y", 2), ("key", "k")]


class TestCodecDeclarations:
    def test_every_field_needs_a_kind(self) -> None:
        """A frame field without a wire kind is refused when its codec is built."""

        class Loose(Frame):
            TAG = "loose"
            size: int

        with pytest.raises(TypeError):
            Codec(1, (Loose,))

    def test_a_frame_of_another_channel_is_not_encoded(self) -> None:
        """Encoding a frame the channel does not carry is a LocalProtocolError."""
        with pytest.raises(LocalProtocolError) as info:
            g.encode_guardian_frame(Retiring())  # type: ignore[arg-type]
        assert info.value.reason is Reason.FRAME_UNKNOWN_TYPE

    def test_nested_record_of_the_wrong_class_is_a_local_error(self) -> None:
        """A nested (spread) field holding another class is refused on encoding."""

        class Inner(Frame):
            size: int = field(kind=s.Int())

        class Outer(Frame):
            TAG = "outer"
            inner: Inner = field(kind=Spread(Inner))

        with pytest.raises(LocalProtocolError):
            Codec(1, (Outer,)).encode(Outer(inner=Retiring()))  # type: ignore[arg-type]


def test_records_module_imports_nothing() -> None:
    """The base is on every boot and probe path: it imports nothing outside Coretsia."""
    code = (
        "import sys; before = set(sys.modules);"
        "import coretsia.worker_protocol.records;"
        "print(sorted(m for m in set(sys.modules) - before"
        " if m != '__future__' and m.split('.')[0] != 'coretsia'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.strip() == "[]"
