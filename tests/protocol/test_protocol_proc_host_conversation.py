"""The proc-host channel's own rules, both ends without sockets: its one refusal is a version
mismatch, and reports sent before ``quit`` still arrive.
"""

from __future__ import annotations

import pytest
from internal_pairs import (
    ANSWERER,
    EXITED,
    OPENER,
    PROC_HOST,
    SPAWN,
    SPAWNED,
    at,
    read_raises,
    running,
)

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    RemoteProtocolError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.internal import guardian as g
from coretsia.worker_protocol.internal import proc_host as p
from coretsia.worker_protocol.internal import proc_host_conversation as pc

# -- the proc-host channel's own rules --------------------------------------------------

H = pc.HostState


class TestProcHostChannel:
    def test_the_one_refusal_is_a_version_mismatch(self) -> None:
        """refused carries worker-peer-version-mismatch, raised as such by the guardian."""
        other_reason = g.Refused(reason=Reason.ALREADY_RUNNING)
        with pytest.raises(LocalProtocolError) as info:
            at(PROC_HOST, H.WELCOME).answerer.send(other_reason)
        assert (info.value.reason, info.value.path) == (Reason.FRAME_INVALID_VALUE, "$.reason")
        driver = at(PROC_HOST, H.WELCOME).opener
        read_raises(driver, p.encode_proc_host_frame(other_reason), RemoteProtocolError)
        with pytest.raises(WorkerStartFailedError) as mismatch:
            at(PROC_HOST, H.WELCOME).say(ANSWERER, PROC_HOST.refusal)
        assert mismatch.value.reason is Reason.PEER_VERSION_MISMATCH

    def test_reports_sent_before_quit_still_arrive(self) -> None:
        """After quit, answers and exits the proc host sent before it read it are read."""
        pair = running(PROC_HOST)
        pair.say(OPENER, SPAWN)
        pair.say(OPENER, p.Quit())
        assert pair.say(ANSWERER, SPAWNED) == [SPAWNED]
        assert pair.say(ANSWERER, EXITED) == [EXITED]
        with pytest.raises(LocalProtocolError):
            pair.opener.send(p.Signal(slot=0, signal=p.SignalName.KILL))
