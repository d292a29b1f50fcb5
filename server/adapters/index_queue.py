"""Durable messages on their way into the in-memory search indexes, off the ack's path.

Indexing a message asks LanceDB's analyzer for its terms, and LanceDB's runtime
is shared with appends, compaction and snapshot merges that can keep it busy
for a while. So once a message is durable its ``ack`` goes out, and one task
(``IndexQueue.run``) indexes queued messages in the order they were written. A
search waits until the messages of its user queued before it are indexed
(``settled``): what a user was told is stored is always found.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import anyio
import numpy as np
import numpy.typing as npt
from anyio.abc import TaskStatus

from schemas.records import ArchivedMessage

__all__ = ["IndexQueue"]

_log = logging.getLogger("mnemo.store")

_Index = Callable[[Sequence[ArchivedMessage], npt.NDArray[np.float32]], Awaitable[None]]


class IndexQueue:
    """Indexes messages in order, in ``run``'s task; without one running, ``put`` callers
    index their own messages (``running`` is false)."""

    def __init__(self, index: _Index, forget: Callable[[str], None]) -> None:
        """``index`` indexes messages; ``forget`` drops a user's index (their messages left
        queued when ``run`` stops are read back on their next search)."""
        self._index, self._forget = index, forget
        self._queued: list[tuple[Sequence[ArchivedMessage], npt.NDArray[np.float32]]] = []
        #: Queued, not yet indexed messages per user.
        self._waiting: dict[str, int] = {}
        self._wake = anyio.Event()
        self._progress = anyio.Event()
        self.running = False

    def put(self, rows: Sequence[ArchivedMessage], matrix: npt.NDArray[np.float32]) -> None:
        self._queued.append((rows, matrix))
        for message in rows:
            self._waiting[message.user_id] = self._waiting.get(message.user_id, 0) + 1
        self._wake.set()

    def waiting(self, user_id: str) -> bool:
        """Whether messages of the user are queued, not yet indexed."""
        return user_id in self._waiting

    async def settled(self, user_id: str | None = None) -> None:
        """Return once the messages queued so far (of ``user_id``, or of everyone) are
        indexed."""
        while self._waiting.get(user_id, 0) if user_id is not None else self._waiting:
            await self._progress.wait()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Index what is queued, forever (until cancelled)."""
        self.running = True
        task_status.started()
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                batch, self._queued = self._queued, []
                if not batch:
                    continue
                rows = [m for part, _ in batch for m in part]
                matrix = np.concatenate([m for _, m in batch])
                try:
                    with anyio.CancelScope(shield=True):  # started: the rows get indexed
                        await self._index(rows, matrix)
                except Exception:
                    _log.exception("indexing %d messages failed; their users reload", len(rows))
                    for user_id in {m.user_id for m in rows}:
                        self._forget(user_id)
                finally:
                    self._done(rows)
        finally:
            self.running = False
            for user_id in self._waiting:
                self._forget(user_id)
            self._queued.clear()
            self._waiting.clear()
            self._progress.set()

    def _done(self, rows: Sequence[ArchivedMessage]) -> None:
        for message in rows:
            left = self._waiting[message.user_id] - 1
            if left:
                self._waiting[message.user_id] = left
            else:
                del self._waiting[message.user_id]
        self._progress.set()
        self._progress = anyio.Event()
