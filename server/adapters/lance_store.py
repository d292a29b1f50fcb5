"""The LanceDB store: archived messages and working-memory snapshots.

The only module that imports ``lancedb``. Every read and write names its user,
and every value that reaches a filter string is validated or quoted here.
Writes are expected to come from one writer (``actors.writer``): LanceDB makes a
version per write, so single-row appends are batched upstream and the writer
calls ``optimize()`` on a schedule.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import lancedb
import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lancedb.index import FTS, BTree
from lancedb.query import ColumnOrdering

from actors.errors import ArchiveUnavailable, MnemoError
from actors.ports import Embedder, Page, ScoredMessage, VectorSource
from memory.keywords import extract_keywords
from memory.recall import search_text
from memory.scoring import rrf_score
from memory.search_index import SearchIndex
from schemas.records import ArchivedMessage, WorkingMemory
from server.adapters.lance_analyzer import Analyzer, AnalyzerUnavailable, QueryTerms
from server.adapters.lance_cache import (
    Budget,
    MessageEntry,
    UserCache,
    best_first,
    fused,
    hybrid_ranks,
    with_neighbours,
)
from server.adapters.lance_common import PurgeGate, quote, quote_all, user_filter
from server.adapters.lance_facts import LanceFacts

__all__ = ["LanceStore", "StoreMismatch", "quote"]

_MESSAGES = "messages"
_WORKING = "working"
_EMBEDDER_KEY = b"mnemo.embedder"
_json = msgspec.json.Encoder()
_working_decoder = msgspec.json.Decoder(WorkingMemory)
_meta_decoder: msgspec.json.Decoder[dict[str, Any]] = msgspec.json.Decoder(dict[str, Any])


class StoreMismatch(MnemoError):
    """The data directory was written with another embedder (vector size differs)."""

    code = "store_mismatch"


def _messages_schema(dim: int, embedder: str) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("session_id", pa.string(), nullable=False),
            pa.field("scope", pa.string(), nullable=False),
            pa.field("turn", pa.int32(), nullable=False),
            pa.field("role", pa.string(), nullable=False),
            pa.field("speaker", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("at", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("meta", pa.string(), nullable=False),
            pa.field("source_id", pa.string(), nullable=False),
            # What the message is found by (memory.recall.search_text): full-text indexed.
            pa.field("search_text", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
        ],
        metadata={_EMBEDDER_KEY: embedder.encode()},
    )


_WORKING_SCHEMA = pa.schema(
    [
        pa.field("user_id", pa.string(), nullable=False),
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("data", pa.string(), nullable=False),
    ]
)

_NEWEST_FIRST = [
    ColumnOrdering(column_name="at", ascending=False),
    ColumnOrdering(column_name="id", ascending=True),
]


def _row(message: ArchivedMessage, vector: Sequence[float]) -> dict[str, Any]:
    return {
        "id": message.id,
        "user_id": message.user_id,
        "session_id": message.session_id,
        "scope": message.scope,
        "turn": message.turn,
        "role": message.role,
        "speaker": message.speaker,
        "text": message.text,
        "at": message.at,
        "meta": _json.encode(message.meta).decode(),
        "source_id": message.source_id,
        "search_text": search_text(message),
        "vector": list(vector),
    }


def _message(row: dict[str, Any]) -> ArchivedMessage:
    at: datetime = row["at"]
    return ArchivedMessage(
        id=row["id"],
        user_id=row["user_id"],
        session_id=row["session_id"],
        scope=row["scope"],
        turn=row["turn"],
        role=row["role"],
        speaker=row["speaker"],
        text=row["text"],
        at=at.astimezone(UTC),
        meta=_meta_decoder.decode(row["meta"]),
        source_id=row["source_id"],
    )


_COLUMNS = [f.name for f in _messages_schema(1, "") if f.name not in ("vector", "search_text")]
_log = logging.getLogger("mnemo.store")
#: Rows of a user's messages indexed between two yields to the event loop.
_LOAD_SLICE = 4096
#: Users' messages read from LanceDB at once. A read scans every fragment the ``user_id``
#: index does not cover yet (~0.3 ms each, up to ``optimize_after_writes`` of them), so
#: many at once only share the same cores, and their buffers, freed out of order, leave
#: the allocator's arenas fragmented. ``bench.idle`` (1000 new users, 50 sessions opening
#: at once): all at once, 180 MiB more RSS and 77 s until every user was loaded; two at
#: a time, 80 MiB and 60 s (the sessions themselves were served in 16 s instead of 75).
_LOADS_AT_ONCE = 2
#: Share of a neighbouring message's fused score a message gets (``with_neighbours``):
#: LoCoMo dev Recall@10 0.723 -> 0.745 at 0.5, flat from 0.35 to 0.7.
_NEIGHBOUR_SHARE = 0.5
#: The highest score a message can reach (first on both sides, and so is a neighbour).
_BEST_SCORE = (1.0 + _NEIGHBOUR_SHARE) * rrf_score(1, 1, limit=1)


def _add(
    columns: dict[str, list[Any]], vectors: Any, terms: list[list[str]], entry: MessageEntry
) -> None:
    entry.add(columns, vectors, terms)


def _columns(messages: Sequence[ArchivedMessage]) -> dict[str, list[Any]]:
    """Messages column by column, as ``MessageEntry.add`` takes them."""
    return {
        "id": [m.id for m in messages],
        "session_id": [m.session_id for m in messages],
        "scope": [m.scope for m in messages],
        "turn": [m.turn for m in messages],
        "role": [m.role for m in messages],
        "speaker": [m.speaker for m in messages],
        "text": [m.text for m in messages],
        "at": [m.at.timestamp() for m in messages],
        "meta": [_json.encode(m.meta).decode() for m in messages],
        "source_id": [m.source_id for m in messages],
    }


class LanceStore:
    """Implements the ``Store`` port on a LanceDB directory (or object-store URI)."""

    def __init__(
        self,
        uri: str | Path,
        *,
        embedder: Embedder,
        cache_bytes: int = 1 << 30,
        lance_metadata_bytes: int = 16 << 20,
        lance_index_bytes: int = 128 << 20,
    ) -> None:
        """``cache_bytes`` bounds the in-memory search indexes (messages and facts together);
        past it, the least recently used users' indexes are evicted. ``lance_metadata_bytes``
        and ``lance_index_bytes`` bound LanceDB's own caches (see ``Settings``)."""
        self._uri = str(uri)
        self._embedder = embedder
        self._lance_caches = (lance_metadata_bytes, lance_index_bytes)
        self._session: lancedb.Session | None = None
        self._dim = 0
        self._schema: pa.Schema | None = None
        #: One memory budget for the messages' and the facts' indexes.
        self._budget = Budget(cache_bytes)
        self._cache = UserCache(self._load_messages, budget=self._budget)
        self._analyzer: Analyzer | None = None
        self._db: Any = None
        self._messages: Any = None
        self._working: Any = None
        self._facts: LanceFacts | None = None
        #: Shared by both adapters: reads against purges of old versions.
        self._gate = PurgeGate()
        self._loads = anyio.CapacityLimiter(_LOADS_AT_ONCE)

    @property
    def facts(self) -> LanceFacts:
        """Facts, notes, profiles and extraction progress (available once opened)."""
        if self._facts is None:
            raise RuntimeError("the store is not open")
        return self._facts

    async def open(self) -> None:
        """Open (creating if needed) the tables and their indexes.

        Raises ``StoreMismatch`` when the directory holds vectors of another size.
        Call after the embedder's ``warm_up()``: its ``dim`` sizes the vector column.
        """
        self._dim = self._embedder.dim
        name = self._embedder.name
        if self._uri.find("://") < 0:
            await anyio.Path(self._uri).mkdir(parents=True, exist_ok=True)
        metadata, index = self._lance_caches
        # LanceDB caches the metadata of every table version it reads, and every write makes
        # a version: with its defaults (1 GiB of metadata, 6 GiB of index pages) the process
        # grows with every write long after the old versions stopped being read.
        self._session = lancedb.Session(
            index_cache_size_bytes=index, metadata_cache_size_bytes=metadata
        )
        self._db = await lancedb.connect_async(self._uri, session=self._session)
        names = set((await self._db.list_tables()).tables)
        if _MESSAGES in names:
            self._messages = await self._db.open_table(_MESSAGES)
            schema = await self._messages.schema()
            size = schema.field("vector").type.list_size
            if size != self._dim:
                stored = (schema.metadata or {}).get(_EMBEDDER_KEY, b"?").decode()
                raise StoreMismatch(
                    f"{self._uri} holds {size}-dimensional vectors from embedder {stored!r}; "
                    f"the configured embedder {name!r} makes {self._dim}. "
                    "Use the same MNEMO_EMBEDDER or another MNEMO_DATA_DIR."
                )
        else:
            self._messages = await self._db.create_table(
                _MESSAGES, schema=_messages_schema(self._dim, name)
            )
        if "search_text" not in (await self._messages.schema()).names:
            # Written before search texts existed: who said it, then what (no context).
            await self._messages.add_columns({"search_text": "concat(speaker, ': ', text)"})
        self._schema = await self._messages.schema()
        if _WORKING in names:
            self._working = await self._db.open_table(_WORKING)
        else:
            self._working = await self._db.create_table(_WORKING, schema=_WORKING_SCHEMA)
        await self._ensure_indexes()
        # One analyzer for messages and facts: both indexes are icu with positions.
        self._analyzer = Analyzer(self._messages, "search_text")
        self._facts = LanceFacts(
            self._db,
            dim=self._dim,
            gate=self._gate,
            analyzer=self._analyzer,
            budget=self._budget,
        )
        await self._facts.open()

    async def _ensure_indexes(self) -> None:
        indices = await self._messages.list_indices()
        have = {tuple(ix.columns) for ix in indices}
        if ("user_id",) not in have:
            await self._messages.create_index("user_id", config=BTree())
        if ("search_text",) not in have:
            await self._messages.create_index(
                "search_text", config=FTS(base_tokenizer="icu", with_position=True)
            )
        for old in (ix for ix in indices if tuple(ix.columns) == ("text",)):
            await self._messages.drop_index(old.name)  # from before search texts
        if ("user_id",) not in {tuple(ix.columns) for ix in await self._working.list_indices()}:
            await self._working.create_index("user_id", config=BTree())

    async def aclose(self) -> None:
        if self._facts is not None:
            self._facts.close()
        for table in (self._messages, self._working):
            if table is not None:
                table.close()
        if self._db is not None:
            self._db.close()

    # -- messages ------------------------------------------------------------

    async def append_messages(
        self, rows: Sequence[ArchivedMessage], vectors: Sequence[Sequence[float]]
    ) -> None:
        if not rows:
            return
        table = pa.Table.from_pylist(
            [_row(m, v) for m, v in zip(rows, vectors, strict=True)],
            schema=self._schema,
        )
        try:
            await self._messages.add(table)
        except (OSError, RuntimeError, ValueError) as exc:
            raise ArchiveUnavailable(f"append of {len(rows)} rows failed: {exc}") from exc
        await self._index_appended(rows, vectors)

    async def _index_appended(
        self, rows: Sequence[ArchivedMessage], vectors: Sequence[Sequence[float]]
    ) -> None:
        """Add durable rows to the in-memory indexes of the users held there."""
        held = [i for i, m in enumerate(rows) if self._cache.holds(m.user_id)]
        if not held:
            return
        try:
            terms = await self._analyze([search_text(rows[i]) for i in held])
        except AnalyzerUnavailable as exc:
            _log.warning("dropping in-memory indexes after an analyzer failure: %s", exc)
            for user_id in {rows[i].user_id for i in held}:
                self._cache.drop(user_id)
            return
        by_user: dict[str, list[int]] = {}
        for n, i in enumerate(held):
            by_user.setdefault(rows[i].user_id, []).append(n)
        for user_id, picks in by_user.items():
            mine = [rows[held[n]] for n in picks]
            matrix = np.asarray([vectors[held[n]] for n in picks], dtype=np.float32)
            words = [terms[n] for n in picks]
            self._cache.apply(user_id, functools.partial(_add, _columns(mine), matrix, words))

    async def _analyze(self, texts: Sequence[str]) -> list[list[str]]:
        assert self._analyzer is not None, "the store is not open"
        return await self._analyzer.analyze(texts)

    async def query_terms(self, text: str) -> QueryTerms | None:
        """The analyzed query; None when the analyzer fails (search falls back to keywords)."""
        assert self._analyzer is not None, "the store is not open"
        if not text.strip():
            return QueryTerms(())
        try:
            return await self._analyzer.query(text)
        except AnalyzerUnavailable as exc:
            _log.warning("full-text analysis failed, matching keywords instead: %s", exc)
            return None

    async def _load_messages(self, user_id: str) -> MessageEntry:
        """Read all of a user's messages into a new in-memory index, a slice at a time so
        the event loop keeps serving other sessions meanwhile (``_LOADS_AT_ONCE`` users at
        a time)."""
        async with self._loads:
            entry = await self._read_messages(user_id)
        await entry.project()
        return entry

    async def _read_messages(self, user_id: str) -> MessageEntry:
        columns = [*_COLUMNS, "search_text", "vector"]
        where = user_filter(user_id)
        table = await self._gate.read(self._messages.query().where(where).select(columns).to_arrow)
        entry = MessageEntry(self._dim)
        entry.index.reserve(table.num_rows)
        for start in range(0, table.num_rows, _LOAD_SLICE):
            part = table.slice(start, _LOAD_SLICE)
            data: dict[str, list[Any]] = {
                name: part[name].to_pylist() for name in _COLUMNS if name not in ("at", "user_id")
            }
            data["at"] = (pc.cast(part["at"], pa.int64()).to_numpy() / 1e6).tolist()
            vectors = part["vector"].combine_chunks().flatten().to_numpy().reshape(-1, self._dim)
            try:
                terms = await self._analyze(part["search_text"].to_pylist())
            except AnalyzerUnavailable as exc:
                _log.warning("indexing user %s without full-text terms: %s", user_id, exc)
                terms = [[] for _ in range(part.num_rows)]
                entry.degraded = True
            entry.add(data, vectors, terms)
            await anyio.lowlevel.checkpoint()
        return entry

    async def list_messages(self, user_id: str, *, limit: int, offset: int) -> Page:
        where = user_filter(user_id)
        total = int(await self._gate.read(lambda: self._messages.count_rows(where)))
        rows = await self._gate.read(
            self._messages.query()
            .where(where)
            .select(_COLUMNS)
            .order_by(_NEWEST_FIRST)
            .limit(limit)
            .offset(offset)
            .to_list
        )
        return [_message(r) for r in rows], total

    async def session_messages(
        self, user_id: str, session_id: str, *, limit: int
    ) -> list[ArchivedMessage]:
        rows = await self._gate.read(
            self._messages.query()
            .where(f"{user_filter(user_id)} AND session_id = {quote(session_id)}")
            .select(_COLUMNS)
            .order_by(_NEWEST_FIRST)
            .limit(limit)
            .to_list
        )
        found = [_message(r) for r in rows]
        found.sort(key=lambda m: (m.turn, m.at, m.role != "user"))
        return found

    async def get_message(self, user_id: str, message_id: str) -> ArchivedMessage | None:
        rows = await self._gate.read(
            self._messages.query()
            .where(f"{user_filter(user_id)} AND id = {quote(message_id)}")
            .select(_COLUMNS)
            .limit(1)
            .to_list
        )
        return _message(rows[0]) if rows else None

    async def existing_message_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        rows = await self._gate.read(
            self._messages.query()
            .where(f"{user_filter(user_id)} AND id IN {quote_all(ids)}")
            .select(["id"])
            .to_list
        )
        return {row["id"] for row in rows}

    async def delete_message(self, user_id: str, message_id: str) -> bool:
        where = f"{user_filter(user_id)} AND id = {quote(message_id)}"
        if not await self._gate.read(lambda: self._messages.count_rows(where)):
            return False
        await self._messages.delete(where)
        self._cache.apply(user_id, lambda e: e.remove([message_id]))
        await self._gate.purge(self._messages)
        return True

    async def clear_messages(self, user_id: str) -> int:
        where = user_filter(user_id)
        count = int(await self._gate.read(lambda: self._messages.count_rows(where)))
        if count:
            await self._messages.delete(where)
            self._cache.drop(user_id)
            await self._gate.purge(self._messages)
        return count

    async def search_messages(
        self, user_id: str, text: str, vector: VectorSource, *, k: int, scope: str | None = None
    ) -> list[ScoredMessage]:
        """Hybrid search of the user's in-memory index: exact cosine and BM25, each to depth
        ``2k``, fused by reciprocal rank (k=60); then each message also scores half of its
        better neighbour's score in its session. Scores are scaled to 0..1 (1: first on both
        sides and next to another such message). With a ``scope``, only ``global``
        messages and that scope's."""
        user_filter(user_id)
        held = await self._cache.get(user_id)
        await held.project()
        depth = 2 * k
        ranked = await hybrid_ranks(
            held.index,
            vector,
            lambda: self.query_terms(text),
            held.texts,
            lambda: extract_keywords(text),
            depth=depth,
            scope=scope,
        )
        if held.degraded:
            self._cache.drop(user_id)  # load it again, analyzed, next time
        scores = with_neighbours(
            fused(ranked, depth=depth), held.neighbours, _NEIGHBOUR_SHARE, ranked.visible
        )
        best = best_first(scores, ranked, depth=depth, k=k)
        return [(held.row(p, user_id), score / _BEST_SCORE) for p, score in best]

    async def message_index(self, user_id: str) -> SearchIndex:
        """The user's in-memory message index, loaded if needed (benchmarks and tests)."""
        held = await self._cache.get(user_id)
        await held.project()
        return held.index

    def index_bytes(self) -> int:
        """Memory held by the in-memory search indexes (messages and facts)."""
        return self._budget.total

    def lance_cache_bytes(self) -> int:
        """Memory held by LanceDB's own caches (metadata and index pages)."""
        return int(self._session.size_bytes) if self._session is not None else 0

    async def warm(self, user_id: str) -> None:
        """Load the user's messages and facts into memory ahead of their first search."""
        await self._cache.get(user_id)
        await self.facts.warm(user_id)

    # -- working memory ------------------------------------------------------

    async def put_working(self, items: Sequence[tuple[str, WorkingMemory]]) -> None:
        if not items:
            return
        for user_id, _ in items:
            user_filter(user_id)
        data = pa.Table.from_pylist(
            [
                {"user_id": u, "session_id": w.session_id, "data": _json.encode(w).decode()}
                for u, w in items
            ],
            schema=_WORKING_SCHEMA,
        )
        await (
            self._working.merge_insert(["user_id", "session_id"])
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(data)
        )

    async def get_working(self, user_id: str, session_id: str) -> WorkingMemory | None:
        rows = await self._gate.read(
            self._working.query()
            .where(f"{user_filter(user_id)} AND session_id = {quote(session_id)}")
            .limit(1)
            .to_list
        )
        return _working_decoder.decode(rows[0]["data"]) if rows else None

    async def delete_working(self, user_id: str, session_id: str) -> None:
        await self._working.delete(f"{user_filter(user_id)} AND session_id = {quote(session_id)}")

    # -- maintenance ---------------------------------------------------------

    async def optimize(self, *, cleanup_older_than: float) -> None:
        await self._gate.optimize((self._messages, self._working), cleanup_older_than)
        # The fact tables are optimized by their own writer (LanceFacts.optimize).

    async def version_count(self) -> int:
        """How many versions of the messages table exist (for tests and benchmarks)."""
        return len(await self._messages.list_versions())
