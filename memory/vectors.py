"""An index's vectors, one row per document position: float32, or quantised to int8.

Pure and synchronous (NumPy). A small index keeps float32 rows and scores a query
against all of them (one matrix product). A large one ranks by its projection first
(``memory.projection``) and reads only its candidates' rows: those can be int8, each
row scaled by its largest magnitude over 127 (388 bytes a row instead of 1,536 at 384
dimensions), dequantised when read. What quantising can change is the exact score of
a candidate, by about ``scale / 2`` per dimension; ``bench/retrieval.py`` measures the
top-10 against float32.

Rows below ``size`` never change in place once written (a compaction makes new
arrays): a reader may hold a slice while rows are appended.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["Quantised", "Vectors"]

Floats = npt.NDArray[np.float32]
#: Rows quantised ahead (``Vectors.quantised``): how many, their codes and scales.
Quantised = tuple[int, npt.NDArray[np.int8], Floats]


def _capacity(held: int, need: int) -> int:
    """Rows a matrix of ``held`` rows grows to for ``need``: exactly ``need`` for the
    first add (a new user, or a bulk load); then twice as many while small (a user's
    second turn does not reserve 16 rows, 24 KB at 384 dimensions), at most 16 more up
    to 64, and a quarter more past it (a large user's matrix is most of the index's
    memory)."""
    if not held:
        return need
    return max(need, held + max(held // 4, min(held, 16)))


def _quantised(rows: Floats) -> tuple[npt.NDArray[np.int8], Floats]:
    """int8 codes and each row's scale (its largest magnitude over 127)."""
    scales = np.abs(rows).max(axis=1) / 127.0
    safe = np.where(scales > 0, scales, 1.0).astype(np.float32)
    codes = np.rint(rows / safe[:, None]).clip(-127, 127).astype(np.int8)
    return codes, scales.astype(np.float32)


class Vectors:
    """Rows of ``dim`` floats, held as float32 until ``quantise`` (see the module)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.size = 0
        #: float32 rows, or int8 codes and each row's scale once quantised: one tuple,
        #: replaced whole, so a reader in another thread never pairs codes with no scales.
        self._held: tuple[npt.NDArray[Any], Floats | None] = (
            np.zeros((0, dim), dtype=np.float32),
            None,
        )

    @property
    def is_quantised(self) -> bool:
        return self._held[1] is not None

    def nbytes(self) -> int:
        rows, scales = self._held
        return int(rows.nbytes + (scales.nbytes if scales is not None else 0))

    def reserve(self, rows: int) -> None:
        """Make room for this many rows in all (a bulk load: no regrowing)."""
        if rows > len(self._held[0]):
            self._grow(rows)

    def _grow(self, count: int) -> None:
        rows, scales = self._held
        grown = np.zeros((count, self.dim), dtype=rows.dtype)
        grown[: self.size] = rows[: self.size]
        if scales is not None:
            more = np.zeros(count, dtype=np.float32)
            more[: self.size] = scales[: self.size]
            scales = more
        self._held = (grown, scales)

    def append(self, matrix: Floats) -> None:
        first, need = self.size, self.size + len(matrix)
        if need > len(self._held[0]):
            self._grow(_capacity(len(self._held[0]), need))
        rows, scales = self._held
        if scales is None:
            rows[first:need] = matrix
        else:
            rows[first:need], scales[first:need] = _quantised(matrix)
        self.size = need

    def quantised(self) -> Quantised:
        """The rows held now as int8 codes and scales, for ``quantise`` (only reads: may
        run in a worker thread while rows are appended)."""
        size = self.size
        rows, scales = self._held
        if scales is not None:
            return size, rows[:size], scales[:size]
        return (size, *_quantised(rows[:size]))

    def quantise(self, prepared: Quantised | None = None) -> None:
        """From now on hold int8 codes (a no-op once quantised): ``prepared`` by
        ``quantised()`` (rows appended since are quantised here), or made now."""
        rows, scales = self._held
        if scales is not None:
            return
        size, codes, scales = prepared if prepared is not None else self.quantised()
        if size < self.size:
            more, more_scales = _quantised(rows[size : self.size])
            codes, scales = np.concatenate([codes, more]), np.concatenate([scales, more_scales])
        self._held = (codes, scales)

    def rows(self, which: npt.NDArray[np.int64] | slice) -> Floats:
        """The rows at ``which`` (positions, or a slice below ``size``) as float32."""
        rows, scales = self._held
        picked = rows[which]
        if scales is None:
            return picked
        scaled: Floats = picked.astype(np.float32) * scales[which][:, None]
        return scaled

    def scores(self, query: Floats, size: int) -> Floats:
        """Every row below ``size`` dotted with ``query`` (a new array)."""
        rows, scales = self._held
        if scales is None:
            full: Floats = rows[:size] @ query
            return full
        out = np.empty(size, dtype=np.float32)
        for start in range(0, size, 8192):  # dequantised a slice at a time
            end = min(size, start + 8192)
            out[start:end] = (rows[start:end].astype(np.float32) @ query) * scales[start:end]
        return out

    def keep(self, kept: npt.NDArray[np.bool_]) -> None:
        """Keep the rows marked (a compaction): new arrays."""
        rows, scales = self._held
        self._held = (
            rows[: self.size][kept].copy(),
            None if scales is None else scales[: self.size][kept].copy(),
        )
        self.size = len(self._held[0])

    def state(self) -> dict[str, Any]:
        """What ``restored`` takes back (views of the rows below ``size``)."""
        rows, scales = self._held
        return {
            "rows": rows[: self.size],
            "scales": None if scales is None else scales[: self.size],
        }

    @classmethod
    def restored(cls, dim: int, state: Mapping[str, Any]) -> Vectors:
        """The rows ``state()`` was taken from (its arrays are used, not copied)."""
        vectors = cls(dim)
        rows, scales = state["rows"].reshape(-1, dim), state["scales"]
        if scales is not None and (rows.dtype != np.int8 or len(scales) != len(rows)):
            raise ValueError("quantised rows without their scales")
        if scales is None and rows.dtype != np.float32:
            raise ValueError("rows of an unknown type")
        vectors._held = (rows, scales)
        vectors.size = len(rows)
        return vectors
