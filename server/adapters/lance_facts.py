"""LanceDB tables for what mnemo learns: facts, per-app notes, user profiles, extraction progress.

Rows keep the filterable columns (user, scope, validity, ...) as columns and
the whole record as JSON in ``data``, so records can gain fields without a
table migration. Facts also carry their embedding and a full-text index.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, BTree

from actors.ports import FactHit, VectorSource, resolve
from memory.facts import Stored, Vector
from memory.formats import newest_notes
from memory.keywords import extract_keywords
from memory.ranking import full_text_query
from memory.stats import fact_stats, in_scope
from memory.text import query_text
from schemas.records import AppNote, Fact, Progress, UserProfile
from schemas.settings import SearchMode
from server.adapters.lance_analyzer import FTS_TOKENIZER, Analyzer, AnalyzerUnavailable
from server.adapters.lance_cache import Budget, FactEntry, UserCache, hybrid_ranks
from server.adapters.lance_common import WARM_UP_USER, PurgeGate, quote, quote_all, user_filter
from server.adapters.lance_counts import CountMemo
from server.adapters.lance_epochs import Epochs, with_epoch
from server.adapters.learned_journal import LearnedJournal, Moving, Pending

__all__ = ["LanceFacts"]

_log = logging.getLogger("mnemo.store")
_json = msgspec.json.Encoder()
_fact = msgspec.json.Decoder(Fact)
_note = msgspec.json.Decoder(AppNote)
_profile = msgspec.json.Decoder(UserProfile)


def _facts_schema(dim: int) -> pa.Schema:
    return with_epoch(
        pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("user_id", pa.string(), nullable=False),
                pa.field("scope", pa.string(), nullable=False),
                pa.field("validity", pa.string(), nullable=False),
                pa.field("category", pa.string(), nullable=False),
                pa.field("content", pa.string(), nullable=False),
                pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
                pa.field("data", pa.string(), nullable=False),
                pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
            ]
        )
    )


_NOTES = with_epoch(
    pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("app_id", pa.string(), nullable=False),
            pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("data", pa.string(), nullable=False),
        ]
    )
)
_PROFILES = with_epoch(
    pa.schema(
        [
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("data", pa.string(), nullable=False),
        ]
    )
)
_PROGRESS = with_epoch(
    pa.schema(
        [
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("session_id", pa.string(), nullable=False),
            pa.field("scope", pa.string(), nullable=False),
            pa.field("extracted_through", pa.int32(), nullable=False),
            pa.field("last_turn", pa.int32(), nullable=False),
        ]
    )
)
_FACT_COLUMNS = ["data", "vector"]
_PROGRESS_COLUMNS = list(Progress.__struct_fields__)


def _fact_row(fact: Fact, vector: Vector) -> dict[str, Any]:
    return {
        "id": fact.id,
        "user_id": fact.user_id,
        "scope": fact.scope,
        "validity": fact.validity,
        "category": fact.category,
        "content": fact.content,
        "created_at": fact.created_at,
        "data": _json.encode(fact).decode(),
        "vector": vector.tolist() if isinstance(vector, np.ndarray) else list(vector),
    }


def _stored(row: dict[str, Any]) -> Stored:
    return Stored(_fact.decode(row["data"]), row["vector"])


class LanceFacts:
    """Implements the ``FactStore`` port on the connection of an opened ``LanceStore``."""

    def __init__(
        self,
        db: Any,
        *,
        dim: int,
        gate: PurgeGate,
        epochs: Epochs,
        analyzer: Analyzer,
        budget: Budget,
    ) -> None:
        self._db, self._dim, self._gate, self._epochs = db, dim, gate, epochs
        self._analyzer = analyzer
        #: Each user's active facts, and an index over them for search.
        self._cache = UserCache(self._load, budget=budget)
        #: ``fact_counts`` by user and scope, until the user's facts are written.
        self._counted = CountMemo()
        #: With a journal, fact writes are durable once journaled (``journal_to``).
        self._journal: LearnedJournal | None = None
        self._settled: Callable[[], AbstractAsyncContextManager[None]] | None = None
        self._facts: Any = None
        self._notes: Any = None
        self._profiles: Any = None
        self._progress: Any = None

    async def open(self) -> None:
        epochs, db, gate = self._epochs, self._db, self._gate
        self._facts = await epochs.open(db, "facts", _facts_schema(self._dim), gate)
        self._notes = await epochs.open(db, "notes", _NOTES, gate)
        self._profiles = await epochs.open(db, "profiles", _PROFILES, gate)
        self._progress = await epochs.open(db, "progress", _PROGRESS, gate)
        have = {tuple(ix.columns) for ix in await self._facts.list_indices()}
        if ("user_id",) not in have:
            await self._facts.create_index("user_id", config=BTree())
        if ("id",) not in have:
            await self._facts.create_index("id", config=BTree())
        if ("content",) not in have:
            await self._facts.create_index(
                "content", config=FTS(base_tokenizer=FTS_TOKENIZER, with_position=True)
            )

    def journal_to(
        self,
        journal: LearnedJournal,
        settled: Callable[[], AbstractAsyncContextManager[None]],
    ) -> None:
        """Write facts to ``journal`` from now on (the store moves them into the table);
        ``settled`` moves what is pending and holds off moves, for deletes that purge."""
        self._journal, self._settled = journal, settled

    def close(self) -> None:
        for table in (self._facts, self._notes, self._profiles, self._progress):
            if table is not None:
                table.close()

    # -- facts ---------------------------------------------------------------

    async def _load(self, user_id: str) -> FactEntry:
        pending = self._pending()
        entry = await self._read_active(self._epochs.reads(user_id))
        if pending is None or not pending.facts:
            return entry
        return FactEntry(self._dim, _active(pending.overlay(user_id, list(entry.facts.values()))))

    def _pending(self) -> Pending | None:
        """The journaled writes not yet in the table: taken before a read of the table."""
        return self._journal.pending() if self._journal is not None else None

    async def _read_active(self, user: str) -> FactEntry:
        where = f"{user} AND validity = 'active'"
        rows = await self._gate.read(self._facts.query().where(where).select(_FACT_COLUMNS).to_list)
        return FactEntry(self._dim, map(_stored, rows))

    async def warm_up(self) -> None:
        """Read the facts of a user who has none, caching nothing: the process's first
        fact query is paid at start, not by the first user's search."""
        await self._read_active(user_filter(WARM_UP_USER))

    def forget(self, held: Callable[[str], bool]) -> None:
        """Drop the loaded facts of the users ``held`` says (a cluster's shard)."""
        for user_id in self._cache.users():
            if held(user_id):
                self._cache.drop(user_id)

    async def warm(self, user_id: str) -> None:
        """Load and index the user's active facts ahead of their first search."""
        await self._indexed(user_id)

    async def facts_of(self, user_id: str, *, active_only: bool = True) -> list[Stored]:
        if active_only:
            return list((await self._cache.get(user_id)).facts.values())
        pending = self._pending()
        where = self._epochs.reads(user_id)
        rows = await self._gate.read(self._facts.query().where(where).select(_FACT_COLUMNS).to_list)
        stored = [_stored(r) for r in rows]
        return stored if pending is None else pending.overlay(user_id, stored)

    async def facts_of_users(self, user_ids: Sequence[str]) -> dict[str, list[Stored]]:
        """Active facts of several users (the writer's batched learning): those not in memory
        are read in one query."""
        for user_id in user_ids:
            user_filter(user_id)
        cold = [u for u in user_ids if not self._cache.holds(u)]
        if cold:
            pending = self._pending()
            where = f"{self._epochs.reads_all(cold)} AND validity = 'active'"
            rows = await self._gate.read(
                self._facts.query().where(where).select(_FACT_COLUMNS).to_list
            )
            loaded: dict[str, list[Stored]] = {u: [] for u in cold}
            for row in rows:
                stored = _stored(row)
                loaded[stored.fact.user_id].append(stored)
            for user_id, stored_facts in loaded.items():
                if pending is not None:
                    stored_facts = _active(pending.overlay(user_id, stored_facts))
                self._cache.insert(user_id, FactEntry(self._dim, stored_facts))
        return {u: list((await self._cache.get(u)).facts.values()) for u in user_ids}

    async def list_facts(
        self, user_id: str, *, limit: int, offset: int, validity: str | None = "active"
    ) -> tuple[list[Fact], int]:
        if self._journal is not None and self._journal.holds(user_id):
            every = [s.fact for s in await self.facts_of(user_id, active_only=False)]
            held = sorted((f for f in every if validity in (None, f.validity)), key=_newest_first)
            return held[offset : offset + limit], len(held)
        where = self._epochs.reads(user_id)
        if validity is not None:
            where += f" AND validity = {quote(validity)}"
        total = int(await self._gate.read(lambda: self._facts.count_rows(where)))
        rows = await self._gate.read(self._facts.query().where(where).select(["data"]).to_list)
        facts = sorted((_fact.decode(r["data"]) for r in rows), key=_newest_first)
        return facts[offset : offset + limit], total

    async def count_facts(self, user_id: str, validity: str, *, scope: str | None) -> int:
        if self._journal is not None and self._journal.holds(user_id):
            every = await self.facts_of(user_id, active_only=False)
            return sum(
                1
                for s in every
                if s.fact.validity == validity and (scope is None or in_scope(s.fact.scope, scope))
            )
        where = f"{self._epochs.reads(user_id)} AND validity = {quote(validity)}"
        if scope is not None:
            where += f" AND scope IN {quote_all(['global', scope])}"
        count: int = await self._gate.read(lambda: self._facts.count_rows(where))
        return count

    async def fact_counts(self, user_id: str, *, scope: str | None) -> dict[str, int]:
        user_filter(user_id)

        async def count() -> dict[str, int]:
            active = [s.fact for s in await self.facts_of(user_id) if in_scope(s.fact.scope, scope)]
            others = {
                v: await self.count_facts(user_id, v, scope=scope)
                for v in ("superseded", "expired", "retracted")
            }
            return fact_stats(active, others)

        return await self._counted.get(user_id, scope, count)

    async def get_facts(self, user_id: str, ids: Sequence[str]) -> list[Stored]:
        if not ids:
            return []
        pending = self._pending()
        where = f"{self._epochs.reads(user_id)} AND id IN {quote_all(ids)}"
        rows = await self._gate.read(self._facts.query().where(where).select(_FACT_COLUMNS).to_list)
        stored = [_stored(r) for r in rows]
        if pending is None:
            return stored
        wanted = set(ids)
        return [s for s in pending.overlay(user_id, stored) if s.fact.id in wanted]

    async def get_facts_by_key(self, keys: Sequence[tuple[str, str]]) -> list[Stored]:
        """Facts named by (user id, fact id) pairs, of any users, in one query."""
        if not keys:
            return []
        pending = self._pending()
        users = sorted({u for u, _ in keys})
        ids = quote_all(sorted({i for _, i in keys}))
        where = f"{self._epochs.reads_all(users)} AND id IN {ids}"
        rows = await self._gate.read(self._facts.query().where(where).select(_FACT_COLUMNS).to_list)
        wanted = set(keys)
        found = list(map(_stored, rows))
        if pending is not None:
            found = [
                s
                for user in users
                for s in pending.overlay(user, [f for f in found if f.fact.user_id == user])
            ]
        return [s for s in found if (s.fact.user_id, s.fact.id) in wanted]

    async def add_facts(self, items: Sequence[Stored]) -> None:
        """Append new facts: a plain append, much cheaper than a merge on a large table."""
        if not items:
            return
        for item in items:
            user_filter(item.fact.user_id)
        users = {i.fact.user_id for i in items}
        self._counted.written(users)
        try:
            if self._journal is not None:
                await self._journal.write(facts=items, fresh=True)
            else:
                await self._append(items)
            self._held(items)
        finally:
            self._counted.written(users)

    async def _append(self, items: Sequence[Stored]) -> None:
        rows = self._epochs.stamp([_fact_row(i.fact, i.vector) for i in items])
        data = pa.Table.from_pylist(rows, schema=_facts_schema(self._dim))
        await self._epochs.append(self._facts, data)

    async def _merge(self, items: Sequence[Stored]) -> None:
        data = pa.Table.from_pylist(
            self._epochs.stamp([_fact_row(i.fact, i.vector) for i in items]),
            schema=_facts_schema(self._dim),
        )
        await self._epochs.merge(self._facts, ["user_id", "id"], data)

    async def move(self, moving: Moving) -> None:
        """Write journaled facts into the table (``LanceStore.flush_learned``): the new ones
        appended, the changed ones merged, the deleted ones deleted."""
        if moving.fresh:
            await self._append(moving.fresh)
        if moving.changed:
            await self._merge(moving.changed)
        for user_id, ids in moving.deleted.items():
            await self._epochs.delete(self._gate, self._facts, user_id, f"id IN {quote_all(ids)}")

    def _held(self, items: Sequence[Stored]) -> None:
        """Apply written facts to the users' entries in memory."""
        by_user: dict[str, list[Stored]] = {}
        for item in items:
            by_user.setdefault(item.fact.user_id, []).append(item)
        for user_id, mine in by_user.items():
            self._cache.apply(user_id, functools.partial(FactEntry.put, items=mine))

    async def put_facts(self, items: Sequence[Stored]) -> None:
        """Insert or replace facts (matched on user and id)."""
        if not items:
            return
        for item in items:
            user_filter(item.fact.user_id)
        users = {i.fact.user_id for i in items}
        self._counted.written(users)
        try:
            if self._journal is not None:
                await self._journal.write(facts=items)
            else:
                await self._merge(items)
            self._held(items)
        finally:
            self._counted.written(users)

    async def delete_facts(self, user_id: str, ids: Sequence[str], *, purge_now: bool) -> int:
        if not ids:
            return 0
        if self._settled is not None and purge_now:
            async with self._settled():  # no journal file keeps what is deleted
                return await self._delete(user_id, ids, purge_now=True)
        return await self._delete(user_id, ids, purge_now=purge_now)

    async def _delete(self, user_id: str, ids: Sequence[str], *, purge_now: bool) -> int:
        self._counted.written([user_id])
        try:
            if self._journal is not None and not purge_now:
                found = [s.fact.id for s in await self.get_facts(user_id, ids)]
                if found:
                    await self._journal.write(deleted=[(user_id, found)])
                count = len(found)
            else:
                also = f"id IN {quote_all(ids)}"
                count = await self._epochs.delete(self._gate, self._facts, user_id, also)
            if count:
                self._cache.apply(user_id, lambda entry: entry.remove(ids))
        finally:
            self._counted.written([user_id])
        if count and purge_now:
            await self._gate.purge(self._facts)
        return count

    async def clear_facts(self, user_id: str) -> int:
        if self._settled is not None:
            async with self._settled():  # no journal file keeps what is deleted
                return await self._clear(user_id)
        return await self._clear(user_id)

    async def _clear(self, user_id: str) -> int:
        self._counted.written([user_id])
        try:
            count = await self._epochs.delete(self._gate, self._facts, user_id)
            if count:
                self._cache.drop(user_id)
        finally:
            self._counted.written([user_id])
        if count:
            await self._gate.purge(self._facts)
        return count

    async def search_facts(
        self,
        user_id: str,
        text: str,
        vector: VectorSource,
        *,
        k: int,
        scope: str | None,
        categories: Sequence[str] = (),
        mode: SearchMode = "hybrid",
    ) -> list[FactHit]:
        """Active facts by exact cosine and by BM25 (keyword counts when the analyzer fails),
        each side ``k`` deep (only one side in ``mode`` ``semantic`` or ``keyword``), plus
        the ``k`` active facts of ``categories`` in the scope nearest the query. ``text``
        is cleaned first (``memory.text.query_text``)."""
        user_filter(user_id)
        text = query_text(text)
        held = await self._indexed(user_id)
        words = full_text_query(text, mode)
        ranked = await hybrid_ranks(
            held.index,
            vector,
            functools.partial(self._analyzer.query_or_none, words),
            held.texts,
            lambda: extract_keywords(words),
            depth=k,
            scope=scope,
            mode=mode,
        )
        ranks: dict[int, list[int | None]] = {}
        for rank, position in enumerate(ranked.dense, 1):
            ranks[position] = [rank, None]
        for rank, position in enumerate(ranked.sparse, 1):
            ranks.setdefault(position, [None, None])[1] = rank
        near: dict[int, float] = {}
        if categories:
            extra = [p for p in held.of_categories(categories, scope) if p not in ranks]
            if extra and mode != "keyword":
                # Seed 001 recalls these categories first: the k of them nearest the
                # query (scoring each of thousands would cost more than the search).
                scores = held.index.similarities(extra, await resolve(vector))
                best = sorted(zip(scores, extra, strict=True), key=lambda pair: -pair[0])[:k]
                near = {position: score for score, position in best}
                extra = list(near)
            for position in extra:
                ranks.setdefault(position, [None, None])
        return [
            FactHit(
                held.stored(p),
                dense,
                text_rank,
                ranked.keyword.get(p, 0.0),
                similarity=ranked.similarity.get(p, near.get(p)),
                text_score=ranked.text_score.get(p),
            )
            for p, (dense, text_rank) in ranks.items()
        ]

    async def _indexed(self, user_id: str) -> FactEntry:
        """The user's entry with its index current (terms analyzed for new contents)."""
        entry = await self._cache.get(user_id)
        for _ in range(3):  # writes may land while the analyzer runs
            if not entry.dirty:
                break
            missing = entry.missing_terms()
            if missing:
                try:
                    terms = await self._analyzer.analyze([s.fact.content for s in missing])
                except AnalyzerUnavailable:
                    terms = [[] for _ in missing]  # found by vector and keywords only
                entry.learn_terms(missing, terms)
            if not entry.missing_terms():
                entry.rebuild()
        return entry

    # -- notes (seed 003) ----------------------------------------------------

    async def notes_of(
        self, user_id: str, app_id: str, *, limit: int | None = None
    ) -> list[AppNote]:
        # LanceDB queries have no ORDER BY; an app holds at most notes_per_app + 1 notes.
        where = f"{self._epochs.reads(user_id)} AND app_id = {quote(app_id)}"
        rows = await self._gate.read(self._notes.query().where(where).select(["data"]).to_list)
        return newest_notes((_note.decode(r["data"]) for r in rows), limit)

    async def notes_of_user(self, user_id: str) -> list[AppNote]:
        query = self._notes.query().where(self._epochs.reads(user_id)).select(["data"])
        rows = await self._gate.read(query.to_list)
        found = [_note.decode(r["data"]) for r in rows]
        return sorted(found, key=lambda n: (n.app_id, -n.created_at.timestamp(), n.id))

    async def count_notes(self, user_id: str, app_id: str) -> int:
        where = f"{self._epochs.reads(user_id)} AND app_id = {quote(app_id)}"
        count: int = await self._gate.read(lambda: self._notes.count_rows(where))
        return count

    async def put_notes(self, notes: Sequence[AppNote]) -> None:
        if not notes:
            return
        rows = self._epochs.stamp(
            [
                {
                    "id": n.id,
                    "user_id": n.user_id,
                    "app_id": n.app_id,
                    "created_at": n.created_at,
                    "data": _json.encode(n).decode(),
                }
                for n in notes
            ]
        )
        await self._epochs.merge(
            self._notes, ["user_id", "id"], pa.Table.from_pylist(rows, schema=_NOTES)
        )

    async def delete_notes(self, user_id: str, app_id: str, ids: Sequence[str] | None) -> int:
        also = f"app_id = {quote(app_id)}"
        if ids is not None:
            if not ids:
                return 0
            also += f" AND id IN {quote_all(ids)}"
        return await self._epochs.erase(self._gate, self._notes, user_id, also)

    async def clear_notes(self, user_id: str) -> int:
        return await self._epochs.erase(self._gate, self._notes, user_id)

    # -- profiles (seed 000) -------------------------------------------------

    async def get_profile(self, user_id: str) -> UserProfile | None:
        rows = await self._gate.read(
            self._profiles.query().where(self._epochs.reads(user_id)).limit(1).to_list
        )
        return _profile.decode(rows[0]["data"]) if rows else None

    async def put_profile(self, profile: UserProfile) -> None:
        rows = self._epochs.stamp(
            [{"user_id": profile.user_id, "data": _json.encode(profile).decode()}]
        )
        await self._epochs.merge(
            self._profiles, "user_id", pa.Table.from_pylist(rows, schema=_PROFILES)
        )

    async def delete_profile(self, user_id: str) -> None:
        await self._epochs.erase(self._gate, self._profiles, user_id)

    # -- extraction progress -------------------------------------------------

    async def put_progress(self, items: Sequence[Progress]) -> None:
        if not items:
            return
        rows = self._epochs.stamp([msgspec.structs.asdict(i) for i in items])
        await self._epochs.merge(
            self._progress, ["user_id", "session_id"], pa.Table.from_pylist(rows, schema=_PROGRESS)
        )

    async def users_with_facts(self) -> list[str]:
        pending = self._pending()
        rows = await self._gate.read(
            self._facts.query().where("validity = 'active'").select(["user_id"]).to_list
        )
        users = {r["user_id"] for r in rows}
        if pending is not None:
            users |= {u for (u, _), s in pending.facts.items() if s and s.fact.validity == "active"}
        return sorted(users)

    async def pending_progress(self) -> list[Progress]:
        """Sessions of any user with archived turns not yet extracted (for the retry sweep)."""
        rows = await self._gate.read(
            self._progress.query()
            .where("extracted_through < last_turn")
            .select(_PROGRESS_COLUMNS)
            .to_list
        )
        return [Progress(**r) for r in rows]

    async def get_progress(self, user_id: str, session_id: str) -> Progress | None:
        where = f"{self._epochs.reads(user_id)} AND session_id = {quote(session_id)}"
        query = self._progress.query().where(where).select(_PROGRESS_COLUMNS).limit(1)
        rows = await self._gate.read(query.to_list)
        return Progress(**rows[0]) if rows else None

    async def optimize(self, cleanup_older_than: float) -> None:
        tables = (self._facts, self._notes, self._profiles, self._progress)
        await self._gate.optimize(tables, cleanup_older_than)


def _active(stored: Sequence[Stored]) -> list[Stored]:
    return [s for s in stored if s.fact.validity == "active"]


def _newest_first(fact: Fact) -> tuple[float, str]:
    return (-fact.created_at.timestamp(), fact.id)
