"""Internal frames between Coretsia's own processes, and their plumbing. No stability promise.

The guardian channel (supervisor and guardian) and the proc-host channel (guardian and
proc host) change together with the three daemons, which check each other's version at
their handshake. They are not a plugin boundary and not documented as one (seed 000,
"Internal seams"). Their order is sans-IO like the public conversations', on the same
engine (:mod:`..conversation_engine`, a table per channel: :mod:`.guardian_conversation`,
:mod:`.proc_host_conversation`, :mod:`.fork_server_conversation`). They are declared and
coded like the public frames (one record base, :mod:`coretsia.worker_protocol.records`,
and one strict codec, :mod:`coretsia.worker_protocol._codec`), so they are held to the
same strictness; their integers and strings carry no bounds beyond the frame's size, since
the peer is Coretsia itself, of the same version.

:mod:`.runtime` holds the plumbing the executables share (logs, the framed channel,
subreaper, exit kinds, the import walk). This package imports nothing
itself, so reaching :mod:`.runtime` from a hot path costs no frame module.
"""
