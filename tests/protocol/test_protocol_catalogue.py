"""The error catalogue and the exit codes: every code and reason token of seed 000 verbatim,
only the documented extensions, a code, an explanation and an exit status for every reason,
and the LSB exit statuses.
"""

from __future__ import annotations

import pytest

from coretsia.worker_protocol.catalogue import (
    EXIT_CODES,
    EXPLANATIONS,
    REASON_CODES,
    ErrorCode,
    Reason,
)
from coretsia.worker_protocol.exit_codes import ExitCode

#: Seed 000, "Errors": every public code and reason token, verbatim.
SEED_000_ERRORS = """
CORETSIA_WORKER_START_FAILED: worker-start-failed
CORETSIA_WORKER_START_FAILED: worker-task-source-missing
CORETSIA_WORKER_START_FAILED: worker-task-source-ambiguous
CORETSIA_WORKER_START_FAILED: worker-task-source-invalid
CORETSIA_WORKER_START_FAILED: worker-task-source-unresolvable
CORETSIA_WORKER_START_FAILED: worker-task-source-not-ready
CORETSIA_WORKER_START_FAILED: worker-readiness-timeout
CORETSIA_WORKER_START_FAILED: worker-readiness-invalid
CORETSIA_WORKER_START_FAILED: worker-child-start-failed
CORETSIA_WORKER_START_FAILED: worker-signal-handling-unavailable
CORETSIA_WORKER_LIFECYCLE_FAILED: worker-lifecycle-failed
CORETSIA_WORKER_LIFECYCLE_FAILED: worker-invalid-state
CORETSIA_WORKER_LIFECYCLE_FAILED: worker-task-source-terminated
CORETSIA_WORKER_LIFECYCLE_FAILED: worker-task-source-receive-failed
CORETSIA_WORKER_LIFECYCLE_FAILED: worker-task-settlement-failed
CORETSIA_WORKER_LIFECYCLE_FAILED: worker-child-exited
CORETSIA_WORKER_LIFECYCLE_FAILED: worker-shutdown-failed
CORETSIA_WORKER_LIFECYCLE_FAILED: worker-runtime-cleanup-failed
CORETSIA_WORKER_LIFECYCLE_FAILED: worker-lifecycle-lock-failed
CORETSIA_WORKER_LIFECYCLE_FAILED: worker-lifecycle-locator-failed
CORETSIA_WORKER_LIFECYCLE_FAILED: worker-process-host-failed
CORETSIA_WORKER_FORK_FAILED: worker-fork-failed
CORETSIA_WORKER_ALREADY_RUNNING: worker-already-running
CORETSIA_WORKER_COMMUNICATION_FAILED: worker-communication-failed
CORETSIA_WORKER_NOT_RUNNING: worker-not-running
"""
SEED_PAIRS = [tuple(line.split(": ")) for line in SEED_000_ERRORS.strip().splitlines()]


class TestSeedCatalogue:
    @pytest.mark.parametrize(("code", "token"), SEED_PAIRS, ids=[t for _, t in SEED_PAIRS])
    def test_seed_reason_exists_with_its_code(self, code: str, token: str) -> None:
        """Every code/token pair of seed 000 is in the catalogue, under the same code."""
        assert REASON_CODES[Reason(token)] is ErrorCode(code)

    def test_seed_codes_are_all_present(self) -> None:
        """Every code seed 000 names is an ErrorCode."""
        assert {ErrorCode(code) for code, _ in SEED_PAIRS} <= set(ErrorCode)

    def test_extensions_are_exactly_the_documented_ones(self) -> None:
        """Reasons beyond the seed are config-invalid, the frame tokens and two start ones."""
        seed = {Reason(token) for _, token in SEED_PAIRS}
        extra = {r for r in Reason if r not in seed}
        frame_tokens = {r for r in Reason if r.value.startswith("worker-frame-")}
        documented = {
            Reason.CONFIG_INVALID,
            Reason.PEER_VERSION_MISMATCH,
            Reason.START_CANCELLED,
            Reason.PLATFORM_UNSUPPORTED,
            Reason.INTERPRETER_UNAVAILABLE,
            Reason.GENERATION_UNTRUSTED,
            Reason.RUNTIME_ENTRYPOINT_UNAVAILABLE,
            Reason.GENERATION_DRAINING,
            Reason.GENERATION_UNKILLABLE,
            Reason.CONTAINMENT_FAILED,
            Reason.TASK_HOOK_FAILED,
            Reason.TASK_RESET_FAILED,
            Reason.RESTART_INTENSITY_EXCEEDED,
            Reason.TASK_SOURCE_CORRUPT,
            Reason.TASK_SOURCE_FULL,
        }
        assert extra == frame_tokens | documented


