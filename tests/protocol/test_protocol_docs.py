"""docs/protocol.md stays true: every example decodes, and the catalogue table is exact.

Examples are fenced ``json`` blocks right after an HTML comment naming the decoder, e.g.
``<!-- example: decode_locator -->``. Whole control conversations are blocks after
``<!-- conversation: <transport> <address> -->``, one frame per line: each is replayed
with Coretsia's own conversations (the nonces the doc shows), which must send exactly
the doc's bytes, so the MACs in the doc are test vectors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from catalogue_table import catalogue_rows
from lock_holder import HoldLock

from coretsia.worker_protocol.catalogue import (
    ConfigRule,
    HealthReason,
    Reason,
)
from coretsia.worker_protocol.client import ControlClient
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    ControlResponse,
    ErrorResponse,
    HealthResponse,
    Hello,
    StatusResponse,
    StoppedResponse,
    StopProgress,
    decode_request,
    decode_response,
)
from coretsia.worker_protocol.control_conversation import (
    ClientConversation,
    ControlState,
    ServerConversation,
)
from coretsia.worker_protocol.exceptions import ProtocolError, WorkerError
from coretsia.worker_protocol.exit_codes import ExitCode
from coretsia.worker_protocol.lifecycle import CANONICAL_PATHS, FENCE_PATH, LOCK_PATH
from coretsia.worker_protocol.locator import decode_locator, encode_locator
from coretsia.worker_protocol.state import decode_state, encode_state
from coretsia.worker_protocol.vocabulary import ControlCommand, Transport

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
TEXT = DOC.read_text(encoding="utf-8")

CODECS: dict[str, tuple[Callable[[bytes], Any], Callable[[Any], bytes]]] = {
    "decode_locator": (decode_locator, encode_locator),
    "decode_state": (decode_state, encode_state),
}
EXAMPLE = re.compile(r"<!-- example: (\w+) -->\n```json\n(.*?)\n```", re.DOTALL)
EXAMPLES = EXAMPLE.findall(TEXT)
CONVERSATION = re.compile(r"<!-- conversation: (\w+) (\S+) -->\n```json\n(.*?)\n```", re.DOTALL)
CONVERSATIONS = CONVERSATION.findall(TEXT)
CREDENTIAL = json.loads(next(body for name, body in EXAMPLES if name == "decode_locator"))[
    "credential"
]


def decoded(name: str) -> list[Any]:
    """Every example of one decoder, decoded."""
    decode = CODECS[name][0]
    return [decode(body.encode()) for found, body in EXAMPLES if found == name]


def frames(kind: type) -> list[Any]:
    """Every frame of ``kind`` in the doc's conversations."""
    found = []
    for _transport, _address, body in CONVERSATIONS:
        for index, line in enumerate(body.splitlines()):
            decode = decode_request if index in (0, 2) else decode_response
            frame = decode(line.encode())
            if isinstance(frame, kind):
                found.append(frame)
    return found


