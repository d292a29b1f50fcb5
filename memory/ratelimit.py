"""A token bucket: how many client frames a connection may send per second, and how much
work one user may ask of the server (``server.budget``)."""

from __future__ import annotations

__all__ = ["TokenBucket"]


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up; time is passed in (pure)."""

    __slots__ = ("_burst", "_last", "_rate", "_tokens")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self._rate, self._burst = rate, burst
        self._tokens, self._last = burst, now

    def take(self, now: float, cost: float = 1.0) -> bool:
        """Spend ``cost`` tokens if there are that many."""
        self._refill(now)
        if self._tokens >= cost:
            self._tokens -= cost
            return True
        return False

    def spend(self, now: float, cost: float, limit: float = float("inf")) -> float | None:
        """Spend ``cost`` tokens, into debt if need be, and return the seconds until the
        bucket is out of debt (0.0 when it was not in); unless that would be more than
        ``limit`` seconds: then spend nothing and return None."""
        self._refill(now)
        left = self._tokens - cost
        wait = max(0.0, -left / self._rate) if self._rate > 0 else 0.0
        if wait > limit:
            return None
        self._tokens = left
        return wait

    def _refill(self, now: float) -> None:
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
        self._last = now
