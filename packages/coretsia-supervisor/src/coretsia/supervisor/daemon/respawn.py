"""When a process entry's worker is replaced: the pace, the back-off, the intensity.

Seed 003 replaces a returning or failing entry at once, forever, with no backoff. Python
adds one always-on rule and two opt-in ones (``docs/process-pools.md``):

* a minimum interval between two spawns of one slot (``respawn_interval_ms``, about
  100 ms), so an entry that returns at once costs a few interpreter starts a second
  instead of a core;
* a capped exponential back-off (``restart_backoff_max_ms``, 0 = off): each worker that
  lived less than the cap doubles the next delay, one that lived longer resets it;
* a restart intensity (``restart_intensity`` replacements within ``restart_period_ms``,
  0 = off), past which the pool fails, as an Erlang/OTP supervisor does.

Pure arithmetic on times the caller passes in, so the rules are testable without a pool.
"""

from __future__ import annotations

import collections

__all__ = ["RespawnPolicy"]


class RespawnPolicy:
    """The replacement rules of one pool, with its record of recent replacements."""

    def __init__(
        self, interval_s: float, intensity: int, period_s: float, backoff_max_s: float
    ) -> None:
        self.interval_s = interval_s
        self.intensity = intensity
        self.period_s = period_s
        self.backoff_max_s = backoff_max_s
        self._recent: collections.deque[float] = collections.deque()

    def admit(self, now: float) -> bool:
        """Record one replacement at ``now``; False if it breaks the restart intensity."""
        if self.intensity == 0:
            return True
        recent = self._recent
        recent.append(now)
        while recent and recent[0] <= now - self.period_s:
            recent.popleft()
        return len(recent) <= self.intensity

    def next_rapid_exits(self, lived_s: float, rapid_exits: int) -> int:
        """The back-off exponent after a worker that lived ``lived_s`` seconds."""
        if self.backoff_max_s == 0 or lived_s >= max(self.backoff_max_s, self.interval_s):
            return 0
        return min(rapid_exits + 1, 64)

    def delay(self, spawned_at: float, rapid_exits: int, now: float) -> float:
        """Seconds to wait before spawning again a slot last spawned at ``spawned_at``."""
        pace = max(0.0, spawned_at + self.interval_s - now)
        if self.backoff_max_s == 0 or rapid_exits == 0:
            return pace
        backoff = min(self.interval_s * 2.0**rapid_exits, self.backoff_max_s)
        return max(pace, backoff)
