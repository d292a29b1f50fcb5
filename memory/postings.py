"""Which documents hold each term, and how many times: the postings behind BM25.

Pure and synchronous (NumPy and the standard library). Terms and documents are small
integers handed out by the caller (``memory.search_index``). A term's documents come
back in no particular order.

Postings live in two places:

* **runs**: large additions (a user's index loading, an import batch) are counted by
  NumPy in one sort and kept as three flat arrays, with each term's stretch found by
  an offset, so a load makes no Python object per term. Two runs of about the same
  size are merged into one (like a binary counter), so an index added to in many
  batches keeps few runs;
* **the tail**: a few words at a time (a chat turn) go to one small array per term
  they touch; past ``TAIL_LIMIT`` postings the tail becomes a run.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["SMALL_ADDITION", "TAIL_LIMIT", "Postings"]

#: Words up to which an addition is counted in plain Python (NumPy's fixed cost would
#: dominate) into the tail.
SMALL_ADDITION = 256
#: Postings the tail holds before it becomes a run.
TAIL_LIMIT = 8192

Ints = npt.NDArray[np.int32]


class _Run:
    """Postings sorted by term: term ``t``'s are ``docs[starts[t]:starts[t + 1]]`` (none
    for a term at or past ``len(starts) - 1``, which the run predates)."""

    __slots__ = ("counts", "docs", "starts")

    def __init__(self, starts: npt.NDArray[np.int64], docs: Ints, counts: Ints) -> None:
        self.starts, self.docs, self.counts = starts, docs, counts

    @classmethod
    def of_sorted(cls, terms: npt.NDArray[np.int64], docs: Ints, counts: Ints) -> _Run:
        """From postings already sorted by term."""
        top = int(terms[-1]) + 1 if len(terms) else 0
        return cls(np.searchsorted(terms, np.arange(top + 1)).astype(np.int64), docs, counts)

    def __len__(self) -> int:
        return len(self.docs)

    def terms(self) -> npt.NDArray[np.int64]:
        return np.repeat(np.arange(len(self.starts) - 1, dtype=np.int64), np.diff(self.starts))

    def of(self, term: int) -> tuple[Ints, Ints] | None:
        if term >= len(self.starts) - 1:
            return None
        start, end = self.starts[term], self.starts[term + 1]
        return (self.docs[start:end], self.counts[start:end]) if end > start else None

    def nbytes(self) -> int:
        """Bytes held in memory (postings left in a saved index's file, not NumPy arrays
        here, do not count)."""
        held = [a for a in (self.docs, self.counts, self.starts) if isinstance(a, np.ndarray)]
        return sum(int(a.nbytes) for a in held)


def _run_of(terms: npt.NDArray[np.int64], docs: Ints, counts: Ints) -> _Run:
    """A run of postings in any order (a stable sort by term keeps each term's order)."""
    order = np.argsort(terms, kind="stable")
    return _Run.of_sorted(terms[order], docs[order], counts[order])


def _merged(older: _Run, newer: _Run) -> _Run:
    """One run holding both, each term's older postings first: no sort, as both are in
    term order (a posting moves by the other run's postings of the terms before its own)."""
    top = max(len(older.starts), len(newer.starts))
    before = np.pad(older.starts, (0, top - len(older.starts)), mode="edge")
    after = np.pad(newer.starts, (0, top - len(newer.starts)), mode="edge")
    at_older = np.arange(len(older)) + after[older.terms()]
    at_newer = np.arange(len(newer)) + before[newer.terms() + 1]
    docs = np.empty(len(older) + len(newer), dtype=np.int32)
    counts = np.empty_like(docs)
    docs[at_older], docs[at_newer] = older.docs, newer.docs
    counts[at_older], counts[at_newer] = older.counts, newer.counts
    return _Run(before + after, docs, counts)


class Postings:
    """Term -> (documents, counts), see the module docstring."""

    def __init__(self, *, tail_limit: int = TAIL_LIMIT) -> None:
        self._tail_limit = tail_limit
        self._runs: list[_Run] = []
        self._tail_docs: dict[int, array[int]] = {}
        self._tail_counts: dict[int, array[int]] = {}
        self._tail = 0
        self._count = 0

    def __len__(self) -> int:
        """Postings held: (term, document) pairs."""
        return self._count

    @property
    def runs(self) -> int:
        """Runs held (the tail not counted)."""
        return len(self._runs)

    def nbytes(self) -> int:
        """About how much memory the postings hold."""
        runs = sum(run.nbytes() for run in self._runs)
        return runs + self._tail * 8 + len(self._tail_docs) * 150

    def add(
        self, first: int, ids: Sequence[int] | npt.NDArray[np.int64], lengths: list[int]
    ) -> None:
        """Post documents ``first, first + 1, ...``, ``lengths[i]`` term ids each, one
        document's after the other in ``ids``."""
        if not len(ids):
            return
        if len(ids) <= SMALL_ADDITION:
            self._add_small(first, ids.tolist() if isinstance(ids, np.ndarray) else ids, lengths)
            return
        docs = np.repeat(np.arange(first, first + len(lengths), dtype=np.int64), lengths)
        pairs, counts = np.unique(np.asarray(ids, dtype=np.int64) << 32 | docs, return_counts=True)
        run = _Run.of_sorted(
            pairs >> 32, (pairs & 0xFFFFFFFF).astype(np.int32), counts.astype(np.int32)
        )
        self._count += len(run)
        self._push(run)

    def add_counted(
        self,
        documents: npt.NDArray[np.int64],
        ids: npt.NDArray[np.int64],
        counts: npt.NDArray[np.int32],
        lengths: npt.NDArray[np.int64],
    ) -> None:
        """Post ``documents`` (none posted before) with their counts given: the ``i``-th's
        distinct term ids are the next ``lengths[i]`` of ``ids``, each with its count
        (positive) in ``counts``."""
        if not len(ids):
            return
        docs = np.repeat(documents, lengths)
        if len(ids) <= SMALL_ADDITION:
            for term, doc, count in zip(ids.tolist(), docs.tolist(), counts.tolist(), strict=True):
                if term not in self._tail_docs:
                    self._tail_docs[term], self._tail_counts[term] = array("i"), array("i")
                self._tail_docs[term].append(doc)
                self._tail_counts[term].append(count)
            self._tail += len(ids)
            self._count += len(ids)
            if self._tail > self._tail_limit:
                self._push(self._tail_run())
            return
        order = np.lexsort((docs, ids))
        run = _Run.of_sorted(
            ids[order], docs[order].astype(np.int32), counts[order].astype(np.int32)
        )
        self._count += len(run)
        self._push(run)

    def _add_small(self, first: int, ids: Sequence[int], lengths: list[int]) -> None:
        at = 0
        for doc, length in enumerate(lengths, first):
            counted: dict[int, int] = {}
            for term in ids[at : at + length]:
                counted[term] = counted.get(term, 0) + 1
            for term, count in counted.items():
                docs = self._tail_docs.get(term)
                if docs is None:
                    docs = self._tail_docs[term] = array("i")
                    self._tail_counts[term] = array("i")
                docs.append(doc)
                self._tail_counts[term].append(count)
            self._tail += len(counted)
            self._count += len(counted)
            at += length
        if self._tail > self._tail_limit:
            self._push(self._tail_run())

    def _tail_run(self) -> _Run:
        """The tail as a run; the tail is empty after."""
        run = self._tail_as_run()
        self._tail_docs, self._tail_counts, self._tail = {}, {}, 0
        return run

    def _tail_as_run(self) -> _Run:
        terms = np.repeat(
            np.fromiter(self._tail_docs, dtype=np.int64, count=len(self._tail_docs)),
            [len(docs) for docs in self._tail_docs.values()],
        )
        docs = np.frombuffer(b"".join(d.tobytes() for d in self._tail_docs.values()), np.int32)
        counts = np.frombuffer(b"".join(c.tobytes() for c in self._tail_counts.values()), np.int32)
        return _run_of(terms, docs.copy(), counts.copy())

    def state(self, *, merged: bool = False) -> list[tuple[npt.NDArray[np.int64], Ints, Ints]]:
        """The postings as runs of (starts, docs, counts), the tail as one more run, or
        with ``merged`` all of them as one run (each term's postings in one stretch);
        ``restored`` makes the same postings from them. Only reads."""
        runs = [*self._runs, self._tail_as_run()] if self._tail_docs else self._runs
        if merged and len(runs) > 1:
            one = runs[0]
            for run in runs[1:]:
                one = _merged(one, run)
            runs = [one]
        return [(run.starts, run.docs, run.counts) for run in runs]

    @classmethod
    def restored(
        cls,
        runs: Sequence[tuple[npt.NDArray[np.int64], Ints, Ints]],
        *,
        tail_limit: int = TAIL_LIMIT,
    ) -> Postings:
        """Postings from ``state()``'s runs (used as they are, not copied)."""
        postings = cls(tail_limit=tail_limit)
        postings._runs = [_Run(starts, docs, counts) for starts, docs, counts in runs]
        postings._count = sum(len(docs) for _, docs, _ in runs)
        return postings

    def _push(self, run: _Run) -> None:
        """Append a run, merging the last two while the older is at most twice the newer."""
        self._runs.append(run)
        while len(self._runs) >= 2 and len(self._runs[-2]) <= 2 * len(self._runs[-1]):
            newer, older = self._runs.pop(), self._runs.pop()
            self._runs.append(_merged(older, newer))

    def of(self, term: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The documents holding ``term`` and how many times each holds it."""
        parts = [part for run in self._runs if (part := run.of(term)) is not None]
        tail = self._tail_docs.get(term)
        if tail is not None:
            parts.append(
                (
                    np.frombuffer(tail, dtype=np.int32),
                    np.frombuffer(self._tail_counts[term], dtype=np.int32),
                )
            )
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if len(parts) == 1:
            return parts[0][0].astype(np.int64), parts[0][1].astype(np.float32)
        docs = np.concatenate([d for d, _ in parts]).astype(np.int64)
        counts = np.concatenate([c for _, c in parts]).astype(np.float32)
        return docs, counts

    def renumber(self, moved: npt.NDArray[np.int64]) -> None:
        """Documents move to ``moved[doc]``; those moved to -1 are dropped. One run after."""
        pending = [*self._runs]
        if self._tail_docs:
            pending.append(self._tail_run())
        self._runs = []
        if not pending:
            self._count = 0
            return
        terms = np.concatenate([run.terms() for run in pending])
        docs = moved[np.concatenate([run.docs for run in pending])]
        counts = np.concatenate([run.counts for run in pending])
        stay = docs >= 0
        self._runs = [_run_of(terms[stay], docs[stay].astype(np.int32), counts[stay])]
        self._count = int(stay.sum())
