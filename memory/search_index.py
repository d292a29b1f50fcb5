"""An in-memory hybrid index over one user's documents: exact cosine, BM25 and a learned
sparse model's terms.

Pure and synchronous (NumPy and the standard library). Each document has a
position (0, 1, 2, ... in the order added), a unit vector, its analyzed terms
and a scope, and optionally a learned sparse vector (``memory.sparse``). ``dense``
ranks by exact cosine similarity (a matrix product: no approximation, so no recall
to lose), ``sparse`` by Okapi BM25 with the user's own document statistics,
``learned`` by the dot product of learned sparse vectors (an inverted index: only the
query's terms' postings are read). All filter by scope (``global`` plus the asked
one) and skip removed documents.

Positions stay valid until ``compact()``, which returns where each one went.
Not thread-safe for writes; ``dense_scores`` only reads arrays it has sliced,
so it may run in a worker thread while the owner appends.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.postings import Postings
from memory.projection import CANDIDATES, PROJECT_FROM, Projection
from memory.sparse import SparseVector
from memory.vectors import Quantised, Vectors

__all__ = [
    "BM25_B",
    "BM25_K1",
    "GLOBAL_SCOPE",
    "LEARNED_UNIT",
    "EncodedTerms",
    "SearchIndex",
    "top_k",
]

BM25_K1 = 1.2
BM25_B = 0.75
GLOBAL_SCOPE = "global"
#: A learned sparse weight is held as a whole number of these (``Postings`` counts): SPLADE's
#: weights run 0..3, so the rounding is a thousandth of the smallest that matters.
LEARNED_UNIT = 1e-3

Floats = npt.NDArray[np.float32]


class EncodedTerms:
    """Many documents' terms in three arrays, as a columnar reader hands them out (a bulk
    load skips the Python list of words per document): document ``i``'s terms are
    ``distinct[c]`` for the codes ``c`` in its stretch of ``codes``, ``lengths[i]`` long."""

    __slots__ = ("codes", "distinct", "lengths")

    def __init__(
        self, distinct: Sequence[str], codes: npt.ArrayLike, lengths: npt.ArrayLike
    ) -> None:
        self.distinct = distinct
        self.codes = np.asarray(codes, dtype=np.int64)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        if int(self.lengths.sum()) != len(self.codes):
            raise ValueError("the lengths do not add up to the codes")

    def __len__(self) -> int:
        return len(self.lengths)

    def lists(self) -> list[list[str]]:
        """The same terms, one list of words per document."""
        words = [self.distinct[c] for c in self.codes.tolist()]
        ends = np.cumsum(self.lengths).tolist()
        return [words[start:end] for start, end in zip([0, *ends][:-1], ends, strict=True)]


def top_k(scores: Floats, k: int) -> list[tuple[int, float]]:
    """Positions of the ``k`` highest finite scores, best first (ties: lower position)."""
    finite = np.isfinite(scores)
    if finite.all():
        values, positions = scores, None
    else:  # partitioning many equal -inf values is slow: partition the finite ones alone
        positions = np.flatnonzero(finite)
        values = scores[positions]
    n = len(values)
    if k <= 0 or not n:
        return []
    if n > k:
        # Partitioning picks arbitrarily among scores equal to the k-th best: take those
        # above it, then the lowest positions of those equal to it.
        kth = values[np.argpartition(values, n - k)[n - k :]].min()
        above = np.flatnonzero(values > kth)
        picked = np.concatenate([above, np.flatnonzero(values == kth)[: k - len(above)]])
    else:
        picked = np.arange(n)
    if positions is not None:
        picked = positions[picked]
    order = np.lexsort((picked, -scores[picked]))
    return [(int(picked[i]), float(scores[picked[i]])) for i in order]


class _Grow:
    """A 1-D NumPy array with spare capacity at the end."""

    __slots__ = ("data", "size")

    def __init__(self, dtype: type[np.generic], fill: float | bool = 0) -> None:
        self.data = np.full(0, fill, dtype=dtype)
        self.size = 0

    def extend(self, values: npt.ArrayLike) -> None:
        values = np.asarray(values, dtype=self.data.dtype)
        need = self.size + len(values)
        if need > len(self.data):
            grown = np.zeros(max(need, 2 * len(self.data)), dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.data[self.size : need] = values
        self.size = need

    def view(self) -> npt.NDArray[Any]:
        return self.data[: self.size]

    @classmethod
    def of(cls, values: npt.NDArray[Any]) -> _Grow:
        grow = cls(values.dtype.type)
        grow.data, grow.size = values, len(values)
        return grow


class SearchIndex:
    """One user's documents (see the module docstring)."""

    def __init__(self, dim: int, *, project_from: int = PROJECT_FROM) -> None:
        """``project_from``: live documents from which the index wants a projection
        (``wants_projection``)."""
        self.dim = dim
        self.project_from = project_from
        #: Counts compactions (which move positions): a projection or quantised copy
        #: made before one does not fit the index after it.
        self.compactions = 0
        self._vectors = Vectors(dim)
        self._size = 0
        self._lengths = _Grow(np.float32)
        self._alive = _Grow(np.bool_)
        self._scopes = _Grow(np.int32)
        self._scope_codes: dict[str, int] = {GLOBAL_SCOPE: 0}
        self._terms: dict[str, int] = {}
        self._postings = Postings()
        #: The learned sparse vectors' postings, by a term id of this index's own
        #: (``_learned_terms``: vocabulary id -> it) so that a run's offsets cover only
        #: the terms its documents hold.
        self._learned = Postings()
        self._learned_terms: dict[int, int] = {}
        #: Whether each document's learned vector was given (it may have no terms).
        self._learned_of = _Grow(np.bool_)
        self._live = 0
        self._live_length = 0.0
        self._removed = 0
        self._vocabulary_bytes = 0
        #: Set by ``install`` once the index is large (see ``memory.projection``).
        self._projection: Projection | None = None

    def __len__(self) -> int:
        """Live (not removed) documents."""
        return self._live

    @property
    def size(self) -> int:
        """Positions handed out so far, removed ones included."""
        return self._size

    @property
    def removed(self) -> int:
        return self._removed

    def nbytes(self) -> int:
        """About how much memory the index holds."""
        projected = self._projection.nbytes() if self._projection is not None else 0
        return int(
            self._vectors.nbytes()
            + projected
            + self._size * 9
            + self._postings.nbytes()
            + self._learned.nbytes()
            + 100 * len(self._learned_terms)
            + self._vocabulary_bytes
        )

    def state(self) -> dict[str, Any]:
        """What ``restored`` makes the same index from: arrays (views, not copies) and
        lists. Only reads; the arrays' rows below ``size`` do not change while documents
        are added, but ``remove`` changes ``alive`` in place."""
        projection = self._projection
        return {
            "vectors": self._vectors.state(),
            "lengths": self._lengths.view(),
            "alive": self._alive.view(),
            "scopes": self._scopes.view(),
            # Codes and term ids are handed out in insertion order.
            "scope_names": list(self._scope_codes),
            "words": list(self._terms),
            "postings": self._postings.state(),
            "learned": self._learned.state(),
            "learned_of": self._learned_of.view(),
            "learned_terms": np.fromiter(
                self._learned_terms, dtype=np.int64, count=len(self._learned_terms)
            ),
            "projection": None if projection is None else projection.state(),
        }

    @classmethod
    def restored(
        cls, dim: int, state: Mapping[str, Any], *, project_from: int = PROJECT_FROM
    ) -> SearchIndex:
        """The index ``state()`` was taken from (its arrays are used, not copied)."""
        index = cls(dim, project_from=project_from)
        index._vectors = Vectors.restored(dim, state["vectors"])
        index._size = index._vectors.size
        index._lengths = _Grow.of(state["lengths"])
        index._alive = _Grow.of(state["alive"])
        index._scopes = _Grow.of(state["scopes"])
        index._scope_codes = {name: code for code, name in enumerate(state["scope_names"])}
        words: list[str] = state["words"]
        index._terms = dict(zip(map(sys.intern, words), range(len(words)), strict=True))
        index._vocabulary_bytes = sum(map(len, words)) + 100 * len(words)
        index._postings = Postings.restored(state["postings"])
        # An index saved before learned vectors were held has none: they match nothing.
        index._learned = Postings.restored(state.get("learned", []))
        learned_of = state.get("learned_of")
        index._learned_of = _Grow.of(
            np.zeros(index._size, dtype=np.bool_) if learned_of is None else learned_of
        )
        learned_terms = state.get("learned_terms")
        if learned_terms is not None:
            ids = np.asarray(learned_terms, dtype=np.int64).tolist()
            index._learned_terms = dict(zip(ids, range(len(ids)), strict=True))
        alive = index._alive.view()
        index._live = int(alive.sum())
        index._removed = index._size - index._live
        index._live_length = float(index._lengths.view()[alive].sum(dtype=np.float64))
        if state["projection"] is not None:
            index._projection = Projection.restored(*state["projection"])
        return index

    # -- writing ---------------------------------------------------------------

    def reserve(self, documents: int) -> None:
        """Make room for this many documents in all (a bulk load: no regrowing)."""
        self._vectors.reserve(documents)

    def add(
        self,
        vectors: npt.ArrayLike,
        terms: Sequence[Sequence[str]] | EncodedTerms,
        scopes: Sequence[str],
        learned: Sequence[SparseVector] | None = None,
    ) -> int:
        """Append documents; returns the position of the first. Vectors should be unit
        length (cosine is their dot product). ``learned``: each document's learned sparse
        vector (None: none of them has one, and none is found by ``learned_scores``)."""
        matrix = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        n = len(matrix)
        if not (n == len(terms) == len(scopes)) or (learned is not None and len(learned) != n):
            raise ValueError("vectors, terms, scopes and learned vectors differ in length")
        first = self._size
        need = first + n
        self._vectors.append(matrix)
        if self._projection is not None:
            self._projection.extend(matrix)
        if isinstance(terms, EncodedTerms):
            # One dictionary lookup per distinct word, not per word.
            known = self._terms_of(terms.distinct)
            lengths = terms.lengths.tolist()
            ids: Sequence[int] | npt.NDArray[np.int64] = known[terms.codes]
        else:
            lengths = [len(words) for words in terms]
            vocabulary, listed = self._terms, []
            for words in terms:
                for word in words:
                    term = vocabulary.get(word)
                    listed.append(self._term(word) if term is None else term)
            ids = listed
        self._postings.add(first, ids, lengths)
        self._learned_of.extend(np.zeros(n, dtype=np.bool_))
        if learned is not None:
            self.add_learned(np.arange(first, first + n), learned)
        self._lengths.extend(lengths)
        self._alive.extend(np.ones(n, dtype=np.bool_))
        self._scopes.extend([self._scope_code(s) for s in scopes])
        self._size = need
        self._live += n
        self._live_length += sum(lengths)
        return first

    @property
    def wants_projection(self) -> bool:
        """Large enough to rank by projection first, and no projection installed yet."""
        return self._projection is None and self._live >= max(self.project_from, 1)

    def fit_projection(self) -> Projection:
        """A projection fitted on (and covering) the vectors held now. Only reads: it may
        run in a worker thread while documents are added; ``install`` catches up."""
        size = self._size
        vectors = self._vectors.rows(slice(0, size))
        projection = Projection.fit(vectors)
        projection.extend(vectors)
        return projection

    def quantised_vectors(self) -> Quantised:
        """The vectors as int8, for ``install`` (only reads: may run in a worker thread)."""
        return self._vectors.quantised()

    def install(
        self, projection: Projection, *, quantise: bool = True, prepared: Quantised | None = None
    ) -> None:
        """Rank by ``projection`` from now on, projecting what was added since its fit;
        with ``quantise``, the vectors are held as int8 from then on (``memory.vectors``:
        only the candidates' rows are read), ``prepared`` by ``quantised_vectors``."""
        if projection.size < self._size:
            projection.extend(self._vectors.rows(slice(projection.size, self._size)))
        self._projection = projection
        if quantise:
            self._vectors.quantise(prepared)

    def without_learned(self) -> list[int]:
        """The live positions whose learned sparse vector was never given."""
        lacking = self._alive.view().astype(np.bool_) & ~self._learned_of.view()
        return np.flatnonzero(lacking).tolist()

    def add_learned(self, positions: npt.ArrayLike, learned: Sequence[SparseVector]) -> None:
        """Post the learned sparse vectors of the documents at ``positions``; those that
        already have one are skipped."""
        at = np.asarray(positions, dtype=np.int64)
        if len(at) != len(learned):
            raise ValueError("positions and learned vectors differ in length")
        fresh = ~self._learned_of.view()[at]
        if not fresh.all():
            at = at[fresh]
            learned = [v for v, new in zip(learned, fresh.tolist(), strict=True) if new]
        self._learned_of.data[at] = True
        if not any(len(v) for v in learned):
            return
        vocabulary = np.concatenate([v.ids for v in learned]).astype(np.int64)
        weights = np.concatenate([v.weights for v in learned])
        counts = np.maximum(np.rint(weights / LEARNED_UNIT), 1).astype(np.int32)
        known = self._learned_terms
        distinct, codes = np.unique(vocabulary, return_inverse=True)
        for term in distinct.tolist():
            known.setdefault(term, len(known))
        local = np.fromiter(map(known.__getitem__, distinct.tolist()), dtype=np.int64)
        lengths = np.fromiter((len(v) for v in learned), dtype=np.int64, count=len(learned))
        self._learned.add_counted(at, local[codes.reshape(-1)], counts, lengths)

    def _scope_code(self, scope: str) -> int:
        return self._scope_codes.setdefault(scope, len(self._scope_codes))

    def _terms_of(self, words: Sequence[str]) -> npt.NDArray[np.int64]:
        """The ids of distinct ``words``, new ones for the new (``_term`` in bulk: a
        user's first load meets thousands of words at once)."""
        vocabulary = self._terms
        new = [word for word in words if word not in vocabulary]
        if new:
            start = len(vocabulary)
            vocabulary.update(
                zip(map(sys.intern, new), range(start, start + len(new)), strict=True)
            )
            self._vocabulary_bytes += sum(map(len, new)) + 100 * len(new)
        return np.fromiter(map(vocabulary.__getitem__, words), dtype=np.int64, count=len(words))

    def _term(self, word: str) -> int:
        """The id of ``word``, a new one if it is new."""
        term = self._terms.get(word)
        if term is None:
            # Interned: users share most of their words, so one string serves all the
            # indexes that hold it (the analyzer makes a new one per token).
            term = self._terms[sys.intern(word)] = len(self._terms)
            self._vocabulary_bytes += len(word) + 100  # the key and its dict slot
        return term

    def remove(self, position: int) -> None:
        """Forget the document at ``position`` (no-op if already removed)."""
        alive = self._alive.data
        if not 0 <= position < self._size or not alive[position]:
            return
        alive[position] = False
        self._live -= 1
        self._live_length -= float(self._lengths.data[position])
        self._removed += 1

    def compact(self) -> npt.NDArray[np.int64]:
        """Drop removed documents for good. Returns each old position's new one (-1: gone)."""
        keep = self._alive.view().astype(np.bool_)
        moved = np.full(self._size, -1, dtype=np.int64)
        moved[keep] = np.arange(int(keep.sum()))
        self._vectors.keep(keep)
        if self._projection is not None:
            self._projection.keep(keep)
        for grow in (self._lengths, self._alive, self._scopes, self._learned_of):
            kept = grow.view()[keep].copy()
            grow.data, grow.size = kept, len(kept)
        self._postings.renumber(moved)
        self._learned.renumber(moved)
        self._size = self._vectors.size
        self._removed = 0
        self.compactions += 1
        return moved

    # -- reading ---------------------------------------------------------------

    def visible(self, scope: str | None) -> npt.NDArray[np.bool_] | None:
        """Live documents a read with ``scope`` sees (``global`` plus that scope); None
        when that is every position."""
        if scope is None and not self._removed:
            return None
        mask: npt.NDArray[np.bool_] = self._alive.view().astype(np.bool_)
        if scope is not None:
            codes = self._scopes.view()
            wanted = self._scope_codes.get(scope, -1)
            mask &= (codes == 0) | (codes == wanted)
        return mask

    def dense_scores(
        self, vector: npt.ArrayLike, mask: npt.NDArray[np.bool_] | None, *, exact: bool = False
    ) -> Floats:
        """Cosine similarity of every position to ``vector``; -inf where ``mask`` is False.
        With a projection installed (and not ``exact``), only the projection's candidates
        are scored (exactly) and the rest are -inf."""
        query = np.asarray(vector, dtype=np.float32)
        # The positions the mask covers: documents may be added meanwhile (another thread).
        size = len(mask) if mask is not None else self._size
        projection = self._projection
        if exact or projection is None or projection.size < size:
            scores = self._vectors.scores(query, size)
            if mask is not None:
                scores[~mask] = -np.inf
            return scores
        found = projection.candidates(query, mask, CANDIDATES, size)
        scores = np.full(size, -np.inf, dtype=np.float32)
        scores[found] = self._vectors.rows(found) @ query
        return scores

    def similarities(self, positions: Sequence[int], vector: npt.ArrayLike) -> list[float]:
        """Cosine similarity of these positions to ``vector`` (exact)."""
        if not positions:
            return []
        query = np.asarray(vector, dtype=np.float32)
        scores = self._vectors.rows(np.asarray(positions, dtype=np.int64)) @ query
        return [float(score) for score in scores]

    def pairwise(self, positions: Sequence[int]) -> Floats:
        """Cosine similarities between these positions, a square matrix in their order."""
        rows = self._vectors.rows(np.asarray(positions, dtype=np.int64))
        matrix: Floats = rows @ rows.T
        return matrix

    def dense_top(
        self, vector: npt.ArrayLike, mask: npt.NDArray[np.bool_] | None, k: int
    ) -> list[tuple[int, float]]:
        """``top_k`` of ``dense_scores``, without scoring every position where a
        projection picks the candidates. Only reads: may run in a worker thread."""
        query = np.asarray(vector, dtype=np.float32)
        size = len(mask) if mask is not None else self._size
        projection = self._projection
        if projection is None or projection.size < size:
            return top_k(self.dense_scores(query, mask), k)
        found = projection.candidates(query, mask, CANDIDATES, size)
        exact = self._vectors.rows(found) @ query
        return [(int(found[i]), score) for i, score in top_k(exact, k)]

    def sparse_scores(
        self,
        terms: Iterable[str],
        mask: npt.NDArray[np.bool_] | None,
        *,
        prefixes: Sequence[str] = (),
    ) -> Floats:
        """BM25 of every position for the query ``terms`` (and every indexed term that starts
        with one of ``prefixes``); -inf where no term matched or ``mask`` is False."""
        wanted = {self._terms[t] for t in terms if t in self._terms}
        for prefix in prefixes:
            wanted.update(i for t, i in self._terms.items() if t.startswith(prefix))
        scores = np.full(self._size, -np.inf, dtype=np.float32)
        if not wanted or not self._live:
            return scores
        total = np.zeros(self._size, dtype=np.float32)
        lengths = self._lengths.view()
        average = max(self._live_length / self._live, 1e-9)
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths / average)
        matched = np.zeros(self._size, dtype=np.bool_)
        alive = self._alive.view()
        for term in wanted:
            docs, counts = self._postings.of(term)
            frequency = int(alive[docs].sum()) if self._removed else len(docs)
            idf = math.log(1.0 + (self._live - frequency + 0.5) / (frequency + 0.5))
            total[docs] += idf * counts * (BM25_K1 + 1.0) / (counts + norm[docs])
            matched[docs] = True
        if mask is not None:
            matched &= mask
        scores[matched] = total[matched]
        return scores

    def learned_scores(self, query: SparseVector, mask: npt.NDArray[np.bool_] | None) -> Floats:
        """The dot product of every position's learned sparse vector with ``query``;
        -inf where no term is shared or ``mask`` is False."""
        scores = np.full(self._size, -np.inf, dtype=np.float32)
        wanted = [
            (term, weight)
            for vocabulary, weight in zip(query.ids.tolist(), query.weights.tolist(), strict=True)
            if (term := self._learned_terms.get(vocabulary)) is not None
        ]
        if not wanted or not self._live:
            return scores
        total = np.zeros(self._size, dtype=np.float32)
        matched = np.zeros(self._size, dtype=np.bool_)
        for term, weight in wanted:
            docs, counts = self._learned.of(term)
            total[docs] += (weight * LEARNED_UNIT) * counts
            matched[docs] = True
        matched &= self._alive.view().astype(np.bool_)
        if mask is not None:
            matched &= mask
        scores[matched] = total[matched]
        return scores
