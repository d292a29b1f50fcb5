"""Each user's budget of work: what one user may ask of the server per second, over all
of their connections and requests together.

The per-connection frame limit (``MNEMO_RATE_LIMIT``) bounds one connection, but a user
may open many, and a 64 KiB frame costs the event loop far more than a ``ping``: a
Chinese ``context`` query of 64 KiB about 8 ms, a ``ping`` 0.3 ms. So every frame and
request also spends units from a token bucket per user (``MNEMO_USER_RATE`` a second, at
most ``MNEMO_USER_BURST`` saved): one unit, plus one per ``UNIT_BYTES`` of what it
carries. A frame that finds the bucket empty is refused (``rate_limited``); REST
requests and bodies wait for it instead (a request is answered 429 only if it would wait
longer than ``MAX_WAIT`` seconds), so an import or export is slowed down, not broken.
"""

from __future__ import annotations

import anyio

from memory.ratelimit import TokenBucket

__all__ = ["MAX_WAIT", "UNIT_BYTES", "UserBudgets", "cost_of"]

#: Bytes a frame or request carries per unit it costs (beyond its first).
UNIT_BYTES = 4096
#: Longest a REST request waits for its user's budget before it is refused.
MAX_WAIT = 5.0


def cost_of(size: int) -> float:
    """Units of a frame or request carrying ``size`` bytes."""
    return 1.0 + size / UNIT_BYTES


class UserBudgets:
    """One token bucket per user id (user ids come from configured keys: few)."""

    def __init__(self, rate: float, burst: float) -> None:
        self._rate, self._burst = rate, burst
        self._buckets: dict[str, TokenBucket] = {}

    def _bucket(self, user_id: str) -> TokenBucket:
        bucket = self._buckets.get(user_id)
        if bucket is None:
            bucket = TokenBucket(self._rate, self._burst, anyio.current_time())
            self._buckets[user_id] = bucket
        return bucket

    def take(self, user_id: str, size: int) -> bool:
        """Spend what a frame of ``size`` bytes costs, if the user has it now."""
        return self._bucket(user_id).take(anyio.current_time(), cost_of(size))

    def charge(self, user_id: str, size: int) -> None:
        """Spend what a frame of ``size`` bytes costs even beyond the bucket (a refused
        frame that was read all the same): the user's next frames wait for the debt."""
        self._bucket(user_id).spend(anyio.current_time(), cost_of(size))

    def admit(self, user_id: str, size: int) -> float | None:
        """Spend what a request carrying ``size`` bytes costs: the seconds it must wait
        first, or None (nothing spent) when that would be longer than ``MAX_WAIT``."""
        return self._bucket(user_id).spend(anyio.current_time(), cost_of(size), MAX_WAIT)

    async def spend(self, user_id: str, size: int) -> None:
        """Spend what ``size`` more bytes of a request cost (a body read, an answer
        written), waiting until the user's bucket can afford them."""
        delay = self._bucket(user_id).spend(anyio.current_time(), size / UNIT_BYTES)
        if delay:
            await anyio.sleep(delay)
