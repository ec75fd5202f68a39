"""What several of the supervisor distribution's programs share: the terminal output, the
telemetry seam and its OpenTelemetry adapter, the entry-point reader, the version.

The bottom layer of ``coretsia.supervisor``: it imports none of the other sub-packages.
Empty on purpose: importing a module of it must not load the others.
"""
