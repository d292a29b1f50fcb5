"""A capacity limiter with an urgent lane: what a person waits for goes before backlog."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio


class Lanes:
    """At most ``total`` holders at once; a free place goes to the longest-waiting
    urgent caller first, then to the longest-waiting of the others.

    ``anyio.CapacityLimiter`` serves in arrival order, so one call a person waits for
    (classifying a fact added by hand) would queue behind every background extraction
    of a busy server. Here it waits at most for one running call to finish.
    """

    def __init__(self, total: int) -> None:
        if total < 1:
            raise ValueError("a limiter needs at least one place")
        self._total, self._used = total, 0
        self._waiting: dict[bool, deque[anyio.Event]] = {True: deque(), False: deque()}

    @property
    def waiting(self) -> int:
        return len(self._waiting[True]) + len(self._waiting[False])

    @asynccontextmanager
    async def hold(self, *, urgent: bool = False) -> AsyncIterator[None]:
        await self._acquire(urgent)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, urgent: bool) -> None:
        await anyio.lowlevel.checkpoint_if_cancelled()
        if self._used < self._total and not self.waiting:
            self._used += 1
            await anyio.lowlevel.cancel_shielded_checkpoint()
            return
        granted = anyio.Event()
        queue = self._waiting[urgent]
        queue.append(granted)
        try:
            await granted.wait()
        except BaseException:
            if granted.is_set():
                self._release()  # handed a place while being cancelled: pass it on
            else:
                queue.remove(granted)
            raise

    def _release(self) -> None:
        for urgent in (True, False):
            if self._waiting[urgent]:
                self._waiting[urgent].popleft().set()  # the place passes on, still used
                return
        self._used -= 1
