"""Users' memories held in memory for search: loaded from LanceDB once, kept current by writes.

LanceDB stays the store of record. Searching it costs milliseconds per query
(an exact vector search over 100k rows, 80 ms; reading 20 scattered rows of a
1M-row table, 30 ms), so each user's archived messages and active facts are
read once into a ``SearchIndex`` and every write this process makes is applied
to the loaded copies too (the store has a single writer: ``actors.writer``).
A memory budget evicts the least recently used users.

Writes that land while a user is being loaded are replayed onto the loaded
copy; every operation is idempotent (add if absent, remove if present), so it
does not matter whether the load already saw them.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import anyio
import anyio.to_thread
import numpy as np
import numpy.typing as npt

from actors.ports import VectorSource, resolve
from memory.facts import Stored
from memory.scoring import RRF_K
from memory.search_index import SearchIndex, top_k
from memory.sparse import SparseVector
from schemas.settings import SearchMode
from server.adapters.lance_analyzer import QueryTerms

__all__ = [
    "Budget",
    "FactEntry",
    "Ranked",
    "UserCache",
    "fused",
    "hybrid_ranks",
    "with_neighbours",
]

_log = logging.getLogger("mnemo.store")
#: Above this many documents the matrix product runs in a worker thread (it frees the GIL).
_THREAD_FROM = 20_000


@dataclass(frozen=True, slots=True)
class Ranked:
    """Positions best first by vector, by text (BM25, or keyword counts when the
    analyzer is unavailable) and by learned sparse terms (``learned``: empty when the
    query has none, or the sparse model is not used), each list at most ``depth`` long;
    and each text hit's seed 001 ``keyword_score`` in 0..1 (BM25 over the best BM25, or
    the share of the query's keywords it contains)."""

    dense: list[int]
    sparse: list[int]
    keyword: dict[int, float]
    #: Which positions the search could see (None: all).
    visible: npt.NDArray[np.bool_] | None = None
    #: Each vector hit's cosine similarity (seed 002's ``1 - cosine distance``).
    similarity: Mapping[int, float] = field(default_factory=dict)
    #: Each text hit's BM25 (seed 002's ``rank``), or keyword count in the fallback.
    text_score: Mapping[int, float] = field(default_factory=dict)
    learned: list[int] = field(default_factory=list)


class _Sized(Protocol):
    def nbytes(self) -> int: ...


E = TypeVar("E", bound=_Sized)


class _Loading(Generic[E]):
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.entry: E | None = None
        self.ops: list[Callable[[E], None]] = []
        self.stale = False