class TestExamples:
    def test_examples_are_found(self) -> None:
        """The doc holds the marked examples and conversations this test checks."""
        assert len(EXAMPLES) >= 3
        assert len(CONVERSATIONS) >= 3

    def test_every_json_block_is_marked(self) -> None:
        """No ``json`` block escapes the check by lacking its marker comment."""
        assert TEXT.count("```json") == len(EXAMPLES) + len(CONVERSATIONS)

    @pytest.mark.parametrize(("name", "body"), EXAMPLES)
    def test_names_a_public_decoder(self, name: str, body: str) -> None:
        """Each marker names one of the public decoders."""
        assert name in CODECS

    @pytest.mark.parametrize(("name", "body"), EXAMPLES)
    def test_decodes(self, name: str, body: str) -> None:
        """Each example decodes with the decoder its marker names."""
        CODECS[name][0](body.encode())

    @pytest.mark.parametrize(("name", "body"), EXAMPLES)
    def test_is_canonical(self, name: str, body: str) -> None:
        """Each example is byte for byte what the encoder writes."""
        decode, encode = CODECS[name]
        assert encode(decode(body.encode())) == body.encode() + b"\n"

    @pytest.mark.parametrize(("transport", "address", "body"), CONVERSATIONS)
    def test_conversation_is_what_coretsia_sends(
        self, transport: str, address: str, body: str
    ) -> None:
        """Both ends, given the doc's nonces, send exactly the doc's lines, MACs included."""
        lines = [line.encode() + b"\n" for line in body.splitlines()]
        hello, challenge, request = (json.loads(line) for line in lines[:3])
        ends = (CREDENTIAL, Transport(transport), address)
        client = ClientConversation(*ends, nonce=hello["client_nonce"])
        server = ServerConversation(*ends, nonce=challenge["server_nonce"])
        sent = [client.hello()]
        server.receive_data(sent[-1])
        assert isinstance(server.next_event(), Hello)
        sent.append(server.challenge())
        client.receive_data(sent[-1])
        assert isinstance(client.next_event(), Challenge)
        sent.append(client.send(ControlRequest(ControlCommand(request["command"]))))
        server.receive_data(sent[-1])
        assert isinstance(server.next_event(), ControlRequest)
        for line in lines[3:]:
            answer: ControlResponse = decode_response(line)  # type: ignore[assignment]
            sent.append(server.send(answer))
            client.receive_data(sent[-1])
            assert client.next_event() == answer
        assert sent == lines
        assert client.state is ControlState.DONE

    def test_one_request_per_command(self) -> None:
        """There is a conversation for every control command."""
        assert {r.command for r in frames(ControlRequest)} == set(ControlCommand)

    def test_every_answer_type(self) -> None:
        """There is an answer of every type."""
        kinds = {type(r) for r in frames(object)} - {Hello, Challenge, ControlRequest}
        assert kinds == {
            StatusResponse,
            HealthResponse,
            StopProgress,
            StoppedResponse,
            ErrorResponse,
        }

    def test_both_transports(self) -> None:
        """There is a locator example and a conversation for each transport."""
        assert {loc.transport for loc in decoded("decode_locator")} == set(Transport)
        assert {Transport(t) for t, _a, _b in CONVERSATIONS} == set(Transport)

    def test_a_state_file(self) -> None:
        """There is a state file example."""
        assert len(decoded("decode_state")) == 1


class TestCatalogueInDoc:
    def test_every_reason_appears(self) -> None:
        """Every reason token is mentioned in the doc."""
        assert [r.value for r in Reason if r.value not in TEXT] == []

    def test_catalogue_table_is_the_generated_one(self) -> None:
        """The table the doc says is generated is, row for row, what the catalogue gives."""
        start = TEXT.index("The whole catalogue (generated from ")
        lines = TEXT[start:].split("\n\n", 2)[1].splitlines()
        assert lines[:2] == ["| Code | Reason | Exit | Meaning |", "| --- | --- | --- | --- |"]
        assert lines[2:] == catalogue_rows()

    @pytest.mark.parametrize("reason", list(HealthReason), ids=[r.value for r in HealthReason])
    def test_every_health_reason_appears(self, reason: HealthReason) -> None:
        """Every health reason is documented."""
        assert f"`{reason.value}`" in TEXT

    @pytest.mark.parametrize("rule", list(ConfigRule), ids=[r.value for r in ConfigRule])
    def test_every_config_rule_appears(self, rule: ConfigRule) -> None:
        """Every configuration rule is documented."""
        assert f"`{rule.value}`" in TEXT

    @pytest.mark.parametrize("code", list(ExitCode), ids=[c.name for c in ExitCode])
    def test_every_exit_code_row(self, code: ExitCode) -> None:
        """The exit code table has a row for every ExitCode."""
        assert f"| {int(code)} | `{code.name}` |" in TEXT

    def test_client_import_line(self) -> None:
        """The doc shows how a third party imports the client."""
        assert "from coretsia.worker_protocol.client import ControlClient" in TEXT


def _section(title: str) -> str:
    """The text of the ``## title`` section, up to the next ``## `` heading."""
    start = TEXT.index(f"\n## {title}\n")
    end = TEXT.find("\n## ", start + 1)
    return TEXT[start:end]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


