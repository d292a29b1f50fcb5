"""LanceDB table ``memory_events``: the append-only audit log of memory changes, per user."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
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
from server.adapters.learned_journal import LearnedJournal

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
        self._journal: LearnedJournal | None = None
        self._settled: Callable[[], AbstractAsyncContextManager[None]] | None = None

    def journal_to(
        self,
        journal: LearnedJournal,
        settled: Callable[[], AbstractAsyncContextManager[None]],
    ) -> None:
        """Log entries go to ``journal`` from now on (see ``LanceFacts.journal_to``)."""
        self._journal, self._settled = journal, settled

    async def open(self) -> None:
        self._table = await self._epochs.open(self._db, "memory_events", _SCHEMA, self._gate)

    def close(self) -> None:
        if self._table is not None:
            self._table.close()

    async def append_events(self, items: Sequence[MemoryEvent]) -> None:
        if not items:
            return
        if self._journal is not None:
            await self._journal.write(events=items)
            return
        await self.move(items, maybe_stored=False)

    async def move(self, items: Sequence[MemoryEvent], *, maybe_stored: bool) -> None:
        """Append ``items`` to the table; ``maybe_stored``: those already there are left
        out (a journal replayed, or a move that failed part way)."""
        if maybe_stored and items:
            listed = quote_all([e.id for e in items])
            query = self._table.query().where(f"id IN {listed}").select(["id"])
            there = {r["id"] for r in await self._gate.read(query.to_list)}
            items = [e for e in items if e.id not in there]
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
        pending = self._journal.pending().events if self._journal is not None else []
        query = self._table.query().where(where).select(["data"])
        rows = await self._gate.read(query.to_list)
        found = [_event.decode(r["data"]) for r in rows]
        if pending:  # journaled, after what is in the table (moved while read: once)
            there = {e.id for e in found}
            found += [
                e
                for e in pending
                if e.user_id == user_id
                and e.id not in there
                and (not types or e.event_type in types)
            ]
        # Appended in order: among equal times, the later row is the later event.
        ordered = sorted(enumerate(found), key=lambda p: (p[1].created_at, p[0]), reverse=True)
        return [e for _, e in ordered[:limit]]

    async def clear_events(self, user_id: str) -> int:
        if self._settled is not None:
            async with self._settled():  # no journal file keeps what is deleted
                return await self._epochs.erase(self._gate, self._table, user_id)
        return await self._epochs.erase(self._gate, self._table, user_id)

    async def optimize(self, cleanup_older_than: float) -> None:
        await self._gate.optimize((self._table,), cleanup_older_than)
