"""LanceDB table ``memory_events``: the append-only audit log of memory changes, per user."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pyarrow as pa

from schemas.records import MemoryEvent
from server.adapters.lance_common import (
    SAFE_ID,
    PurgeGate,
    delete_rows,
    open_user_table,
    quote_all,
    user_filter,
)

__all__ = ["LanceEvents"]

_json = msgspec.json.Encoder()
_event = msgspec.json.Decoder(MemoryEvent)
_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("user_id", pa.string(), nullable=False),
        pa.field("event_type", pa.string(), nullable=False),
        pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("data", pa.string(), nullable=False),
    ]
)


class LanceEvents:
    """Implements the ``EventLog`` port on the connection of an opened ``LanceStore``."""

    def __init__(self, db: Any, *, gate: PurgeGate) -> None:
        self._db, self._gate = db, gate
        self._table: Any = None

    async def open(self) -> None:
        self._table = await open_user_table(self._db, "memory_events", _SCHEMA)

    def close(self) -> None:
        if self._table is not None:
            self._table.close()

    async def append_events(self, items: Sequence[MemoryEvent]) -> None:
        if not items:
            return
        rows = [
            {
                "id": e.id,
                "user_id": e.user_id,
                "event_type": e.event_type,
                "created_at": e.created_at,
                "data": _json.encode(e).decode(),
            }
            for e in items
            if user_filter(e.user_id)
        ]
        await self._table.add(pa.Table.from_pylist(rows, schema=_SCHEMA))

    async def events_of(
        self, user_id: str, *, limit: int, types: Sequence[str] = ()
    ) -> list[MemoryEvent]:
        where = user_filter(user_id)
        if types:
            if not all(SAFE_ID.match(t) for t in types):
                raise ValueError("invalid event type")
            where += f" AND event_type IN {quote_all(types)}"
        query = self._table.query().where(where).select(["data"])
        rows = await self._gate.read(query.to_list)
        found = [_event.decode(r["data"]) for r in rows]
        # Appended in order: among equal times, the later row is the later event.
        ordered = sorted(enumerate(found), key=lambda p: (p[1].created_at, p[0]), reverse=True)
        return [e for _, e in ordered[:limit]]

    async def clear_events(self, user_id: str) -> int:
        where = user_filter(user_id)
        return await delete_rows(self._gate, self._table, where)

    async def optimize(self, cleanup_older_than: float) -> None:
        await self._gate.optimize((self._table,), cleanup_older_than)
