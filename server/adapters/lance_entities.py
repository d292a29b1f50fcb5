"""LanceDB table ``entities``: seed 002's identity anchors, per user (the record as JSON).

Each user's entities are read once and kept in memory (every resolve needs all of
them); this process makes every write (``actors.writer``), and applies it to the kept
copy too. The least recently used users are dropped past ``CACHED_ENTITIES`` in all.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import msgspec
import pyarrow as pa

from schemas.records import Entity
from server.adapters.lance_common import PurgeGate
from server.adapters.lance_epochs import Epochs, with_epoch

__all__ = ["CACHED_ENTITIES", "LanceEntities"]

#: The most entities kept in memory, over all users (a user above it is still kept alone).
CACHED_ENTITIES = 200_000

_json = msgspec.json.Encoder()
_entity = msgspec.json.Decoder(Entity)
_SCHEMA = with_epoch(
    pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("data", pa.string(), nullable=False),
        ]
    )
)


class LanceEntities:
    """Implements the ``EntityStore`` port on the connection of an opened ``LanceStore``."""

    def __init__(
        self, db: Any, *, gate: PurgeGate, epochs: Epochs, cached: int = CACHED_ENTITIES
    ) -> None:
        self._db, self._gate, self._epochs = db, gate, epochs
        self._table: Any = None
        self._cached = cached
        self._kept: OrderedDict[str, list[Entity]] = OrderedDict()
        self._writes = 0  # a read that saw a write begin while it ran keeps nothing

    async def open(self) -> None:
        self._table = await self._epochs.open(self._db, "entities", _SCHEMA, self._gate)

    def close(self) -> None:
        if self._table is not None:
            self._table.close()

    async def entities_of(self, user_id: str) -> list[Entity]:
        """The kept list itself while the user's entities are unchanged (callers must not
        change it): a write replaces it with a new list."""
        kept = self._kept.get(user_id)
        if kept is not None:
            self._kept.move_to_end(user_id)
            return kept
        writes = self._writes
        query = self._table.query().where(self._epochs.reads(user_id)).select(["data"])
        found = [_entity.decode(r["data"]) for r in await self._gate.read(query.to_list)]
        if writes == self._writes:
            self._keep(user_id, found)
        return found

    def _keep(self, user_id: str, found: list[Entity]) -> None:
        self._kept[user_id] = found
        self._kept.move_to_end(user_id)
        total = sum(len(v) for v in self._kept.values())
        while total > self._cached and len(self._kept) > 1:
            _, dropped = self._kept.popitem(last=False)
            total -= len(dropped)

    async def put_entities(self, items: Sequence[Entity]) -> None:
        if not items:
            return
        rows = self._epochs.stamp(
            [{"id": e.id, "user_id": e.user_id, "data": _json.encode(e).decode()} for e in items]
        )
        self._writes += 1
        try:
            await self._epochs.merge(
                self._table, ["user_id", "id"], pa.Table.from_pylist(rows, schema=_SCHEMA)
            )
        except BaseException:
            for user_id in {e.user_id for e in items}:
                self._kept.pop(user_id, None)  # the write may have landed or not
            raise
        for user_id in {e.user_id for e in items}:
            kept = self._kept.get(user_id)
            if kept is None:
                continue
            changed = {e.id: e for e in items if e.user_id == user_id}
            # as the table scans: a rewritten row moves to the end, like a new one
            kept = [e for e in kept if e.id not in changed]
            self._kept[user_id] = kept + list(changed.values())

    async def clear_entities(self, user_id: str) -> int:
        self._writes += 1
        self._kept.pop(user_id, None)
        try:
            count = await self._epochs.delete(self._gate, self._table, user_id)
        finally:
            self._kept.pop(user_id, None)
        if count:
            await self._gate.purge(self._table)
        return count

    async def optimize(self, cleanup_older_than: float) -> None:
        await self._gate.optimize((self._table,), cleanup_older_than)
