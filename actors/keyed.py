"""One holder at a time per key (a user, a user's scope), the others waiting in order."""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager

import anyio

__all__ = ["KeyedLocks"]


class KeyedLocks:
    """A lock per key, made when someone asks for the key and forgotten once nobody holds
    or waits for it (so many keys cost nothing while idle)."""

    def __init__(self) -> None:
        #: Each key's lock, and how many hold or wait for it.
        self._locks: dict[Hashable, tuple[anyio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        """Hold ``key`` for the block, after those who asked for it before. Canceling the
        wait is safe."""
        lock, users = self._locks.get(key) or (anyio.Lock(), 0)
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def __contains__(self, key: Hashable) -> bool:
        """Whether ``key`` is held or waited for."""
        return key in self._locks
