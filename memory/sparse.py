"""Learned sparse vectors: a text's vocabulary terms with their weights, as SPLADE gives
them, and the dot product that scores one against another.

Pure (NumPy). A vector keeps its terms' ids in ascending order, each once, with a
weight above zero; an empty vector matches nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["SparseRows", "SparseVector"]

_NO_IDS = np.zeros(0, dtype=np.int32)
_NO_WEIGHTS = np.zeros(0, dtype=np.float32)


@dataclass(frozen=True, slots=True, eq=False)
class SparseVector:
    """Term ids (ascending, distinct) and their weights (positive), as long as each other."""

    ids: npt.NDArray[np.int32]
    weights: npt.NDArray[np.float32]

    def __post_init__(self) -> None:
        if self.ids.shape != self.weights.shape or self.ids.ndim != 1:
            raise ValueError("ids and weights must be 1-D and as long as each other")

    @classmethod
    def of_dense(
        cls, dense: npt.ArrayLike, *, most: int | None = None, first: int = 0
    ) -> SparseVector:
        """The positive entries of ``dense`` (one weight per vocabulary id) from id
        ``first`` on, the ``most`` heaviest of them when there are more (ties: the
        lower id)."""
        weights = np.asarray(dense, dtype=np.float32).reshape(-1)
        ids = np.flatnonzero(weights[first:] > 0) + first
        if most is not None and len(ids) > most:
            # Stable on the negated weights: among equal weights the lower id stays.
            ids = np.sort(ids[np.argsort(-weights[ids], kind="stable")[:most]])
        return cls(ids.astype(np.int32), weights[ids])

    def __len__(self) -> int:
        return len(self.ids)

    def as_dict(self) -> dict[int, float]:
        """``{term id: weight}``."""
        return dict(zip(self.ids.tolist(), self.weights.tolist(), strict=True))

    def dot(self, other: SparseVector) -> float:
        """The sum over the terms both hold of the product of their weights."""
        _, mine, theirs = np.intersect1d(
            self.ids, other.ids, assume_unique=True, return_indices=True
        )
        return float(np.dot(self.weights[mine].astype(np.float64), other.weights[theirs]))


class SparseRows:
    """Many documents' sparse vectors side by side (their ids and weights in two flat
    arrays, each row's stretch found by an offset), scored against a query at once."""

    __slots__ = ("_count", "_ids", "_rows", "_weights")

    def __init__(self, vectors: Sequence[SparseVector]) -> None:
        lengths = np.fromiter((len(v) for v in vectors), dtype=np.int64, count=len(vectors))
        self._rows = np.repeat(np.arange(len(vectors), dtype=np.int64), lengths)
        self._ids = np.concatenate([v.ids for v in vectors]) if vectors else _NO_IDS
        self._weights = np.concatenate([v.weights for v in vectors]) if vectors else _NO_WEIGHTS
        self._count = len(vectors)

    def __len__(self) -> int:
        return self._count

    def scores(self, query: SparseVector) -> npt.NDArray[np.float64]:
        """Each row's dot product with ``query`` (0 for a row that shares no term)."""
        if not len(query) or not len(self._ids):
            return np.zeros(self._count)
        top = max(int(query.ids[-1]), int(self._ids.max())) + 1
        wanted = np.zeros(top, dtype=np.float32)
        wanted[query.ids] = query.weights
        products = self._weights * wanted[self._ids]
        scores: npt.NDArray[np.float64] = np.bincount(
            self._rows, weights=products, minlength=self._count
        ).astype(np.float64)
        return scores