class TestCatalogueShape:
    def test_every_reason_has_a_code(self) -> None:
        """Every reason belongs to a code."""
        assert [r for r in Reason if r not in REASON_CODES] == []

    def test_every_reason_has_an_explanation(self) -> None:
        """Every reason has a non-empty one-line explanation."""
        bad = [r for r in Reason if not EXPLANATIONS.get(r, "").strip() or "\n" in EXPLANATIONS[r]]
        assert bad == []

    def test_every_reason_has_an_exit_code(self) -> None:
        """Every reason's code maps to an exit status."""
        assert all(isinstance(EXIT_CODES[REASON_CODES[r]], ExitCode) for r in Reason)

    def test_every_code_has_an_exit_code(self) -> None:
        """Every ErrorCode maps to an ExitCode."""
        assert set(EXIT_CODES) == set(ErrorCode)

    def test_every_code_has_a_reason(self) -> None:
        """No code is left without a reason token."""
        assert set(REASON_CODES.values()) == set(ErrorCode)

    def test_tokens_have_the_worker_prefix(self) -> None:
        """Every reason token starts with ``worker-`` (the runtime-entrypoint guard's with
        ``runtime-``: not a worker failure) and is lowercase kebab case."""
        for reason in Reason:
            kernel = REASON_CODES[reason] is ErrorCode.RUNTIME_ENTRYPOINT_FAILED
            assert reason.value.startswith("runtime-" if kernel else "worker-")
            assert reason.value == reason.value.lower()
            assert " " not in reason.value

    def test_codes_have_the_coretsia_prefix(self) -> None:
        """Every code is CORETSIA_WORKER_* in upper case, but the runtime-entrypoint
        guard's, which seed 000 keeps out of the worker codes."""
        for code in ErrorCode:
            kernel = code is ErrorCode.RUNTIME_ENTRYPOINT_FAILED
            assert code.value.startswith("CORETSIA_RUNTIME_" if kernel else "CORETSIA_WORKER_")
            assert code.value == code.value.upper()

    def test_exit_code_mapping(self) -> None:
        """Not running is 3, communication and protocol failures 4, config 6, the rest 1."""
        assert EXIT_CODES[ErrorCode.NOT_RUNNING] is ExitCode.NOT_RUNNING
        assert EXIT_CODES[ErrorCode.COMMUNICATION_FAILED] is ExitCode.UNKNOWN
        assert EXIT_CODES[ErrorCode.PROTOCOL_VIOLATION] is ExitCode.UNKNOWN
        assert EXIT_CODES[ErrorCode.CONFIG_INVALID] is ExitCode.CONFIG_INVALID
        for code in (ErrorCode.START_FAILED, ErrorCode.LIFECYCLE_FAILED, ErrorCode.FORK_FAILED):
            assert EXIT_CODES[code] is ExitCode.FAILURE
        assert EXIT_CODES[ErrorCode.ALREADY_RUNNING] is ExitCode.FAILURE


class TestExitCodes:
    def test_values(self) -> None:
        """The exit codes are exactly 0, 1, 2, 3, 4, 6 and 8."""
        assert sorted(int(c) for c in ExitCode) == [0, 1, 2, 3, 4, 6, 8]

    def test_none_is_reserved_by_the_shell(self) -> None:
        """No exit code is negative or 126 and above."""
        assert all(0 <= c < 126 for c in ExitCode)

    def test_names(self) -> None:
        """The names say what each LSB status means."""
        assert int(ExitCode.OK) == 0
        assert int(ExitCode.FAILURE) == 1
        assert int(ExitCode.USAGE) == 2
        assert int(ExitCode.NOT_RUNNING) == 3
        assert int(ExitCode.UNKNOWN) == 4
        assert int(ExitCode.CONFIG_INVALID) == 6
