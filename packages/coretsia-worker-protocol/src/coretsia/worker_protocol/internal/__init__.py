"""Internal frames between Coretsia's own processes, and their plumbing. No stability promise.

The guardian channel (supervisor and guardian) and the proc-host channel (guardian and
proc host) change together with the three daemons, which check each other's version at
their handshake. They are not a plugin boundary and not documented as one (seed 000,
"Internal seams"). Only the long-lived daemons decode them, so they use attrs and a strict
cattrs converter; nothing on the probe or worker boot path imports those frame modules.

:mod:`.runtime` holds the plumbing the executables share (logs, the framed channel,
subreaper, exit kinds, the import walk, lazy exports). This package imports nothing
itself, so reaching :mod:`.runtime` from a hot path costs no frame module.
"""
