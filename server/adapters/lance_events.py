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
    quote_all,
)
from server.adapters.lance_epochs import Epochs, with_epoch

__all__ = ["LanceEvents"]

_json = msgspec.json.Encoder()
_event = msgspec.json.Decoder(MemoryEvent)
_SCHEMA = with_epoch(
    pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("event_type", pa.string(), nullable=False),
            pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("data", pa.string(), nullable=False),
        ]
    )
)


class LanceEvents:
    """Implements the ``EventLog`` port on the connection of an opened ``LanceStore``."""

    def __init__(self, db: Any, *, gate: PurgeGate, epochs: Epochs) -> None:
        self._db, self._gate, self._epochs = db, gate, epochs
        self._table: Any = None

    async def open(self) -> None:
        self._table = await self._epochs.open(self._db, "memory_events", _SCHEMA, self._gate)

    def close(self) -> None:
        if self._table is not None:
            self._table.close()

    async def append_events(self, items: Sequence[MemoryEvent]) -> None:
        if not items:
            return
        rows = self._epochs.stamp(
            [
                {
                    "id": e.id,
                    "user_id": e.user_id,
                    "event_type": e.event_type,
                    "created_at": e.created_at,
                    "data": _json.encode(e).decode(),
                }
                for e in items
            ]
        )
        await self._epochs.append(self._table, pa.Table.from_pylist(rows, schema=_SCHEMA))

    async def events_of(
        self, user_id: str, *, limit: int, types: Sequence[str] = ()
    ) -> list[MemoryEvent]:
        where = self._epochs.reads(user_id)
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
        return await self._epochs.erase(self._gate, self._table, user_id)

    async def optimize(self, cleanup_older_than: float) -> None:
        await self._gate.optimize((self._table,), cleanup_older_than)
