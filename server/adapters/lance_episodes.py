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
    quote,
    quote_all,
)
from server.adapters.lance_counts import CountMemo
from server.adapters.lance_epochs import Epochs, scoped_records_schema

__all__ = ["LanceEpisodes"]

_json = msgspec.json.Encoder()
_episode = msgspec.json.Decoder(Episode)
Item = tuple[Episode, Sequence[float]]


class LanceEpisodes:
    """Implements the ``EpisodeStore`` port on the connection of an opened ``LanceStore``."""

    def __init__(self, db: Any, *, dim: int, gate: PurgeGate, epochs: Epochs) -> None:
        self._db, self._dim, self._gate, self._epochs = db, dim, gate, epochs
        self._table: Any = None
        #: Episodes per user, kept between writes: a search of a user without any
        #: costs no read of the table.
        self._counted = CountMemo()

    async def open(self) -> None:
        self._table = await self._epochs.open(
            self._db, "episodes", scoped_records_schema(self._dim), self._gate
        )

    def close(self) -> None:
        if self._table is not None:
            self._table.close()

    async def _read(self, where: str) -> list[Item]:
        query = self._table.query().where(where).select(["data", "vector"])
        rows = await self._gate.read(query.to_list)
        items = [(_episode.decode(r["data"]), r["vector"]) for r in rows]
        return sorted(items, key=lambda item: (item[0].created_at, item[0].id))

    async def episodes_of(self, user_id: str, *, scope: str | None = None) -> list[Item]:
        where = self._epochs.reads(user_id)
        if scope is not None:
            if not SAFE_ID.match(scope):
                raise ValueError(f"invalid scope {scope!r}")
            where += f" AND scope = {quote(scope)}"
        return await self._read(where)

    async def get_episodes(self, user_id: str, ids: Sequence[str]) -> list[Item]:
        if not ids:
            return []
        return await self._read(f"{self._epochs.reads(user_id)} AND id IN {quote_all(ids)}")

    async def episode_count(self, user_id: str) -> int:
        async def count() -> dict[str, int]:
            query = self._table.query().where(self._epochs.reads(user_id)).select(["id"])
            return {"episodes": len(await self._gate.read(query.to_list))}

        return (await self._counted.get(user_id, None, count))["episodes"]

    def _rows(self, items: Sequence[Item]) -> pa.Table:
        rows = self._epochs.stamp(
            [
                {
                    "id": e.id,
                    "user_id": e.user_id,
                    "scope": e.scope,
                    "created_at": e.created_at,
                    "data": _json.encode(e).decode(),
                    "vector": v.tolist() if isinstance(v, np.ndarray) else list(v),
                }
                for e, v in items
            ]
        )
        return pa.Table.from_pylist(rows, schema=scoped_records_schema(self._dim))

    async def add_episodes(self, items: Sequence[Item]) -> None:
        """Append new episodes: much cheaper than a merge on a large table."""
        if not items:
            return
        users = {e.user_id for e, _ in items}
        self._counted.written(users)
        try:
            await self._epochs.append(self._table, self._rows(items))
        finally:
            self._counted.written(users)

    async def put_episodes(self, items: Sequence[Item]) -> None:
        if not items:
            return
        users = {e.user_id for e, _ in items}
        self._counted.written(users)
        try:
            await self._epochs.merge(self._table, ["user_id", "id"], self._rows(items))
        finally:
            self._counted.written(users)

    async def _delete(self, user_id: str, also: str = "") -> int:
        self._counted.written([user_id])
        try:
            return await self._epochs.erase(self._gate, self._table, user_id, also)
        finally:
            self._counted.written([user_id])

    async def delete_episodes(self, user_id: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        return await self._delete(user_id, f"id IN {quote_all(ids)}")

    async def clear_episodes(self, user_id: str) -> int:
        return await self._delete(user_id)

    async def users_with_episodes(self) -> list[str]:
        rows = await self._gate.read(self._table.query().select(["user_id"]).to_list)
        return sorted({r["user_id"] for r in rows})

    async def optimize(self, cleanup_older_than: float) -> None:
        await self._gate.optimize((self._table,), cleanup_older_than)