class Budget:
    """Memory shared by caches: past ``limit`` bytes, the least recently used entry of any
    of them is evicted (never the one being charged)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._order: OrderedDict[tuple[int, str], UserCache[Any]] = OrderedDict()

    def touch(self, cache: UserCache[Any], user_id: str) -> None:
        self._order.move_to_end((id(cache), user_id))

    def charge(self, cache: UserCache[Any], user_id: str, delta: int) -> None:
        key = (id(cache), user_id)
        self._order[key] = cache
        self._order.move_to_end(key)
        self.total += delta
        while self.total > self.limit and len(self._order) > 1:
            (_, oldest), owner = self._order.popitem(last=False)
            self.total -= owner.evict(oldest)
            _log.debug("evicted a memory index of user %s", oldest)

    def forget(self, cache: UserCache[Any], user_id: str, size: int) -> None:
        if self._order.pop((id(cache), user_id), None) is not None:
            self.total -= size


class UserCache(Generic[E]):
    """Per-user entries, loaded on first use, kept within a shared ``Budget`` (least
    recently used first out). ``apply`` keeps loaded (and loading) entries current."""

    def __init__(self, load: Callable[[str], Awaitable[E]], *, budget: Budget) -> None:
        self._load, self._budget = load, budget
        self._entries: dict[str, E] = {}
        self._sizes: dict[str, int] = {}
        self._loading: dict[str, _Loading[E]] = {}
        self._total = 0

    @property
    def bytes(self) -> int:
        """Memory held by this cache's entries."""
        return self._total

    def __len__(self) -> int:
        return len(self._entries)

    def peek(self, user_id: str) -> E | None:
        """The user's loaded entry, if it is held (a peek: not counted as a use)."""
        return self._entries.get(user_id)

    def users(self) -> list[str]:
        """The users held or being loaded."""
        return [*self._entries, *(u for u in self._loading if u not in self._entries)]

    def holds(self, user_id: str) -> bool:
        """Whether writes for this user must be applied (loaded or being loaded)."""
        return user_id in self._entries or user_id in self._loading

    async def get(self, user_id: str) -> E:
        """The user's entry, loading it (once, however many ask at the same time)."""
        while True:
            entry = self._entries.get(user_id)
            if entry is not None:
                self._budget.touch(self, user_id)
                return entry
            loading = self._loading.get(user_id)
            if loading is None:
                return await self._load_entry(user_id)
            await loading.done.wait()
            if loading.entry is not None:
                return loading.entry
            # That load failed or was cancelled: try again ourselves.

    async def _load_entry(self, user_id: str) -> E:
        loading: _Loading[E] = _Loading()
        self._loading[user_id] = loading
        try:
            entry = await self._load(user_id)
            for op in loading.ops:
                op(entry)
            loading.entry = entry
        finally:
            del self._loading[user_id]
            loading.done.set()
        if not loading.stale:
            self._entries[user_id] = entry
            self._account(user_id, entry)
        return entry

    def insert(self, user_id: str, entry: E) -> E:
        """Keep ``entry`` (loaded by the caller) unless the user is held already; returns
        the entry that is kept."""
        held = self._entries.get(user_id)
        if held is not None or user_id in self._loading:
            return held if held is not None else entry
        self._entries[user_id] = entry
        self._account(user_id, entry)
        return entry

    def apply(self, user_id: str, op: Callable[[E], None]) -> None:
        """Run ``op`` on the user's entry now, or on the entry being loaded once it is."""
        entry = self._entries.get(user_id)
        if entry is not None:
            op(entry)
            self._account(user_id, entry)
        elif (loading := self._loading.get(user_id)) is not None:
            loading.ops.append(op)

    def drop(self, user_id: str) -> None:
        """Forget the user's entry; a load under way is used once but not kept."""
        if user_id in self._entries:
            self._budget.forget(self, user_id, self.evict(user_id))
        if (loading := self._loading.get(user_id)) is not None:
            loading.stale = True

    def evict(self, user_id: str) -> int:
        """Drop the user's entry (the budget's call); returns the bytes it held."""
        del self._entries[user_id]
        size = self._sizes.pop(user_id)
        self._total -= size
        return size

    def _account(self, user_id: str, entry: E) -> None:
        size = entry.nbytes()
        delta = size - self._sizes.get(user_id, 0)
        self._sizes[user_id] = size
        self._total += delta
        self._budget.charge(self, user_id, delta)


