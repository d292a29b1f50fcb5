"""``memory.vectors``: float32 rows, then int8 codes with a scale a row."""

from __future__ import annotations

import numpy as np
import pytest

from memory.vectors import Vectors


def _rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, 16)).astype(np.float32)
    unit: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit


def test_rows_quantised_ahead_and_rows_appended_meanwhile_read_as_if_quantised_at_once() -> None:
    ahead, at_once = Vectors(16), Vectors(16)
    first, later = _rows(40, 1), _rows(3, 2)
    for vectors in (ahead, at_once):
        vectors.append(first)
    prepared = ahead.quantised()  # (in a worker thread, in the server)
    ahead.append(later)
    ahead.quantise(prepared)
    at_once.append(later)
    at_once.quantise()
    assert ahead.is_quantised
    assert at_once.is_quantised
    everything = slice(0, 43)
    np.testing.assert_array_equal(ahead.rows(everything), at_once.rows(everything))
    np.testing.assert_allclose(ahead.rows(everything), np.vstack([first, later]), atol=0.01)
    assert ahead.nbytes() == 43 * (16 + 4)


def test_quantised_rows_score_within_rounding_and_keep_their_scale_through_a_compaction() -> None:
    vectors = Vectors(16)
    rows = _rows(100, 3)
    vectors.append(rows)
    vectors.quantise()
    query = _rows(1, 4)[0]
    assert vectors.scores(query, 100) == pytest.approx(rows @ query, abs=0.01)
    kept = np.arange(100) % 3 == 0
    vectors.keep(kept)
    assert vectors.size == 34
    assert vectors.scores(query, 34) == pytest.approx(rows[kept] @ query, abs=0.01)
    vectors.append(_rows(2, 5))  # appended rows are quantised as they come
    assert vectors.rows(np.array([34, 35])) == pytest.approx(_rows(2, 5), abs=0.01)


def test_restored_rows_must_be_float32_or_int8_with_a_scale_each() -> None:
    vectors = Vectors(16)
    vectors.append(_rows(5, 6))
    vectors.quantise()
    back = Vectors.restored(16, vectors.state())
    np.testing.assert_array_equal(back.rows(slice(0, 5)), vectors.rows(slice(0, 5)))
    state = vectors.state()
    with pytest.raises(ValueError, match="scales"):
        Vectors.restored(16, {"rows": state["rows"], "scales": state["scales"][:3]})
    with pytest.raises(ValueError, match="unknown"):
        Vectors.restored(16, {"rows": state["rows"], "scales": None})
