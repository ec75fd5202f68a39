"""The ``ProcessManager`` library: a named pool of process entries run from an
application's own process (``start``/``stop``, or mounted in its event loop).

The top of the supervisor distribution beside the command line: it runs the daemon's
supervisor in-process. Its public names are re-exported by
:mod:`coretsia.supervisor.process` (and ``ProcessManager`` by :mod:`coretsia.supervisor`).
"""