async def hybrid_ranks(
    index: SearchIndex,
    vector: VectorSource,
    query: Callable[[], Awaitable[QueryTerms | None]],
    texts: Callable[[], Sequence[str]],
    keywords: Callable[[], Sequence[str]],
    *,
    depth: int,
    scope: str | None,
    mode: SearchMode = "hybrid",
    learned: Callable[[], Awaitable[SparseVector | None]] | None = None,
) -> Ranked:
    """Exact vector ranks and BM25 ranks under one scope filter: the text side first
    (its analysis rarely waits: ``Analyzer.query``), then the vector side. They run one
    after the other, not as two tasks: a task group costs the caller three turns of the
    event loop, each as long as everything else ready to run, and both sides take well
    under a millisecond. When the analysis fails (``query`` gives None), text ranks count
    the ``keywords()`` each of ``texts()`` contains (seed 001's LIKE fallback). ``mode``
    ``semantic`` leaves the text side empty, ``keyword`` the vector side (the vector is
    not asked for). ``learned``: the query's learned sparse vector (None: none), ranked
    by ``SearchIndex.learned_scores`` in a hybrid search."""
    mask = index.visible(scope)
    sparse_best: list[tuple[int, float]] = []
    most = 1.0
    if mode != "semantic":
        terms = await query()
        if terms is not None:
            scores = index.sparse_scores(terms.terms, mask, prefixes=terms.prefixes)
            sparse_best = top_k(scores, depth)
            most = sparse_best[0][1] if sparse_best else 1.0
        else:
            wanted = keywords()
            sparse_best = top_k(_keyword_counts(texts(), wanted, mask), depth)
            most = float(max(len(wanted), 1))
    dense_best: list[tuple[int, float]] = []
    if mode != "keyword":
        query_vector = await resolve(vector)
        if index.size >= _THREAD_FROM:
            dense_best = await anyio.to_thread.run_sync(index.dense_top, query_vector, mask, depth)
        else:
            dense_best = index.dense_top(query_vector, mask, depth)
    learned_best: list[tuple[int, float]] = []
    if mode == "hybrid" and learned is not None:
        learned_query = await learned()
        if learned_query is not None and len(learned_query):
            learned_best = top_k(index.learned_scores(learned_query, mask), depth)
    return Ranked(
        [p for p, _ in dense_best],
        [p for p, _ in sparse_best],
        {p: score / most for p, score in sparse_best},
        mask,
        similarity=dict(dense_best),
        text_score=dict(sparse_best),
        learned=[p for p, _ in learned_best],
    )


def _keyword_counts(
    texts: Sequence[str], keywords: Sequence[str], mask: npt.NDArray[np.bool_] | None
) -> npt.NDArray[np.float32]:
    """How many of ``keywords`` each text contains (casefolded); -inf for none."""
    wanted = [k.casefold() for k in keywords]
    counts = np.array(
        [sum(1 for k in wanted if k in text.casefold()) for text in texts], dtype=np.float32
    )
    counts[counts == 0] = -np.inf
    if mask is not None:
        counts[~mask] = -np.inf
    return counts


def fused(ranked: Ranked, *, depth: int) -> dict[int, float]:
    """Reciprocal rank fusion of the lists: ``1/(60 + dense rank) + 1/(60 + text rank)``,
    a position found by one side only taking rank ``depth + 1`` on the other (seed 002);
    plus ``1/(60 + learned rank)`` the same way when the learned list is not empty (a
    query the sparse model has no terms for, such as a Chinese one, ranks as before)."""
    lists = [ranked.dense, ranked.sparse, *([ranked.learned] if ranked.learned else [])]
    ranks: dict[int, list[int]] = {}
    for side, listed in enumerate(lists):
        for rank, position in enumerate(listed, 1):
            ranks.setdefault(position, [depth + 1] * len(lists))[side] = rank
    return {p: sum(1.0 / (RRF_K + r) for r in found) for p, found in ranks.items()}


def with_neighbours(
    scores: Mapping[int, float],
    neighbours: Callable[[int], tuple[int, int]],
    share: float,
    visible: npt.NDArray[np.bool_] | None,
    lifts: Callable[[int, int], bool] | None = None,
) -> dict[int, float]:
    """Each message also scores ``share`` of its better-scoring neighbour (the message
    before or after it in its session): an answer sits next to the turn a question
    matches, and the reply to a matching message often holds what was asked about.
    ``lifts(position, neighbour)``: whether that message may lift that neighbour
    (None: every one). How far a lift may go: ``memory.scoring.kept_agreement``."""
    out = dict(scores)
    for position, score in scores.items():
        for neighbour in neighbours(position):
            if neighbour < 0 or (visible is not None and not visible[neighbour]):
                continue
            if lifts is not None and not lifts(position, neighbour):
                continue
            lifted = scores.get(neighbour, 0.0) + share * score
            if lifted > out.get(neighbour, 0.0):
                out[neighbour] = lifted
    return out