class TestLifecycleFiles:
    @pytest.mark.parametrize("path", CANONICAL_PATHS)
    def test_every_canonical_path_has_its_row(self, path: str) -> None:
        """The lifecycle files table lists every fixed path (a directory with its slash)."""
        rows = [_cells(line)[0] for line in _section("Lifecycle files").splitlines()]
        assert f"`{path}`" in rows or f"`{path}/`" in rows


NAMED_BY_CLASS = {"worker-not-running"}
"""Reasons the liveness table names by their class alone (the class has no other)."""


class TestLivenessRules:
    @pytest.mark.parametrize("fence", ["missing or free", "held"])
    def test_a_free_lock_is_what_the_table_says(
        self, tmp_path: Path, hold_lock: HoldLock, fence: str
    ) -> None:
        """Each row for a free lock names the error and exit status every command gets."""
        if fence == "held":
            assert hold_lock(str(tmp_path / FENCE_PATH)).first_line == "held"
        prefix = f"| `{LOCK_PATH}` missing or free, `{FENCE_PATH}` {fence} |"
        section = _section("Finding a supervisor: the liveness rules")
        (row,) = [_cells(line) for line in section.splitlines() if line.startswith(prefix)]
        client = ControlClient(tmp_path)
        for ask in (client.status, client.health, client.stop):
            with pytest.raises(WorkerError) as caught:
                ask()
            error = caught.value
            named = f"`{type(error).__name__}`"
            if error.reason.value not in NAMED_BY_CLASS:
                named += f" (`{error.reason.value}`)"
            assert row[2:] == [named, str(error.exit_code)]

    def test_a_client_author_probes_the_fence_too(self) -> None:
        """The third-party steps send a free lock to the fence before saying not running."""
        steps = _section("Writing a client in another language")
        first = " ".join(steps.split("\n2. ", 1)[0].split())
        assert f"`<root>/{FENCE_PATH}`" in first
        assert "(`worker-generation-draining`, exit 1)" in first
        assert "not running (exit 3)" in first


COUNT_DOMAIN = re.compile(r"^\| `(\w+_count)` \| (?:optional: )?(\d+) to (\d+)\b", re.MULTILINE)
"""A row of the answers table that gives a count field's range."""


class TestCountDomains:
    def test_the_answers_table_gives_the_counts_ranges(self) -> None:
        """The rows this class checks are there."""
        fields = {name for name, _low, _high in COUNT_DOMAIN.findall(TEXT)}
        assert fields == {"worker_count", "reconnecting_worker_count"}

    @pytest.mark.parametrize(("name", "low", "high"), COUNT_DOMAIN.findall(TEXT))
    def test_a_status_answer_takes_exactly_the_documented_range(
        self, name: str, low: str, high: str
    ) -> None:
        """The doc's own status answer, with the count at each bound and just past it."""
        (line,) = [
            line
            for _t, _a, body in CONVERSATIONS
            for line in body.splitlines()
            if '"type":"status"' in line
        ]
        frame = {**json.loads(line), "ready_worker_count": 0, "worker_count": int(high)}

        def decodes(value: int) -> bool:
            try:
                decode_response(json.dumps({**frame, name: value}).encode())
            except ProtocolError:
                return False
            return True

        bounds = (int(low) - 1, int(low), int(high), int(high) + 1)
        assert [decodes(value) for value in bounds] == [False, True, True, False]

    def test_the_state_file_takes_the_same_worker_count_range(self) -> None:
        """The state file's ``worker_count`` range is said once, and is the decoder's."""
        low, high = re.findall(r"`worker_count` is (\d+) to (\d+)", TEXT)[0]
        (body,) = [body for name, body in EXAMPLES if name == "decode_state"]
        state = {**json.loads(body), "ready_worker_count": 0}
        for value, valid in ((int(low) - 1, False), (int(low), True), (int(high), True)):
            encoded = json.dumps({**state, "worker_count": value}).encode()
            if valid:
                assert decode_state(encoded).worker_count == value
            else:
                with pytest.raises(ProtocolError):
                    decode_state(encoded)
