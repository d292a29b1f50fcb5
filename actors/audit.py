"""Recording memory events: into the user's ``memory_events`` log, and onto the event bus so
that ``/ws/tail`` and ``mnemo tail`` show them as they happen (kind ``memory.logged``)."""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from actors.events import EventBus
from actors.ports import Store
from memory.events import EventMaker, new_event_id
from schemas.records import MemoryEvent

__all__ = ["ACTING_FOR", "CHANGED_BY", "record", "record_one"]

#: Who changes memory through a keeper's operation: the log entry's ``actor``. ``rest``
#: unless the caller's transport says otherwise (the MCP tools: ``mcp``); the writer runs a
#: call with its caller's value (``ArchiveWriter.call``).
CHANGED_BY: ContextVar[str] = ContextVar("mnemo_changed_by", default="rest")
#: The user whose memory the current task works on: set by a session actor for itself and
#: the tasks it starts, and by a cluster node for each request it admits. A cluster's
#: writer runs a call only while the node still serves its caller's user.
ACTING_FOR: ContextVar[str | None] = ContextVar("mnemo_acting_for", default=None)


async def record(store: Store, bus: EventBus | None, events: Sequence[MemoryEvent]) -> None:
    """Append ``events`` to the log (the writer's task calls this), then publish each."""
    if not events:
        return
    await store.events.append_events(events)
    if bus is None:
        return
    for event in events:
        bus.emit(
            "memory.logged",
            user_id=event.user_id,
            event_type=event.event_type,
            actor=event.actor,
            **event.payload,
        )


async def record_one(
    store: Store,
    bus: EventBus | None,
    user_id: str,
    at: datetime,
    event_type: str,
    /,
    *,
    by: str | None = None,
    **payload: Any,
) -> None:
    """Make one event of ``user_id`` and record it (``record``); its actor is ``by``, or
    whoever changes memory now (``CHANGED_BY``)."""
    event = EventMaker(user_id, by or CHANGED_BY.get(), at, new_event_id)
    event(event_type, **payload)
    await record(store, bus, event.made)
