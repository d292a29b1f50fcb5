"""Counts kept between writes: ``memory_stats`` answers without reading a user's rows.

This process makes every write to the store (``actors.writer``), so a count stays
true until the adapter that counted writes that user's rows again. A write tells the
memo as it starts and as it ends: a count taken while a write ran is not kept, and
nothing kept before a write survives it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable

__all__ = ["CountMemo"]

#: Users whose counts are kept (the least recently used go first).
KEPT = 1024


class CountMemo:
    """Counts by (user id, anything else hashable), each dropped when its user is written."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._counts: OrderedDict[str, dict[Hashable, dict[str, int]]] = OrderedDict()
        self._writes = 0

    async def get(
        self, user_id: str, key: Hashable, count: Callable[[], Awaitable[dict[str, int]]]
    ) -> dict[str, int]:
        """The kept counts of (``user_id``, ``key``), or ``count()``'s, kept if no write
        began or ended meanwhile. A copy: the caller may change it."""
        mine = self._counts.get(user_id)
        if mine is not None:
            self._counts.move_to_end(user_id)
            if key in mine:
                return dict(mine[key])
        writes = self._writes
        counted = await count()
        if writes == self._writes:
            self._counts.setdefault(user_id, {})[key] = dict(counted)
            self._counts.move_to_end(user_id)
            while len(self._counts) > self._kept:
                self._counts.popitem(last=False)
        return counted

    def written(self, user_ids: Iterable[str]) -> None:
        """Call as a write of these users' rows starts, and again as it ends (or fails)."""
        self._writes += 1
        for user_id in set(user_ids):
            self._counts.pop(user_id, None)
