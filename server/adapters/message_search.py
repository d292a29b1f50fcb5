"""The archive's search side: each user's messages in an in-memory index, kept current.

A user's messages are read from LanceDB (and the journal), or from their saved
index (``server.adapters.index_files``), into a ``MessageEntry`` when a session of
theirs starts or at their first search; every append is then indexed into it (in the
background, through an ``IndexQueue``, once a task runs ``run_indexing``). Searches
run on these indexes alone.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.lowlevel
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from anyio.abc import TaskStatus

from actors.ports import ScoredMessage, SparseEncoder, VectorSource, resolve
from memory.answers import asked_kind, in_first_person
from memory.keywords import extract_keywords
from memory.projection import PROJECT_FROM
from memory.ranking import (
    DEPTH,
    Candidates,
    asks_assistant,
    full_text_query,
    gathers,
    named_in,
    rank,
)
from memory.recall import key_text, search_text
from memory.scoring import kept_agreement, rrf_score
from memory.search_index import EncodedTerms, SearchIndex
from memory.sparse import SparseVector
from memory.text import query_text
from memory.when import anchor_of
from schemas.records import ArchivedMessage
from schemas.settings import MIN_SIMILARITY, Ranking, SearchMode
from server.adapters.index_files import IndexFiles, UnreadableIndex
from server.adapters.index_queue import IndexQueue
from server.adapters.index_saving import IndexSaver
from server.adapters.lance_analyzer import Analyzer, AnalyzerUnavailable
from server.adapters.lance_cache import (
    Budget,
    Ranked,
    UserCache,
    fused,
    hybrid_ranks,
    with_neighbours,
)
from server.adapters.lance_common import WARM_UP_USER, PurgeGate, user_filter
from server.adapters.lance_messages import (
    COLUMNS,
    TERMS_COLUMN,
    JournaledMessages,
    columns_of,
)
from server.adapters.message_entry import MessageEntry

__all__ = ["MessageSearch"]

_log = logging.getLogger("mnemo.store")
#: Longest the indexing of appended messages holds the event loop between two yields.
_STEP_SECONDS = 0.002
#: Rows of a user's messages converted and indexed at a time (bounds the Python objects
#: alive at once while a large user loads).
_LOAD_SLICE = 4096
#: Users' messages read from LanceDB at once. A read scans every fragment the ``user_id``
#: index does not cover yet (~0.3 ms each, up to ``optimize_after_writes`` of them), so
#: many at once only share the same cores, and their buffers, freed out of order, leave
#: the allocator's arenas fragmented. ``bench.idle`` (1000 new users, 50 sessions opening
#: at once): all at once, 180 MiB more RSS and 77 s until every user was loaded; two at
#: a time, 80 MiB and 60 s (the sessions themselves were served in 16 s instead of 75).
_LOADS_AT_ONCE = 2
#: Share of a neighbouring message's fused score a message gets (``with_neighbours``),
#: as far as ``kept_agreement`` lets it rise: LoCoMo dev Recall@10 0.723 -> 0.745 at
#: 0.5 (flat from 0.35 to 0.7) without that bound. With it, a whole share (1.0) found
#: about as much (docs/performance.md) but let a reply that repeats the user's words
#: outrank them.
_NEIGHBOUR_SHARE = 0.5
#: The share of a user's messages nearest a query that the vector side finds by meaning
#: at half ``min_similarity`` (``MessageSearch._meant``): LongMemEval's evidence is often
#: a passing mention in a long message, at a cosine of 0.1-0.2 but among a haystack's
#: nearest 50 of 500 (with the cosine alone, 3 of its 100 dev questions lost a turn).
_NEAREST_SHARE = 0.1
#: The highest score a message can reach (first on both sides, and so is a neighbour);
#: with the learned list, a third more.
_BEST_SCORE = (1.0 + _NEIGHBOUR_SHARE) * rrf_score(1, 1, limit=1)
_BEST_SCORE_LEARNED = 1.5 * _BEST_SCORE


def _add(
    columns: dict[str, list[Any]],
    vectors: Any,
    terms: list[list[str]],
    learned: list[SparseVector] | None,
    entry: MessageEntry,
) -> None:
    entry.add(columns, vectors, terms, learned)


def _indexed(
    table: pa.Table, analyzed: dict[str, list[str]], dim: int, project_from: int
) -> MessageEntry:
    """A new entry holding ``table``'s rows, ``_LOAD_SLICE`` at a time: each row's terms
    as stored (``TERMS_COLUMN``), or, for a row stored without, its terms in ``analyzed``
    (by id; none if missing)."""
    entry = MessageEntry(dim, project_from=project_from)
    entry.index.reserve(table.num_rows)
    for start in range(0, table.num_rows, _LOAD_SLICE):
        part = table.slice(start, _LOAD_SLICE)
        data: dict[str, list[Any]] = {
            name: part[name].to_pylist() for name in COLUMNS if name not in ("at", "user_id")
        }
        data["at"] = (pc.cast(part["at"], pa.int64()).to_numpy() / 1e6).tolist()
        vectors = part["vector"].combine_chunks().flatten().to_numpy().reshape(-1, dim)
        column = part[TERMS_COLUMN].combine_chunks()
        terms: list[list[str]] | EncodedTerms
        if column.null_count:  # some stored without terms: by id from ``analyzed``
            terms = [
                analyzed.get(ident, []) if joined is None else joined.split(" ") if joined else []
                for ident, joined in zip(data["id"], column.to_pylist(), strict=True)
            ]
        else:
            terms = _encoded(column)
        entry.add(data, vectors, terms)
    return entry


def _encoded(joined: pa.StringArray) -> EncodedTerms:
    """Stored terms (each row's words joined by spaces, ``""`` for none), split and
    dictionary-encoded by Arrow: a user's load looks each distinct word up once."""
    split = pc.split_pattern(pc.if_else(pc.equal(joined, ""), None, joined), " ")
    words = pc.list_flatten(split).dictionary_encode()
    return EncodedTerms(
        words.dictionary.to_pylist(),
        words.indices.to_numpy(zero_copy_only=False),
        pc.fill_null(pc.list_value_length(split), 0).to_numpy(zero_copy_only=False),
    )


class MessageSearch:
    """Per-user in-memory indexes of archived messages, within ``budget``."""

    def __init__(
        self,
        budget: Budget,
        gate: PurgeGate,
        ranking: Ranking,
        *,
        min_similarity: float = MIN_SIMILARITY,
        save_from: int = 200,
        save_after: float = 30.0,
        project_from: int = PROJECT_FROM,
        learned: SparseEncoder | None = None,
    ) -> None:
        """``learned``: the learned sparse model (SPLADE) whose vectors of the messages'
        key texts (``memory.recall.key_text``) are a third ranked list, encoded as
        messages are indexed (None: two lists). ``save_from``: users with at least this
        many messages get their index saved, once ``attach`` is given where
        (``IndexFiles``), when their messages have not
        changed for ``save_after`` seconds (a chat in full flow changes them every few).
        ``project_from``: see ``MessageEntry``. ``min_similarity``: a hybrid search finds
        by meaning only the messages at least this similar to the query
        (``Settings.min_similarity``)."""
        self._ranking = ranking
        self._min_similarity = min_similarity
        self._learned = learned
        self._cache = UserCache(self._load_messages, budget=budget)
        self._indexing = IndexQueue(self._index_appended, self._cache.drop)
        self._gate = gate
        self._loads = anyio.CapacityLimiter(_LOADS_AT_ONCE)
        self._archive: JournaledMessages | None = None
        self._analyzer: Analyzer | None = None
        self._dim = 0
        self._files: IndexFiles | None = None
        self._project_from = project_from
        self.saver = IndexSaver(
            self._cache, self._indexing.waiting, save_from=save_from, save_after=save_after
        )

    def attach(
        self,
        archive: JournaledMessages,
        analyzer: Analyzer,
        dim: int,
        files: IndexFiles | None = None,
    ) -> None:
        """The opened table (with its journal), the analyzer, and where indexes are saved
        (None: nowhere); before any other call."""
        self._archive, self._analyzer, self._dim = archive, analyzer, dim
        self._files = self.saver.files = files

    async def index(self, rows: Sequence[ArchivedMessage], matrix: npt.NDArray[np.float32]) -> None:
        """Index durable rows: queued when ``run_indexing`` runs (searches of their users
        wait for them), else now."""
        if self._indexing.running:
            self._indexing.put(rows, matrix)
        else:
            await self._index_appended(rows, matrix)

    async def run_indexing(
        self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Until cancelled: index appended messages, and save changed indexes."""
        async with anyio.create_task_group() as tasks:
            await tasks.start(self._indexing.run)
            tasks.start_soon(self.saver.run)
            task_status.started()

    async def settled(self, user_id: str | None = None) -> None:
        """Every message appended so far (of ``user_id``, or of everyone) is indexed."""
        await self._indexing.settled(user_id)

    def remove(self, user_id: str, message_id: str) -> None:
        self._cache.apply(user_id, lambda e: e.remove([message_id]))

    def drop(self, user_id: str) -> None:
        self._cache.drop(user_id)

    def forget(self, held: Callable[[str], bool], prefix: str) -> None:
        """Drop the indexes of the users ``held`` says, and the saved index files whose
        names start with ``prefix`` (a cluster's shard, given up or taken)."""
        for user_id in self._cache.users():
            if held(user_id):
                self._cache.drop(user_id)
        if self._files is not None:
            self._files.discard_prefix(prefix)

    async def warm(self, user_id: str) -> None:
        await self._cache.get(user_id)

    async def _index_appended(
        self, rows: Sequence[ArchivedMessage], vectors: npt.NDArray[np.float32]
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
        learned = await self._encoded([rows[i] for i in held])
        step = time.perf_counter()
        for user_id, picks in by_user.items():
            mine = [rows[held[n]] for n in picks]
            matrix = vectors[[held[n] for n in picks]]
            words = [terms[n] for n in picks]
            sparse = None if learned is None else [learned[n] for n in picks]
            self._cache.apply(
                user_id, functools.partial(_add, columns_of(mine), matrix, words, sparse)
            )
            if time.perf_counter() - step > _STEP_SECONDS:  # many users: let the loop run
                await anyio.lowlevel.checkpoint()
                step = time.perf_counter()

    async def warm_up(self) -> None:
        """Read and index the rows of a user who has none: the process's first query
        (Lance opening the table's files and indexes) and first index build are paid
        here, at start, not by the first user's search. Nothing is cached."""
        await self._read_messages(WARM_UP_USER)

    async def _encoded(self, rows: Sequence[ArchivedMessage]) -> list[SparseVector] | None:
        """The learned sparse vectors of ``rows``' key texts; None without the model."""
        if self._learned is None or not rows:
            return None
        return await self._learned.encode([key_text(row) for row in rows])

    async def _learn_all(self, user_id: str, entry: MessageEntry) -> None:
        """Encode the learned sparse vectors a loaded entry's messages lack (they are not
        stored in the table): of their rows as read back."""
        lacking = entry.index.without_learned()
        learned = await self._encoded([entry.row(p, user_id) for p in lacking])
        if learned is not None:
            entry.index.add_learned(lacking, learned)

    async def _analyze(self, texts: Sequence[str]) -> list[list[str]]:
        assert self._analyzer is not None, "the store is not open"
        return await self._analyzer.analyze(texts)

    async def _load_messages(self, user_id: str) -> MessageEntry:
        """Read all of a user's messages into a new in-memory index, built in a worker
        thread so the event loop keeps serving other sessions meanwhile
        (``_LOADS_AT_ONCE`` users at a time)."""
        async with self._loads:
            entry = await self._saved(user_id)
            if entry is None:
                entry = await self._read_messages(user_id)
                self.saver.built(user_id, entry)
            if self._learned is not None:
                await self._learn_all(user_id, entry)
        await entry.project()
        return entry

    async def _saved(self, user_id: str) -> MessageEntry | None:
        """The user's saved index with their journaled messages, or None (no file, or one
        that cannot be used: it is deleted)."""
        files = self._files
        if files is None or not (files.has(user_id) or await self._fetched(files, user_id)):
            return None
        dim, project_from = self._dim, self._project_from

        def read() -> MessageEntry:
            return MessageEntry.restored(dim, files.read(user_id), project_from=project_from)

        try:
            entry = await anyio.to_thread.run_sync(read)
        except FileNotFoundError:  # deleted meanwhile, by a write
            return None
        except (UnreadableIndex, OSError, ValueError, KeyError, TypeError) as exc:
            _log.warning("user %s: reading the table, not their saved index: %s", user_id, exc)
            files.discard(user_id)
            return None
        pending, vectors = self._table.pending_vectors(user_id)
        await self._add_pending(entry, pending, vectors)
        return entry

    async def _fetched(self, files: IndexFiles, user_id: str) -> bool:
        """Whether the user's index was fetched from a cluster's bucket into ``files``."""
        shared = self.saver.shared
        if shared is None:
            return False
        token, scratch = files.token(user_id), files.scratch(user_id)
        try:
            if not await shared.fetch(user_id, scratch):
                return False
            return files.install(user_id, scratch, token)
        finally:
            scratch.unlink(missing_ok=True)

    async def _add_pending(
        self, entry: MessageEntry, pending: list[ArchivedMessage], vectors: npt.NDArray[np.float32]
    ) -> None:
        """Add journaled messages the entry does not hold yet."""
        if not pending:
            return
        try:
            terms = await self._analyze([search_text(m) for m in pending])
        except AnalyzerUnavailable:
            terms = [[] for _ in pending]
            entry.degraded = True
        entry.add(columns_of(pending), vectors, terms, await self._encoded(pending))

    async def _read_messages(self, user_id: str) -> MessageEntry:
        columns = [*COLUMNS, "vector", TERMS_COLUMN]
        where = user_filter(user_id)
        # Journaled ones too: taken before the read, so a flush meanwhile loses none.
        pending, pending_vectors = self._table.pending_vectors(user_id)
        table = await self._gate.read(
            self._table.table.query().where(where).select(columns).to_arrow
        )
        # Search texts are read only for rows stored without terms (they are most of a row).
        texts: dict[str, str] = {}
        if table[TERMS_COLUMN].null_count:
            unanalyzed = self._table.table.query().where(f"{where} AND {TERMS_COLUMN} IS NULL")
            rows = await self._gate.read(unanalyzed.select(["id", "search_text"]).to_arrow)
            texts = dict(zip(rows["id"].to_pylist(), rows["search_text"].to_pylist(), strict=True))
        analyzed: dict[str, list[str]] = {}
        degraded = False
        if texts:
            try:
                analyzed = dict(zip(texts, await self._analyze(list(texts.values())), strict=True))
            except AnalyzerUnavailable as exc:
                _log.warning("indexing user %s without full-text terms: %s", user_id, exc)
                degraded = True
        # Building the index is Python work: in a worker thread, so the event loop gets the
        # GIL back every few milliseconds (nobody else sees the entry until it is loaded).
        entry = await anyio.to_thread.run_sync(
            _indexed, table, analyzed, self._dim, self._project_from
        )
        entry.degraded = degraded
        await self._add_pending(entry, pending, pending_vectors)  # skips what the read had
        return entry

    async def search(
        self,
        user_id: str,
        text: str,
        vector: VectorSource,
        *,
        k: int,
        scope: str | None = None,
        mode: SearchMode = "hybrid",
        at: datetime | None = None,
    ) -> list[ScoredMessage]:
        """Hybrid search of the user's in-memory index: the messages that share meaning
        with the query (cosine at least ``min_similarity``) and those that share words
        (BM25), each side to depth ``DEPTH`` (whatever ``k``), fused by reciprocal rank
        (k=60); then each message also scores half of its better neighbour's score in
        its session, up to just below that neighbour's; then ``memory.ranking`` orders
        them by time (``at``, the query's own time, default now), speaker and session.
        A message that shares neither words nor meaning is found only beside one that
        does. Scores are scaled to 0..1 (1: first on both sides and next to another such
        message). ``mode`` ``semantic``: by cosine similarity alone, scored by it;
        ``keyword``: by BM25 alone, scored by it (nothing for a blank query). With a
        ``scope``, only ``global`` messages and that scope's. ``text`` is cleaned first
        (``memory.text.query_text``)."""
        user_filter(user_id)
        text = query_text(text)
        await self._indexing.settled(user_id)
        held = await self._cache.get(user_id)
        try:
            return await self._search(held, user_id, text, vector, k, scope, mode, at)
        except OSError as exc:
            # A loaded saved index reads texts and postings from its file: if that fails
            # (a disk error), the file goes and the user is read from the table.
            _log.error("user %s: their saved index cannot be read: %s", user_id, exc)
            self._cache.drop(user_id)
            if self._files is not None:
                self._files.discard(user_id)
            held = await self._cache.get(user_id)
            return await self._search(held, user_id, text, vector, k, scope, mode, at)

    async def _search(
        self,
        held: MessageEntry,
        user_id: str,
        text: str,
        vector: VectorSource,
        k: int,
        scope: str | None,
        mode: SearchMode,
        at: datetime | None,
    ) -> list[ScoredMessage]:
        await held.project()
        depth = max(k, DEPTH) if mode != "hybrid" else DEPTH
        assert self._analyzer is not None, "the store is not open"
        words = full_text_query(text, mode)
        learned = self._learned

        async def learned_query() -> SparseVector | None:
            encoded = None if learned is None else await learned.encode([text])
            return encoded[0] if encoded else None

        ranked = await hybrid_ranks(
            held.index,
            vector,
            functools.partial(self._analyzer.query_or_none, words),
            held.texts,
            lambda: extract_keywords(words),
            depth=depth,
            scope=scope,
            mode=mode,
            learned=learned_query if learned is not None else None,
        )
        if held.degraded:
            self._cache.drop(user_id)  # load it again, analyzed, next time
        if mode == "semantic":
            return [(held.row(p, user_id), ranked.similarity[p]) for p in ranked.dense[:k]]
        if mode == "keyword":
            return [(held.row(p, user_id), ranked.text_score[p]) for p in ranked.sparse[:k]]
        knobs = self._ranking
        about_assistant = asks_assistant(text)
        # With speakers weighed, the weighed-down speaker's messages do not lift the
        # other's: a user's turn ranks by what the user said, not by the reply beside it.
        echo = "user" if about_assistant else "assistant"
        visible = len(held.ids) if ranked.visible is None else int(ranked.visible.sum())
        own = fused(replace(ranked, dense=self._meant(ranked, visible)), depth=depth)
        lifted = with_neighbours(
            own,
            held.neighbours,
            _NEIGHBOUR_SHARE,
            ranked.visible,
            None
            if knobs.assistant_weight == 1.0
            else lambda p, n: held.role(p) != echo or held.role(n) == echo,
        )
        unknown = [p for p in lifted if p not in ranked.similarity]
        near = dict(ranked.similarity)
        if unknown:
            near |= zip(
                unknown, held.index.similarities(unknown, await resolve(vector)), strict=True
            )
        scores = kept_agreement(
            lifted,
            own,
            near,
            {p: r for r, p in enumerate(ranked.sparse, 1)},
            every_text_hit=len(ranked.sparse) < depth,
        )
        dense = {p: r for r, p in enumerate(ranked.dense, 1)}
        best = rank(
            Candidates(
                scores,
                held.at,
                held.role,
                held.session,
                held.index.pairwise,
                held.speaker,
                held.stated,
            ),
            knobs=knobs,
            anchor=anchor_of(text, at or datetime.now(UTC), slack=knobs.span_slack),
            about_assistant=about_assistant,
            several=gathers(text),
            named=named_in(text),
            asked=asked_kind(text),
            first_person=in_first_person(text),
            k=k,
            # Seed 002: equal scores by vector rank, then position.
            tie=lambda p: (dense.get(p, depth + 1), p),
        )
        best_score = _BEST_SCORE_LEARNED if ranked.learned else _BEST_SCORE
        return [
            (
                held.row(p, user_id, superseded_by="" if newer is None else held.ids[newer]),
                min(1.0, score / best_score),
            )
            for p, score, newer in best
        ]

    def _meant(self, ranked: Ranked, messages: int) -> list[int]:
        """The vector side's hits that share meaning with the query: a cosine of at least
        ``min_similarity``, or of half of it among the nearest ``_NEAREST_SHARE`` of the
        user's ``messages``. MiniLM's cosines say little alone (a message that mentions
        the thing asked about in passing scores 0.1-0.2, as does "Hi!"); among many
        messages, being among the nearest says more, and among four, nothing."""
        nearest = int(_NEAREST_SHARE * messages)
        least = self._min_similarity
        return [
            p
            for rank, p in enumerate(ranked.dense, 1)
            if ranked.similarity[p] >= (least / 2 if rank <= nearest else least)
        ]

    async def similarities(
        self, user_id: str, ids: Sequence[str], vector: Sequence[float]
    ) -> dict[str, float]:
        """Cosine similarity of the user's messages ``ids`` to ``vector`` (ids the index
        does not hold are left out)."""
        user_filter(user_id)
        held = await self._cache.get(user_id)
        found = [(i, p) for i in ids if (p := held.positions.get(i)) is not None]
        scores = held.index.similarities([p for _, p in found], vector)
        return {i: score for (i, _), score in zip(found, scores, strict=True)}

    async def message_index(self, user_id: str) -> SearchIndex:
        """The user's index, loaded if needed (benchmarks and tests)."""
        await self._indexing.settled(user_id)
        held = await self._cache.get(user_id)
        await held.project()
        return held.index

    @property
    def _table(self) -> JournaledMessages:
        if self._archive is None:
            raise RuntimeError("the store is not open")
        return self._archive
