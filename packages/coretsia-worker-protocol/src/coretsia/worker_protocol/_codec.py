"""One codec for every frame and file of the protocol, driven by the records' declarations.

A :class:`Frame` is a record whose fields each declare their JSON :class:`~._strict.Kind`
(``field(kind=...)``) and, for a tagged frame, whose class declares its ``TAG``. A
:class:`Codec` serves a set of such classes that share a version: the control answers,
the worker channel, the guardian and proc-host channels (tagged by ``type``), or one
untagged record (a control request, the locator, state and generation files). A field may
hold a record of its own: :class:`Nested` (a JSON object under the field's key) or
:class:`Spread` (its keys beside the frame's). Decoding checks, in
order: the size, strict JSON, ``version``, the ``type`` tag, the exact key set, each field
by its kind, then the frame's own rules between fields (:meth:`Frame._check`). Encoding
writes the fields and reads the result back by those same rules, so a frame we could not
decode is never sent.

A codec made ``sealable`` (the control channel's, v2) lets each frame carry a ``mac``
key beside its fields: :meth:`Codec.encode` asks a ``seal`` callback for it with the
frame's *body* (its canonical JSON without the ``mac``), and :meth:`Codec.open` hands back
the frame, its body and its ``mac``. Which frames must carry one, and what it proves, is
the conversation's rule (:mod:`~coretsia.worker_protocol.control_conversation`), not the
codec's.

Every failure is one :class:`RemoteProtocolError` (decoding) or
:class:`LocalProtocolError` (encoding) carrying a reason token and a schema path: never
the peer's text, and raised outside any handler so that nothing chains to an exception
that quotes it.
"""

from __future__ import annotations

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import LocalProtocolError, RemoteProtocolError
from coretsia.worker_protocol.framing import MAX_FRAME_BYTES
from coretsia.worker_protocol.records import Frozen
from coretsia.worker_protocol.vocabulary import MAC_HEX_LEN

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar, Final

MAC_KEY: Final = "mac"
"""The key a sealable codec's frames carry their MAC under."""

_MAC: Final = s.Hex(MAC_HEX_LEN)


class Frame(Frozen):
    """A record with a JSON form: every field declares its kind (see the module docstring)."""

    __slots__ = ()
    TAG: ClassVar[str] = ""
    """The ``type`` a tagged frame travels under."""

    def _check(self) -> None:
        """Rules between fields, applied after each field passed its kind (FieldError)."""


class _Layout:
    """One frame class's keys and field kinds, worked out once."""

    __slots__ = ("cls", "fields", "optional", "required")

    def __init__(self, cls: type[Frame]) -> None:
        self.cls = cls
        fields: list[tuple[str, s.Kind]] = []
        required: set[str] = set()
        optional: set[str] = set()
        for name, spec in cls._specs.items():
            if not isinstance(spec.kind, s.Kind):
                msg = f"{cls.__qualname__}.{name} declares no wire kind"
                raise TypeError(msg)
            fields.append((name, spec.kind))
            must, may = spec.kind.key_sets(name)
            required.update(must)
            optional.update(may)
        self.fields = tuple(fields)
        self.required = frozenset(required)
        self.optional = frozenset(optional)

    def read(self, obj: s.JsonObject) -> Frame:
        frame = self.cls._of([kind.load(obj, name) for name, kind in self.fields])
        frame._check()
        return frame

    def write(self, frame: Frame, obj: s.JsonObject) -> None:
        for name, kind in self.fields:
            kind.dump(getattr(frame, name), name, obj)


class Spread(s.Kind):
    """A nested record whose fields sit beside the frame's own (a status's summary)."""

    __slots__ = ("layout",)

    def __init__(self, cls: type[Frame]) -> None:
        self.layout = _Layout(cls)

    def keys(self, name: str) -> frozenset[str]:
        return self.layout.required | self.layout.optional

    def key_sets(self, name: str) -> tuple[frozenset[str], frozenset[str]]:
        return self.layout.required, self.layout.optional

    def load(self, obj: s.JsonObject, name: str) -> object:
        return self.layout.read(obj)

    def dump(self, value: object, name: str, obj: s.JsonObject) -> None:
        if not isinstance(value, Frame) or value.__class__ is not self.layout.cls:
            raise s.FieldError(Reason.FRAME_WRONG_TYPE, f"$.{name}")
        self.layout.write(value, obj)


