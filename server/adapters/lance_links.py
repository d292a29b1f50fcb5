"""LanceDB table ``memory_links``: provenance links between a user's memories."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
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
from server.adapters.learned_journal import LearnedJournal

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


def _key(link: MemoryLink) -> tuple[str, ...]:
    return tuple(getattr(link, k) for k in _KEY)


def _ordered(links: list[MemoryLink]) -> list[MemoryLink]:
    """Oldest first; a link both journaled and moved while it was read, once."""
    unique = {_key(link): link for link in links}
    return sorted(unique.values(), key=lambda k: (k.created_at, k.source_id, k.target_id))


def _item(kind: str, item_id: str, side: str) -> str:
    return f"{side}_type = {quote(kind)} AND {side}_id = {quote(item_id)}"


class LanceLinks:
    """Implements the ``LinkStore`` port on the connection of an opened ``LanceStore``."""

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
        """Links go to ``journal`` from now on (see ``LanceFacts.journal_to``)."""
        self._journal, self._settled = journal, settled

    async def open(self) -> None:
        self._table = await self._epochs.open(self._db, "memory_links", _SCHEMA, self._gate)

    def close(self) -> None:
        if self._table is not None:
            self._table.close()

    async def add_links(self, items: Sequence[MemoryLink]) -> int:
        unique = {_key(i): i for i in items if user_filter(i.user_id)}
        if not unique:
            return 0
        if self._journal is None:
            before = int(await self._gate.read(lambda: self._table.count_rows()))
            await self.move(list(unique.values()))
            return int(await self._gate.read(lambda: self._table.count_rows())) - before
        # Journaled: the links neither pending nor in the table are new.
        pending = {_key(link) for link in self._journal.pending().links}
        fresh = [link for key, link in unique.items() if key not in pending]
        stored: set[tuple[str, ...]] = set()
        for user in sorted({link.user_id for link in fresh}):
            sources = quote_all(sorted({link.source_id for link in fresh if link.user_id == user}))
            query = self._table.query().where(
                f"{self._epochs.reads(user)} AND source_id IN {sources}"
            )
            rows = await self._gate.read(query.select(_KEY).to_list)
            stored |= {tuple(r[k] for k in _KEY) for r in rows}
        fresh = [link for link in fresh if _key(link) not in stored]
        if fresh:
            await self._journal.write(links=fresh)
        return len(fresh)

    async def move(self, items: Sequence[MemoryLink]) -> None:
        """Merge ``items`` into the table: a link already there is left as it is."""
        if not items:
            return
        rows = self._epochs.stamp(
            [{k: getattr(i, k) for k in [*_KEY, "relation", "created_at"]} for i in items]
        )
        data = pa.Table.from_pylist(rows, schema=_SCHEMA)
        # Matched with the epoch too: a late writer's link, not read, hides no new one.
        await self._table.merge_insert([*_KEY, EPOCH]).when_not_matched_insert_all().execute(data)
        await self._epochs.landed(self._table, data)

    async def links_of(
        self, user_id: str, item_type: str, item_id: str, *, direction: str = "both"
    ) -> list[MemoryLink]:
        sides = {"outgoing": ["source"], "incoming": ["target"], "both": ["source", "target"]}
        either = " OR ".join(f"({_item(item_type, item_id, s)})" for s in sides[direction])
        query = self._table.query().where(f"{self._epochs.reads(user_id)} AND ({either})")
        query = query.select([*_KEY, "relation", "created_at"])
        pending = self._pending(user_id)
        rows = await self._gate.read(query.to_list)
        found = [MemoryLink(**r) for r in rows]
        found += [
            link
            for link in pending
            if (
                direction != "incoming"
                and (link.source_type, link.source_id) == (item_type, item_id)
            )
            or (
                direction != "outgoing"
                and (link.target_type, link.target_id) == (item_type, item_id)
            )
        ]
        return _ordered(found)

    def _pending(self, user_id: str) -> list[MemoryLink]:
        """The user's journaled links: taken before a read of the table."""
        if self._journal is None:
            return []
        return [link for link in self._journal.pending().links if link.user_id == user_id]

    async def links_of_user(self, user_id: str) -> list[MemoryLink]:
        query = self._table.query().where(self._epochs.reads(user_id))
        pending = self._pending(user_id)
        rows = await self._gate.read(query.select([*_KEY, "relation", "created_at"]).to_list)
        return _ordered([*(MemoryLink(**r) for r in rows), *pending])

    async def delete_links_of(self, user_id: str, item_type: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        kind, listed = quote(item_type), quote_all(ids)
        sides = [f"({s}_type = {kind} AND {s}_id IN {listed})" for s in ("source", "target")]
        return await self._erase(user_id, " OR ".join(sides))

    async def clear_links(self, user_id: str) -> int:
        return await self._erase(user_id)

    async def _erase(self, user_id: str, also: str = "") -> int:
        if self._settled is not None:
            async with self._settled():  # no journal file keeps what is deleted
                return await self._epochs.erase(self._gate, self._table, user_id, also)
        return await self._epochs.erase(self._gate, self._table, user_id, also)

    async def optimize(self, cleanup_older_than: float) -> None:
        await self._gate.optimize((self._table,), cleanup_older_than)
