"""LanceDB table ``entities``: seed 002's identity anchors, per user (the record as JSON)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pyarrow as pa

from schemas.records import Entity
from server.adapters.lance_common import PurgeGate, delete_rows, open_user_table, user_filter

__all__ = ["LanceEntities"]

_json = msgspec.json.Encoder()
_entity = msgspec.json.Decoder(Entity)
_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("user_id", pa.string(), nullable=False),
        pa.field("data", pa.string(), nullable=False),
    ]
)


class LanceEntities:
    """Implements the ``EntityStore`` port on the connection of an opened ``LanceStore``."""

    def __init__(self, db: Any, *, gate: PurgeGate) -> None:
        self._db, self._gate = db, gate
        self._table: Any = None

    async def open(self) -> None:
        self._table = await open_user_table(self._db, "entities", _SCHEMA)

    def close(self) -> None:
        if self._table is not None:
            self._table.close()

    async def entities_of(self, user_id: str) -> list[Entity]:
        query = self._table.query().where(user_filter(user_id)).select(["data"])
        return [_entity.decode(r["data"]) for r in await self._gate.read(query.to_list)]

    async def put_entities(self, items: Sequence[Entity]) -> None:
        if not items:
            return
        rows = [
            {"id": e.id, "user_id": e.user_id, "data": _json.encode(e).decode()}
            for e in items
            if user_filter(e.user_id)
        ]
        await (
            self._table.merge_insert(["user_id", "id"])
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(pa.Table.from_pylist(rows, schema=_SCHEMA))
        )

    async def clear_entities(self, user_id: str) -> int:
        where = user_filter(user_id)
        return await delete_rows(self._gate, self._table, where)

    async def optimize(self, cleanup_older_than: float) -> None:
        await self._gate.optimize((self._table,), cleanup_older_than)
