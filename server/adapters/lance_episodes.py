"""LanceDB table ``episodes``: seed 002's episodes stored directly, with their vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from schemas.records import Episode
from server.adapters.lance_common import (
    SAFE_ID,
    PurgeGate,
    delete_rows,
    open_user_table,
    quote,
    quote_all,
    user_filter,
)
from server.adapters.lance_counts import CountMemo

__all__ = ["LanceEpisodes"]

_json = msgspec.json.Encoder()
_episode = msgspec.json.Decoder(Episode)
Item = tuple[Episode, Sequence[float]]


def _schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("scope", pa.string(), nullable=False),
            pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("data", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
        ]
    )


class LanceEpisodes:
    """Implements the ``EpisodeStore`` port on the connection of an opened ``LanceStore``."""

    def __init__(self, db: Any, *, dim: int, gate: PurgeGate) -> None:
        self._db, self._dim, self._gate = db, dim, gate
        self._table: Any = None
        #: Episodes per user, kept between writes: a search of a user without any
        #: costs no read of the table.
        self._counted = CountMemo()

    async def open(self) -> None:
        self._table = await open_user_table(self._db, "episodes", _schema(self._dim))

    def close(self) -> None:
        if self._table is not None:
            self._table.close()

    async def _read(self, where: str) -> list[Item]:
        query = self._table.query().where(where).select(["data", "vector"])
        rows = await self._gate.read(query.to_list)
        items = [(_episode.decode(r["data"]), r["vector"]) for r in rows]
        return sorted(items, key=lambda item: (item[0].created_at, item[0].id))

    async def episodes_of(self, user_id: str, *, scope: str | None = None) -> list[Item]:
        where = user_filter(user_id)
        if scope is not None:
            if not SAFE_ID.match(scope):
                raise ValueError(f"invalid scope {scope!r}")
            where += f" AND scope = {quote(scope)}"
        return await self._read(where)

    async def get_episodes(self, user_id: str, ids: Sequence[str]) -> list[Item]:
        if not ids:
            return []
        return await self._read(f"{user_filter(user_id)} AND id IN {quote_all(ids)}")

    async def episode_count(self, user_id: str) -> int:
        async def count() -> dict[str, int]:
            query = self._table.query().where(user_filter(user_id)).select(["id"])
            return {"episodes": len(await self._gate.read(query.to_list))}

        return (await self._counted.get(user_id, None, count))["episodes"]

    def _rows(self, items: Sequence[Item]) -> pa.Table:
        rows = [
            {
                "id": e.id,
                "user_id": e.user_id,
                "scope": e.scope,
                "created_at": e.created_at,
                "data": _json.encode(e).decode(),
                "vector": v.tolist() if isinstance(v, np.ndarray) else list(v),
            }
            for e, v in items
            if user_filter(e.user_id)
        ]
        return pa.Table.from_pylist(rows, schema=_schema(self._dim))

    async def add_episodes(self, items: Sequence[Item]) -> None:
        """Append new episodes: much cheaper than a merge on a large table."""
        if not items:
            return
        users = {e.user_id for e, _ in items}
        self._counted.written(users)
        try:
            await self._table.add(self._rows(items))
        finally:
            self._counted.written(users)

    async def put_episodes(self, items: Sequence[Item]) -> None:
        if not items:
            return
        users = {e.user_id for e, _ in items}
        self._counted.written(users)
        try:
            await (
                self._table.merge_insert(["user_id", "id"])
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(self._rows(items))
            )
        finally:
            self._counted.written(users)

    async def _delete(self, user_id: str, where: str) -> int:
        self._counted.written([user_id])
        try:
            return await delete_rows(self._gate, self._table, where)
        finally:
            self._counted.written([user_id])

    async def delete_episodes(self, user_id: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        where = f"{user_filter(user_id)} AND id IN {quote_all(ids)}"
        return await self._delete(user_id, where)

    async def clear_episodes(self, user_id: str) -> int:
        return await self._delete(user_id, user_filter(user_id))

    async def users_with_episodes(self) -> list[str]:
        rows = await self._gate.read(self._table.query().select(["user_id"]).to_list)
        return sorted({r["user_id"] for r in rows})

    async def optimize(self, cleanup_older_than: float) -> None:
        await self._gate.optimize((self._table,), cleanup_older_than)
