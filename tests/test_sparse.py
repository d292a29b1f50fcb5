"""Sparse vectors (``memory.sparse``): taking the terms out of a dense weight array, the
dot product, and many rows scored against a query at once."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.sparse import SparseRows, SparseVector


def _vector(terms: dict[int, float]) -> SparseVector:
    ids = sorted(terms)
    return SparseVector(
        np.asarray(ids, dtype=np.int32), np.asarray([terms[i] for i in ids], dtype=np.float32)
    )


def test_a_dense_array_gives_its_positive_terms_from_the_first_id_on_in_id_order() -> None:
    dense = np.asarray([9.0, 0.0, 0.5, 0.0, 2.0, -1.0, 0.25], dtype=np.float32)
    assert SparseVector.of_dense(dense).as_dict() == {0: 9.0, 2: 0.5, 4: 2.0, 6: 0.25}
    assert SparseVector.of_dense(dense, first=1).as_dict() == {2: 0.5, 4: 2.0, 6: 0.25}
    assert len(SparseVector.of_dense(np.zeros(5))) == 0


def test_most_keeps_the_heaviest_terms_and_the_lower_id_among_equal_weights() -> None:
    dense = np.asarray([0.0, 1.0, 3.0, 1.0, 2.0, 1.0], dtype=np.float32)
    assert SparseVector.of_dense(dense, most=2).as_dict() == {2: 3.0, 4: 2.0}
    assert SparseVector.of_dense(dense, most=4).as_dict() == {1: 1.0, 2: 3.0, 3: 1.0, 4: 2.0}
    assert SparseVector.of_dense(dense, most=10).as_dict() == SparseVector.of_dense(dense).as_dict()


def test_ids_and_weights_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="as long as each other"):
        SparseVector(np.asarray([1, 2], dtype=np.int32), np.asarray([1.0], dtype=np.float32))


def test_the_dot_product_adds_the_products_of_shared_terms_only() -> None:
    a = _vector({3: 2.0, 10: 1.0, 40: 0.5})
    b = _vector({10: 4.0, 40: 2.0, 41: 9.0})
    assert a.dot(b) == pytest.approx(4.0 + 1.0)
    assert b.dot(a) == a.dot(b)
    assert a.dot(_vector({})) == 0.0
    assert a.dot(_vector({4: 1.0})) == 0.0


# Weights in hundredths: hypothesis' float strategies refuse to run where a loaded
# library has set flush-to-zero.
_terms = st.dictionaries(
    st.integers(0, 200), st.integers(1, 500).map(lambda w: w / 100), max_size=30
)


@given(st.lists(_terms, max_size=12), _terms)
def test_rows_score_each_row_as_its_own_dot_product_with_the_query(
    rows: list[dict[int, float]], query: dict[int, float]
) -> None:
    vectors = [_vector(terms) for terms in rows]
    scores = SparseRows(vectors).scores(_vector(query))
    assert len(scores) == len(vectors) == len(SparseRows(vectors))
    expected = [v.dot(_vector(query)) for v in vectors]
    assert scores.tolist() == pytest.approx(expected, rel=1e-5, abs=1e-6)
