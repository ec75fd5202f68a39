"""Coretsia Worker's supervisor: ``coretsia-supervisor`` and the ``coretsia-worker`` launcher.

Deliberately empty: every worker boots through ``coretsia.supervisor.launcher``, and
importing this package must cost it nothing.
"""