class Nested(s.Kind):
    """A record held as a JSON object of its own under the field's key (exactly its keys).

    A nested record's key errors name the key inside it (``$.<key>``), not its full path.
    """

    __slots__ = ("layout",)

    def __init__(self, cls: type[Frame]) -> None:
        self.layout = _Layout(cls)

    def read(self, value: object, path: str) -> Frame:
        if type(value) is not dict:
            raise s.FieldError(Reason.FRAME_WRONG_TYPE, path)
        s.check_keys(value, self.layout.required, self.layout.optional)
        return self.layout.read(value)

    def write(self, value: object, path: str) -> s.JsonObject:
        if not isinstance(value, Frame) or value.__class__ is not self.layout.cls:
            raise s.FieldError(Reason.FRAME_WRONG_TYPE, path)
        obj: s.JsonObject = {}
        self.layout.write(value, obj)
        return obj


class Codec:
    """Encode and decode one set of frame classes of one ``version``; see the module doc.

    ``tagged`` (the default) puts each frame's ``TAG`` in its ``type`` key and reads it
    first; an untagged codec serves exactly one class. ``sealable`` lets a frame carry a
    ``mac`` beside its fields (see :meth:`encode` and :meth:`open`).
    """

    __slots__ = (
        "_base",
        "_by_class",
        "_by_tag",
        "_max_bytes",
        "_sealable",
        "_tagged",
        "_version",
    )

    def __init__(
        self,
        version: int,
        frames: tuple[type[Frame], ...],
        *,
        tagged: bool = True,
        sealable: bool = False,
        max_bytes: int = MAX_FRAME_BYTES,
    ) -> None:
        if not tagged and len(frames) != 1:
            msg = "an untagged codec serves exactly one class"
            raise ValueError(msg)
        self._version = version
        self._tagged = tagged
        self._sealable = sealable
        self._max_bytes = max_bytes
        self._base = frozenset({"version", "type"} if tagged else {"version"})
        self._by_class = {cls: _Layout(cls) for cls in frames}
        self._by_tag = {cls.TAG: layout for cls, layout in self._by_class.items()}

    def decode(self, data: bytes) -> Any:
        """Decode one frame (with or without its newline); a RemoteProtocolError if off."""
        return self._decode(data)[0]

    def open(self, data: bytes) -> tuple[Any, bytes, str | None]:
        """Decode one frame: the frame, its body and its ``mac`` (a sealable codec's).

        The body is the frame's canonical JSON without the ``mac`` (what the sender
        sealed; for any codec, what tells a canonical file from an edited one); the
        ``mac`` is None where the frame carries none.
        """
        frame, obj, mac = self._decode(data)
        return frame, s.dumps(obj), mac

    def _decode(self, data: bytes) -> tuple[Any, s.JsonObject, str | None]:
        if data.endswith(b"\n"):
            data = data[:-1]
        try:
            obj = s.loads(data, self._max_bytes)
            mac = None
            if self._sealable and MAC_KEY in obj:  # elsewhere an unknown key like any other
                s.check_version(obj, self._version)  # a newer frame says so first
                mac = _MAC.read(obj.pop(MAC_KEY), f"$.{MAC_KEY}")
            return self._read(obj), obj, mac
        except s.FieldError as exc:
            error = RemoteProtocolError(exc.reason, exc.path)
        # Raised outside the handler, so neither __cause__ nor __context__ chains to an
        # exception (a UnicodeDecodeError, say) that carries the peer's bytes.
        raise error

    def encode(self, frame: Frame, seal: Callable[[bytes], str | None] | None = None) -> bytes:
        """One line of deterministic JSON; a LocalProtocolError if the peer would refuse it.

        ``seal``, if given, is called with the frame's body (its canonical JSON) and
        answers the ``mac`` the line carries, or None for none.
        """
        layout = self._by_class.get(frame.__class__)
        if layout is None:
            raise LocalProtocolError(Reason.FRAME_UNKNOWN_TYPE, "$.type")
        obj: s.JsonObject = {"version": self._version}
        if self._tagged:
            obj["type"] = frame.TAG
        try:
            layout.write(frame, obj)
            self._read(obj)
            data = s.dumps(obj)
            if seal is not None and (mac := seal(data)) is not None:
                s.require(self._sealable, "", Reason.FRAME_UNKNOWN_KEY)
                obj[MAC_KEY] = _MAC.read(mac, f"$.{MAC_KEY}")
                data = s.dumps(obj)
        except s.FieldError as exc:
            error = LocalProtocolError(exc.reason, exc.path)
        else:
            if len(data) > self._max_bytes:  # the peer would refuse it: say so here
                raise LocalProtocolError(Reason.FRAME_OVERSIZED)
            return data + b"\n"
        raise error  # outside the handler: no __context__ that could hold the frame

    def _read(self, obj: s.JsonObject) -> Frame:
        s.check_version(obj, self._version)
        if self._tagged:
            layout = self._by_tag.get(s.get_type(obj))
            if layout is None:
                raise s.FieldError(Reason.FRAME_UNKNOWN_TYPE, "$.type")
        else:
            (layout,) = self._by_class.values()
        s.check_keys(obj, self._base | layout.required, layout.optional)
        return layout.read(obj)
