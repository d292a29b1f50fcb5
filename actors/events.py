"""What happens inside the server, as typed events: for ``/ws/tail``, metrics and logs.

Actors, the writers and the learning pipeline call ``EventBus.emit``; it never
blocks and never fails. Listeners (metrics) run inline and must be quick;
subscribers (tail connections) each get a bounded buffer: when one falls
behind, its events are dropped and counted, and the next event it can take is
preceded by a ``tail.skipped`` marker saying how many it missed. A slow
subscriber therefore costs the actors nothing.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Collection
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal, get_args

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["KINDS", "LOG_CONTEXT", "Event", "EventBus", "EventKind", "RecentEvents", "Subscription"]

_log = logging.getLogger("mnemo.events")

#: (user id, session id) of the session actor running in this task, for log records.
LOG_CONTEXT: ContextVar[tuple[str, str] | None] = ContextVar("mnemo_session", default=None)

EventKind = Literal[
    "actor.spawned",
    "actor.resumed",
    "actor.expired",
    "actor.ended",
    "actor.stopped",
    "actor.crashed",
    "turn.received",
    "turn.acked",
    "chat.received",
    "chat.streamed",
    "chat.failed",
    "context.compacted",
    "extraction.started",
    "extraction.finished",
    "extraction.failed",
    "facts.added",
    "facts.reinforced",
    "facts.updated",
    "facts.superseded",
    "facts.conflicted",
    "facts.removed",
    "facts.evicted",
    "note.created",
    "note.compacted",
    "note.failed",
    "store.flushed",
    "store.optimized",
    "store.failed",
    "llm.error",
    "memory.logged",
    "tail.skipped",
]
KINDS: tuple[str, ...] = get_args(EventKind)


class Event(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One thing that happened. ``data`` holds the kind's details (counts, ids, ms).

    Not tracked by the garbage collector (``gc=False``): an event refers to nothing
    that could refer back to it, and the last 50 of every session are kept
    (``RecentEvents``), about a thousand new ones a second under load, which the
    collector would otherwise walk again at every young collection while they live.
    """

    kind: EventKind
    at: datetime
    session_id: str | None = None
    user_id: str | None = None
    data: dict[str, Any] = {}


def _matches(
    event: Event, session_id: str | None, user_id: str | None, kinds: Collection[str]
) -> bool:
    if session_id is not None and event.session_id != session_id:
        return False
    if user_id is not None and event.user_id != user_id:
        return False
    if not kinds:
        return True
    return any(event.kind == k or event.kind.startswith(k + ".") for k in kinds)


class Subscription:
    """A bounded, filtered view of the bus; iterate ``events``; close when done."""

    def __init__(
        self,
        bus: EventBus,
        buffer: int,
        session_id: str | None,
        user_id: str | None,
        kinds: Collection[str],
    ) -> None:
        self._bus = bus
        self._send: MemoryObjectSendStream[Event]
        self.events: MemoryObjectReceiveStream[Event]
        self._send, self.events = anyio.create_memory_object_stream[Event](max(buffer, 2))
        self.session_id, self.user_id, self.kinds = session_id, user_id, tuple(kinds)
        #: Events dropped since the last ``tail.skipped`` marker went out.
        self.skipped = 0

    def offer(self, event: Event) -> None:
        if not _matches(event, self.session_id, self.user_id, self.kinds):
            return
        try:
            if self.skipped:
                stats = self._send.statistics()
                if stats.current_buffer_used + 2 > stats.max_buffer_size:
                    raise anyio.WouldBlock
                marker = Event(kind="tail.skipped", at=event.at, data={"skipped": self.skipped})
                self._send.send_nowait(marker)
                self.skipped = 0
            self._send.send_nowait(event)
        except anyio.WouldBlock:
            self.skipped += 1
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.close()

    def close(self) -> None:
        self._bus.unsubscribe(self)
        self._send.close()
        self.events.close()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


_FINAL = frozenset({"actor.expired", "actor.ended", "actor.stopped", "actor.crashed"})


class RecentEvents:
    """The last ``size`` events of every live session (a bus listener), for
    ``GET /actors/{session_id}``. A session's events are dropped when it stops."""

    def __init__(self, size: int = 50) -> None:
        self._size = size
        self._by_session: dict[tuple[str, str], deque[Event]] = {}

    def __call__(self, event: Event) -> None:
        if event.session_id is None or event.user_id is None:
            return
        key = (event.user_id, event.session_id)
        if event.kind in _FINAL:
            self._by_session.pop(key, None)
            return
        found = self._by_session.get(key)
        if found is None:
            found = self._by_session[key] = deque(maxlen=self._size)
        found.append(event)

    def of(self, user_id: str, session_id: str) -> list[Event]:
        return list(self._by_session.get((user_id, session_id), ()))


class EventBus:
    def __init__(self) -> None:
        self._listeners: list[Callable[[Event], None]] = []
        self._subscriptions: list[Subscription] = []

    def emit(
        self,
        kind: EventKind,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        **data: Any,
    ) -> None:
        """Publish an event now. Never blocks, never raises."""
        event = Event(
            kind=kind, at=datetime.now(UTC), session_id=session_id, user_id=user_id, data=data
        )
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                _log.exception("event listener failed on %s", kind)
        for subscription in list(self._subscriptions):
            subscription.offer(event)

    def listen(self, listener: Callable[[Event], None]) -> None:
        """Call ``listener`` inline for every event (it must be quick and not block)."""
        self._listeners.append(listener)

    def subscribe(
        self,
        *,
        buffer: int = 1000,
        session_id: str | None = None,
        user_id: str | None = None,
        kinds: Collection[str] = (),
    ) -> Subscription:
        """Events from now on that match every given filter (a kind ``facts`` matches
        ``facts.added`` and the rest of its family)."""
        subscription = Subscription(self, buffer, session_id, user_id, kinds)
        self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)

    @property
    def subscribers(self) -> int:
        return len(self._subscriptions)
