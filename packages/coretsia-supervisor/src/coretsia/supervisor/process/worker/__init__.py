"""The worker side of process entries: what runs inside an entry worker, and only there.

:mod:`.entry` boots the slot's entry from the generation's snapshot and runs it,
:mod:`.pool` is the ``pool`` it receives, :mod:`.ipc_endpoint` carries its messages.
These modules import from the parent side only its shared vocabulary (``errors``,
``rules`` and the snapshot loader), never the registration API; the parent side imports
this package only for :func:`~.pool.current_pool` (``ProcessManager.stop()`` called
inside a worker). The public names are re-exported by :mod:`coretsia.supervisor.process`.

Empty on purpose: the launcher imports :mod:`.entry` through this package on every
entry worker's boot.
"""
