"""LanceDB table ``memory_links``: provenance links between a user's memories."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from schemas.records import MemoryLink
from server.adapters.lance_common import (
    PurgeGate,
    quote,
    quote_all,
    user_filter,
)
from server.adapters.lance_epochs import EPOCH, Epochs, with_epoch

__all__ = ["LanceLinks"]

_SCHEMA = with_epoch(
    pa.schema(
        [
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("source_type", pa.string(), nullable=False),
            pa.field("source_id", pa.string(), nullable=False),
            pa.field("target_type", pa.string(), nullable=False),
            pa.field("target_id", pa.string(), nullable=False),
            pa.field("relation", pa.string(), nullable=False),
            pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
        ]
    )
)
#: A link's key: one link per source and target (seed 002's primary key), per user.
_KEY = ["user_id", "source_type", "source_id", "target_type", "target_id"]


def _item(kind: str, item_id: str, side: str) -> str:
    return f"{side}_type = {quote(kind)} AND {side}_id = {quote(item_id)}"


class LanceLinks:
    """Implements the ``LinkStore`` port on the connection of an opened ``LanceStore``."""

    def __init__(self, db: Any, *, gate: PurgeGate, epochs: Epochs) -> None:
        self._db, self._gate, self._epochs = db, gate, epochs
        self._table: Any = None

    async def open(self) -> None:
        self._table = await self._epochs.open(self._db, "memory_links", _SCHEMA, self._gate)

    def close(self) -> None:
        if self._table is not None:
            self._table.close()

    async def add_links(self, items: Sequence[MemoryLink]) -> int:
        unique = {tuple(getattr(i, k) for k in _KEY): i for i in items if user_filter(i.user_id)}
        if not unique:
            return 0
        before = int(await self._gate.read(lambda: self._table.count_rows()))
        rows = self._epochs.stamp(
            [{k: getattr(i, k) for k in [*_KEY, "relation", "created_at"]} for i in unique.values()]
        )
        data = pa.Table.from_pylist(rows, schema=_SCHEMA)
        # Matched with the epoch too: a late writer's link, not read, hides no new one.
        await self._table.merge_insert([*_KEY, EPOCH]).when_not_matched_insert_all().execute(data)
        await self._epochs.landed(self._table, data)
        return int(await self._gate.read(lambda: self._table.count_rows())) - before

    async def links_of(
        self, user_id: str, item_type: str, item_id: str, *, direction: str = "both"
    ) -> list[MemoryLink]:
        sides = {"outgoing": ["source"], "incoming": ["target"], "both": ["source", "target"]}
        either = " OR ".join(f"({_item(item_type, item_id, s)})" for s in sides[direction])
        query = self._table.query().where(f"{self._epochs.reads(user_id)} AND ({either})")
        query = query.select([*_KEY, "relation", "created_at"])
        rows = await self._gate.read(query.to_list)
        found = [MemoryLink(**r) for r in rows]
        return sorted(found, key=lambda k: (k.created_at, k.source_id, k.target_id))

    async def links_of_user(self, user_id: str) -> list[MemoryLink]:
        query = self._table.query().where(self._epochs.reads(user_id))
        rows = await self._gate.read(query.select([*_KEY, "relation", "created_at"]).to_list)
        found = [MemoryLink(**r) for r in rows]
        return sorted(found, key=lambda k: (k.created_at, k.source_id, k.target_id))

    async def delete_links_of(self, user_id: str, item_type: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        kind, listed = quote(item_type), quote_all(ids)
        sides = [f"({s}_type = {kind} AND {s}_id IN {listed})" for s in ("source", "target")]
        return await self._epochs.erase(self._gate, self._table, user_id, " OR ".join(sides))

    async def clear_links(self, user_id: str) -> int:
        return await self._epochs.erase(self._gate, self._table, user_id)

    async def optimize(self, cleanup_older_than: float) -> None:
        await self._gate.optimize((self._table,), cleanup_older_than)