def _compact(stored: Stored) -> Stored:
    """The fact with its vector as float32 (a list of Python floats is six times larger)."""
    if isinstance(stored.vector, np.ndarray) and stored.vector.dtype == np.float32:
        return stored
    return Stored(stored.fact, np.asarray(stored.vector, dtype=np.float32))


class FactEntry:
    """One user's active facts, and an index over them rebuilt when their texts change."""

    def __init__(self, dim: int, facts: Iterable[Stored]) -> None:
        self.dim = dim
        self.facts: dict[str, Stored] = {s.fact.id: _compact(s) for s in facts}
        #: fact id -> (the content its terms are of, the terms).
        self.terms: dict[str, tuple[str, list[str]]] = {}
        self.index = SearchIndex(dim)
        self.order: list[str] = []
        self.dirty = True
        #: category -> its facts' positions in ``order``; None after any change.
        self._by_category: dict[str, list[int]] | None = None

    def nbytes(self) -> int:
        # A Fact struct with its strings and datetimes is ~1.5 KB; its vector float32.
        return len(self.facts) * (self.dim * 4 + 1500) + self.index.nbytes()

    def put(self, items: Iterable[Stored]) -> None:
        """Upsert facts; one that is no longer active leaves the entry."""
        self._by_category = None
        for stored in items:
            fact = stored.fact
            old = self.facts.get(fact.id)
            if fact.validity != "active":
                if self.facts.pop(fact.id, None) is not None:
                    self.dirty = True
                continue
            self.facts[fact.id] = _compact(stored)
            if old is None or old.fact.content != fact.content or old.fact.scope != fact.scope:
                self.dirty = True

    def remove(self, ids: Iterable[str]) -> None:
        self._by_category = None
        for ident in ids:
            if self.facts.pop(ident, None) is not None:
                self.dirty = True

    def missing_terms(self) -> list[Stored]:
        """Facts whose terms are not known for their current content."""
        known = self.terms
        return [s for s in self.facts.values() if known.get(s.fact.id, ("",))[0] != s.fact.content]

    def learn_terms(self, facts: Sequence[Stored], terms: Sequence[list[str]]) -> None:
        for stored, words in zip(facts, terms, strict=True):
            self.terms[stored.fact.id] = (stored.fact.content, words)

    def rebuild(self) -> None:
        """Index the facts as they are now (``missing_terms()`` must be empty)."""
        self._by_category = None
        self.order = sorted(self.facts)
        self.index = SearchIndex(self.dim)
        if self.order:
            stored = [self.facts[i] for i in self.order]
            self.index.add(
                np.asarray([s.vector for s in stored], dtype=np.float32),
                [self.terms[i][1] for i in self.order],
                [s.fact.scope for s in stored],
            )
        for gone in set(self.terms) - set(self.facts):
            del self.terms[gone]
        self.dirty = False

    def texts(self) -> list[str]:
        return [self.facts[i].fact.content for i in self.order]

    def stored(self, position: int) -> Stored:
        return self.facts[self.order[position]]

    def of_categories(self, categories: Sequence[str], scope: str | None) -> list[int]:
        """Positions of the facts in ``categories`` that a read with ``scope`` sees.
        The positions of each category are kept until the facts change: reading the
        category of each of 10,000 facts took ~4 ms of every like/dislike question."""
        if self._by_category is None:
            by: dict[str, list[int]] = {}
            for position, ident in enumerate(self.order):
                by.setdefault(self.facts[ident].fact.category, []).append(position)
            self._by_category = by
        found = sorted(p for c in set(categories) for p in self._by_category.get(c, ()))
        visible = self.index.visible(scope)
        return found if visible is None else [p for p in found if visible[p]]
