"""The guardian channel's own rules, both ends without sockets: what an early end means, a
refusal raised as its error, and the containment that goes on when the supervisor is lost.
"""

from __future__ import annotations

import pytest
from internal_pairs import (
    ANSWERER,
    EXITED,
    GUARDIAN,
    OPENER,
    SPAWN,
    VERSION,
    WELCOME,
    at,
    read_raises,
)

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    RemoteProtocolError,
    WorkerAlreadyRunningError,
    WorkerLifecycleFailedError,
)
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.internal import guardian as g
from coretsia.worker_protocol.internal import guardian_conversation as gc
from coretsia.worker_protocol.vocabulary import ShutdownPhase

# -- the guardian channel's own rules ---------------------------------------------------

G = gc.GuardianState


class TestGuardianChannel:
    @pytest.mark.parametrize(
        ("state", "reason"),
        [
            (G.WELCOME, Reason.PROCESS_HOST_FAILED),
            (G.LOCK, Reason.LIFECYCLE_LOCK_FAILED),
            (G.RUNNING, Reason.PROCESS_HOST_FAILED),
        ],
    )
    def test_an_early_end_means_what_it_interrupted(self, state: G, reason: Reason) -> None:
        """Before welcome or once running, a lost guardian; during the claim, the lock."""
        supervisor = at(GUARDIAN, state).opener
        supervisor.receive_data(b"")
        assert supervisor.next_event() is Need.CLOSED
        failure = supervisor.failure()
        assert isinstance(failure, WorkerLifecycleFailedError)
        assert failure.reason is reason

    @pytest.mark.parametrize("state", [G.WELCOME, G.LOCK])
    def test_a_refusal_is_raised_as_its_error(self, state: G) -> None:
        """refused, at either step of the handshake, raises the error of its reason."""
        pair = at(GUARDIAN, state)
        with pytest.raises(WorkerAlreadyRunningError):
            pair.say(ANSWERER, g.Refused(reason=Reason.ALREADY_RUNNING))
        assert pair.states() == (G.REFUSED, G.REFUSED)

    def test_the_supervisors_loss_is_shutdown_then_release(self) -> None:
        """The guardian contains on its own: phases, drained and released, unasked."""
        guardian = at(GUARDIAN, G.RUNNING).answerer
        guardian.receive_data(b"")
        assert guardian.next_event() is Need.CLOSED
        assert (guardian.state, guardian.supervisor_gone) == (G.SHUTTING_DOWN, True)
        guardian.send(g.Phase(phase=ShutdownPhase.COOPERATIVE, budget_ms=1))
        guardian.send(g.Drained(clean=True))
        assert guardian.state is G.RELEASING
        guardian.send(g.Released())
        assert guardian.state is G.RELEASED

    def test_a_broken_rule_is_the_supervisors_loss(self) -> None:
        """A supervisor frame out of order ends reading; the containment still speaks."""
        guardian = at(GUARDIAN, G.RUNNING).answerer
        read_raises(guardian, g.encode_guardian_frame(g.Release()), RemoteProtocolError)
        assert (guardian.state, guardian.supervisor_gone) == (G.SHUTTING_DOWN, True)
        with pytest.raises(LocalProtocolError):
            guardian.next_event()
        guardian.send(g.Drained(clean=False))
        assert guardian.state is G.RELEASING

    def test_a_loss_after_drained_is_the_release(self) -> None:
        """A supervisor gone while the guardian waits for release: released follows."""
        guardian = at(GUARDIAN, G.DRAINED).answerer
        guardian.receive_data(b"")
        assert guardian.next_event() is Need.CLOSED
        assert guardian.state is G.RELEASING

    def test_a_loss_before_hello_leaves_nothing_to_say(self) -> None:
        """Before hello the guardian has nobody to welcome."""
        guardian = gc.GuardianEnd(VERSION)
        guardian.receive_data(b"")
        assert guardian.next_event() is Need.CLOSED
        with pytest.raises(LocalProtocolError):
            guardian.send(WELCOME)

    def test_a_spawn_may_cross_the_shutdown(self) -> None:
        """A spawn sent after shutdown reaches the guardian, up to the release."""
        pair = at(GUARDIAN, G.SHUTTING_DOWN)
        assert pair.say(OPENER, SPAWN) == [SPAWN]
        pair.say(ANSWERER, g.Drained(clean=True))
        assert pair.say(OPENER, SPAWN) == [SPAWN]
        pair.say(OPENER, g.Release())
        assert pair.say(OPENER, SPAWN) == [SPAWN]

    @pytest.mark.parametrize("state", [G.DRAINED, G.RELEASING])
    def test_a_late_exit_is_reported(self, state: G) -> None:
        """A process that outlived every phase is reported when it is reaped at last."""
        assert at(GUARDIAN, state).say(ANSWERER, EXITED) == [EXITED]
