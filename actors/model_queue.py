"""The model's learning work, served fairly across users.

Extraction, notes, their compaction and consolidation all ask the model in the
background. Sent as they come, one user's storm of them (sixteen consolidations at
once) fills the model server's queue, and another user's chat reply and fact writes
wait behind it. So every such call waits for a turn here first:

- at most ``places`` background calls run at once, whoever asks; a free place goes to
  the user whose turn it is, round-robin over the users waiting, each user's calls in
  their order;
- a call someone waits for (classifying a fact added by hand) is ``urgent``: it has
  ``places`` places of its own, served the same way, so it never waits behind the
  background work;
- a user with ``waiting_per_user`` calls waiting in a lane gets ``ModelBusy`` for the
  next one (their extraction falls back to the rule-based reader and stays pending, a
  consolidation stays pending), instead of a queue without end.

Chat replies do not wait here: the model server sees at most ``2 * places`` learning
calls at once, so with at least that many parallel slots (Ollama's
``OLLAMA_NUM_PARALLEL``) a chat is never queued behind them.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from actors.errors import ModelBusy

__all__ = ["ModelQueue"]

#: Calls one user may have waiting in one lane.
WAITING_PER_USER = 64


class _Lane:
    """At most ``places`` holders; waiters served round-robin by user."""

    def __init__(self, places: int) -> None:
        if places < 1:
            raise ValueError("a lane needs at least one place")
        self._places, self._used = places, 0
        #: Users with waiting calls, the next one to serve first; each user's in order.
        self._waiting: OrderedDict[str, deque[anyio.Event]] = OrderedDict()

    def waiting(self, user: str | None = None) -> int:
        if user is not None:
            return len(self._waiting.get(user, ()))
        return sum(len(queue) for queue in self._waiting.values())

    @asynccontextmanager
    async def hold(self, user: str) -> AsyncIterator[None]:
        await self._acquire(user)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, user: str) -> None:
        await anyio.lowlevel.checkpoint_if_cancelled()
        if self._used < self._places and not self._waiting:
            self._used += 1
            await anyio.lowlevel.cancel_shielded_checkpoint()
            return
        granted = anyio.Event()
        self._waiting.setdefault(user, deque()).append(granted)
        try:
            await granted.wait()
        except BaseException:
            if granted.is_set():
                self._release()  # handed a place while being cancelled: pass it on
            else:
                queue = self._waiting[user]
                queue.remove(granted)
                if not queue:
                    del self._waiting[user]
            raise

    def _release(self) -> None:
        """Hand the place to the first waiter of the user whose turn it is (that user
        then goes to the back of the round), or free it."""
        if not self._waiting:
            self._used -= 1
            return
        user, queue = self._waiting.popitem(last=False)
        granted = queue.popleft()
        if queue:
            self._waiting[user] = queue
        granted.set()  # the place passes on, still used


class ModelQueue:
    """Turns at the model for learning work (see the module). Shared by every keeper
    that asks the model in the background; made once per app (``actors.wiring``)."""

    def __init__(self, places: int, *, waiting_per_user: int = WAITING_PER_USER) -> None:
        self._lanes = {False: _Lane(places), True: _Lane(places)}
        self._waiting_per_user = waiting_per_user

    def waiting(self, *, urgent: bool = False) -> int:
        return self._lanes[urgent].waiting()

    @asynccontextmanager
    async def turn(self, user_id: str, *, urgent: bool = False) -> AsyncIterator[None]:
        """Wait for ``user_id``'s turn in the lane and hold a place for the block.
        Raises ``ModelBusy`` when the user already has as many calls waiting as they
        may. Canceling the wait is safe."""
        lane = self._lanes[urgent]
        if lane.waiting(user_id) >= self._waiting_per_user:
            raise ModelBusy(
                f"{self._waiting_per_user} model calls of this user are already waiting"
            )
        async with lane.hold(user_id):
            yield
