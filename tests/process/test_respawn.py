"""The replacement rules of process entries, as arithmetic on given times (respawn.py)."""

from __future__ import annotations

import pytest

from coretsia.supervisor.daemon.respawn import RespawnPolicy


def test_the_interval_paces_spawns_of_one_slot() -> None:
    policy = RespawnPolicy(0.1, 0, 60.0, 0.0)
    assert policy.delay(spawned_at=10.0, rapid_exits=0, now=10.03) == pytest.approx(0.07)
    assert policy.delay(spawned_at=10.0, rapid_exits=0, now=10.5) == 0.0
    assert policy.next_rapid_exits(lived_s=0.0, rapid_exits=5) == 0  # no back-off: no count


def test_backoff_doubles_to_its_cap_and_resets_after_a_long_life() -> None:
    policy = RespawnPolicy(0.05, 0, 60.0, 0.4)
    rapid = 0
    delays = []
    for _ in range(5):
        rapid = policy.next_rapid_exits(lived_s=0.01, rapid_exits=rapid)
        delays.append(policy.delay(spawned_at=0.0, rapid_exits=rapid, now=100.0))
    assert delays == [0.1, 0.2, 0.4, 0.4, 0.4]
    assert policy.next_rapid_exits(lived_s=0.4, rapid_exits=rapid) == 0
    assert policy.delay(spawned_at=100.0, rapid_exits=0, now=100.0) == pytest.approx(0.05)


def test_intensity_counts_replacements_within_the_period() -> None:
    policy = RespawnPolicy(0.1, 2, 10.0, 0.0)
    assert policy.admit(0.0)
    assert policy.admit(1.0)
    assert not policy.admit(2.0)  # a third within 10 s
    fresh = RespawnPolicy(0.1, 2, 10.0, 0.0)
    assert all(fresh.admit(t) for t in (0.0, 6.0, 11.0, 17.0))  # never 3 in a window


def test_no_intensity_admits_everything() -> None:
    policy = RespawnPolicy(0.1, 0, 10.0, 0.0)
    assert all(policy.admit(float(t)) for t in range(1000))
