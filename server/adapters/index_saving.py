"""When users' message indexes are saved (``server.adapters.index_files`` says how).

A write of a user's messages deletes their saved index before it is durable
(``writing``) and marks them changed; once their messages have rested ``save_after``
seconds, and no write of theirs is under way or waiting to be indexed, their index in
memory is captured, written in a worker thread and put in place unless a write was
accepted meanwhile (``save``). A user written to while not in memory (an import) is
loaded to be saved, a few a round.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.to_thread

from actors.errors import ArchiveUnavailable
from server.adapters.index_files import IndexFiles
from server.adapters.lance_cache import UserCache
from server.adapters.message_entry import MessageEntry

__all__ = ["IndexSaver", "SharedIndexes"]

_log = logging.getLogger("mnemo.store")
#: Longest between two looks for changed indexes to save, and how many users not in
#: memory (imported, or evicted since their last write) each look loads to save them.
_SAVE_EVERY = 10.0
_LOADS_TO_SAVE = 8


def _written(files: IndexFiles, user_id: str, state: Callable[[], dict[str, Any]]) -> Path:
    """Make the captured state and write it (in a worker thread)."""
    return files.write(user_id, state())


def _unchanged(files: IndexFiles, user_id: str, token: int) -> bool:
    return files.token(user_id) == token


class SharedIndexes(Protocol):
    """Saved indexes shared through an object store (a cluster's nodes)."""

    async def stale(self, user_ids: Collection[str]) -> None: ...

    async def upload(self, user_id: str, path: Path, unchanged: Callable[[], bool]) -> bool: ...

    async def fetch(self, user_id: str, path: Path) -> bool: ...


class IndexSaver:
    """Saves the indexes of ``cache`` to ``files`` (None until set: nothing is saved).
    ``waiting(user)``: whether messages of the user are queued, not yet indexed."""

    def __init__(
        self,
        cache: UserCache[MessageEntry],
        waiting: Callable[[str], bool],
        *,
        save_from: int,
        save_after: float,
    ) -> None:
        self.files: IndexFiles | None = None
        #: A cluster node's copies in the bucket (``server.cluster.indexes``).
        self.shared: SharedIndexes | None = None
        self._cache, self._waiting = cache, waiting
        self._save_from, self._save_after = save_from, save_after
        #: Writes under way per user (``writing``).
        self._writes: dict[str, int] = {}
        #: Users whose index changed since it was saved, and since when (monotonic).
        self._changed: dict[str, float] = {}

    @asynccontextmanager
    async def writing(self, user_ids: Collection[str]) -> AsyncIterator[None]:
        """Around a write of these users' messages, from before it is durable until it is
        applied to the indexes in memory: their saved indexes are deleted first (in the
        bucket too, for a cluster's node), and saved again later. Raises
        ``ArchiveUnavailable`` (then nothing may be written)."""
        if self.shared is not None:
            await self.shared.stale(user_ids)
        if self.files is not None:
            try:
                self.files.accept(user_ids)
            except OSError as exc:
                raise ArchiveUnavailable(f"cannot delete a saved index: {exc}") from exc
        for user_id in user_ids:
            self._writes[user_id] = self._writes.get(user_id, 0) + 1
        try:
            yield
        finally:
            now = time.monotonic()
            for user_id in user_ids:
                left = self._writes.pop(user_id) - 1
                if left:
                    self._writes[user_id] = left
                if self.files is not None:
                    self._changed[user_id] = now

    def built(self, user_id: str, entry: MessageEntry) -> None:
        """``entry`` was just built from the table: save it at the next round."""
        if self.files is not None and len(entry.index) >= self._save_from:
            self._changed[user_id] = 0.0

    async def save(self, *, quiet: float = 0.0, loads: int = 0) -> int:
        """Save the indexes that changed since they were saved (or were read from the
        table), of users with at least ``save_from`` messages whose messages have not
        changed for ``quiet`` seconds; returns how many were saved. Up to ``loads`` users
        written to while not in memory (an import, a user evicted since) are loaded
        for it; the others wait for a later call."""
        files = self.files
        if files is None:
            return 0
        saved = 0
        for user_id, since in list(self._changed.items()):
            if time.monotonic() - since < quiet or self._busy(user_id):
                continue
            entry = self._cache.peek(user_id)
            if entry is None:
                if loads <= 0:
                    continue
                loads -= 1
                entry = await self._cache.get(user_id)
                if self._busy(user_id):
                    continue
            self._changed.pop(user_id, None)
            if entry.degraded or len(entry.index) < self._save_from:
                continue
            token, state = files.token(user_id), entry.saving()
            try:
                path = await anyio.to_thread.run_sync(_written, files, user_id, state)
                if files.install(user_id, path, token):
                    saved += 1
                    if self.shared is not None:
                        unchanged = functools.partial(_unchanged, files, user_id, token)
                        await self.shared.upload(user_id, files.path(user_id), unchanged)
                else:  # written to meanwhile: later
                    self._changed.setdefault(user_id, time.monotonic())
            except OSError as exc:
                _log.warning("cannot save the index of user %s: %s", user_id, exc)
        return saved

    async def run(self) -> None:
        """Until cancelled: save what has rested ``save_after`` seconds."""
        every = min(_SAVE_EVERY, max(self._save_after / 3, 0.01))
        while True:
            await anyio.sleep(every)
            await self.save(quiet=self._save_after, loads=_LOADS_TO_SAVE)

    def _busy(self, user_id: str) -> bool:
        """A write of the user's messages is under way, or not yet applied in memory."""
        return user_id in self._writes or self._waiting(user_id)
