"""Coretsia Worker's proc host: the portable ``proc`` driver's owner of worker handles."""
