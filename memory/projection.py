"""A first stage for the vector search of a large index: candidates by a projection.

Exact cosine over a user's 100k vectors reads 150 MB per query (~8 ms on two
cores), half of the 20 ms a search may take with its query embedding. Above
``PROJECT_FROM`` documents an index also keeps each vector projected on the
top ``dims`` principal directions of its vectors (a third of the bytes): a
query ranks those first, and only the best ``candidates`` are scored exactly.
The ranking among candidates is exact; what can be lost is a true neighbour
that the projection ranks below the candidates, which ``bench/retrieval.py``
measures (recall@10 against exact search).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from schemas.settings import PROJECT_FROM as DEFAULT_PROJECT_FROM

__all__ = ["CANDIDATES", "DIMS", "PROJECT_FROM", "Projection"]

#: Documents from which an index ranks by projection first (``Settings.project_from``).
PROJECT_FROM = DEFAULT_PROJECT_FROM
DIMS = 128
CANDIDATES = 1_000
#: Vectors the principal directions are fitted on. On 48,948 stored LongMemEval keys
#: (ONNX) and the split's 100 questions, the candidates held every exact top-10 hit
#: (recall@10 1.0) fitted on 20,000, 10,000, 5,000 or 2,000 of them; fitting and
#: projecting took 1.0, 0.33, 0.20 and 0.12 s.
_SAMPLE = 5_000

Floats = npt.NDArray[np.float32]


class Projection:
    """Projected vectors, one row per document position (see the module docstring)."""

    def __init__(self, basis: Floats) -> None:
        #: dim x dims, orthonormal columns.
        self.basis = basis
        self._rows = np.zeros((0, basis.shape[1]), dtype=np.float32)
        self.size = 0

    @classmethod
    def fit(cls, vectors: Floats, dims: int = DIMS, seed: int = 0) -> Projection:
        """The top ``dims`` principal directions (uncentered: they keep the most of every
        dot product) of a sample of ``vectors``; the rows are not projected yet."""
        rng = np.random.default_rng(seed)
        picked = vectors
        if len(vectors) > _SAMPLE:
            picked = vectors[np.sort(rng.choice(len(vectors), _SAMPLE, replace=False))]
        _, _, directions = np.linalg.svd(picked, full_matrices=False)
        return cls(np.ascontiguousarray(directions[:dims].T, dtype=np.float32))

    def extend(self, vectors: Floats) -> None:
        """Project and append rows for the next positions."""
        projected = vectors @ self.basis
        need = self.size + len(projected)
        if need > len(self._rows):
            spare = max(need, len(self._rows) + len(self._rows) // 4 + 16)
            grown = np.zeros((spare, self.basis.shape[1]), dtype=np.float32)
            grown[: self.size] = self._rows[: self.size]
            self._rows = grown
        self._rows[self.size : need] = projected
        self.size = need

    def keep(self, kept: npt.NDArray[np.bool_]) -> None:
        """Keep the rows of the positions marked (a compaction of the index)."""
        self._rows = self._rows[: self.size][kept].copy()
        self.size = len(self._rows)

    def candidates(
        self, vector: Floats, mask: npt.NDArray[np.bool_] | None, count: int, size: int
    ) -> npt.NDArray[np.int64]:
        """Positions below ``size`` of the ``count`` best projected scores (unordered),
        within ``mask``."""
        scores = self._rows[:size] @ (vector @ self.basis)
        if mask is not None:
            scores[~mask] = -np.inf
        if len(scores) <= count:
            return np.flatnonzero(np.isfinite(scores))
        picked = np.argpartition(scores, len(scores) - count)[len(scores) - count :]
        return picked[np.isfinite(scores[picked])]

    def nbytes(self) -> int:
        return int(self._rows.nbytes + self.basis.nbytes)

    def state(self) -> tuple[Floats, Floats]:
        """The basis and the projected rows; ``restored`` takes them back."""
        return self.basis, self._rows[: self.size]

    @classmethod
    def restored(cls, basis: Floats, rows: Floats) -> Projection:
        projection = cls(basis)
        projection._rows, projection.size = rows, len(rows)
        return projection
