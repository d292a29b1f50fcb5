"""The in-memory hybrid index: exact cosine, BM25 by hand, scopes, removal and compaction;
its postings, however they were added, hold what a plain dictionary would."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.postings import SMALL_ADDITION, TAIL_LIMIT, Postings
from memory.projection import CANDIDATES, PROJECT_FROM, Projection
from memory.search_index import BM25_B, BM25_K1, EncodedTerms, SearchIndex, top_k
from memory.sparse import SparseVector


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


def _index(docs: list[list[str]], scopes: list[str] | None = None, dim: int = 4) -> SearchIndex:
    index = SearchIndex(dim)
    vectors = np.eye(dim, dtype=np.float32)[[i % dim for i in range(len(docs))]]
    index.add(vectors, docs, scopes or ["global"] * len(docs))
    return index


def test_dense_ranking_is_exact_cosine_over_every_document() -> None:
    rng = np.random.default_rng(7)
    vectors = _unit(rng, 3000, 32)
    index = SearchIndex(32)
    for start in range(0, 3000, 700):  # several appends, growing the matrix
        chunk = vectors[start : start + 700]
        index.add(chunk, [[] for _ in chunk], ["global"] * len(chunk))
    query = _unit(rng, 1, 32)[0]
    expected = np.argsort(-(vectors @ query), kind="stable")[:25].tolist()
    assert [p for p, _ in top_k(index.dense_scores(query, None), 25)] == expected
    assert [p for p, _ in index.dense_top(query, None, 25)] == expected


def test_bm25_scores_match_the_okapi_formula_by_hand() -> None:
    docs = [["tea", "green", "tea"], ["coffee"], ["green", "tea", "garden", "walk"], ["walk"]]
    index = _index(docs)
    scores = index.sparse_scores(["tea", "green"], None)
    average = sum(map(len, docs)) / len(docs)

    def part(term: str, doc: list[str]) -> float:
        df = sum(1 for d in docs if term in d)
        idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        tf = doc.count(term)
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(doc) / average)
        return idf * tf * (BM25_K1 + 1) / (tf + norm)

    assert scores[0] == pytest.approx(part("tea", docs[0]) + part("green", docs[0]), rel=1e-5)
    assert scores[2] == pytest.approx(part("tea", docs[2]) + part("green", docs[2]), rel=1e-5)
    assert math.isinf(scores[1])
    assert math.isinf(scores[3])
    assert [p for p, _ in top_k(scores, 10)] == [0, 2]


def test_a_prefix_matches_every_term_that_starts_with_it() -> None:
    index = _index([["python", "code"], ["pythagoras"], ["java"]])
    hits = top_k(index.sparse_scores([], None, prefixes=["pyth"]), 10)
    assert sorted(p for p, _ in hits) == [0, 1]


def test_a_scope_sees_global_documents_and_its_own_only() -> None:
    index = _index([["tea"], ["tea"], ["tea"]], scopes=["global", "app-a", "app-b"])
    for scores in (
        index.sparse_scores(["tea"], index.visible("app-a")),
        index.dense_scores([1, 1, 1, 1], index.visible("app-a")),
    ):
        assert sorted(p for p, _ in top_k(scores, 10)) == [0, 1]
    assert index.visible(None) is None
    never = index.visible("unknown-app")
    assert never is not None
    assert never.tolist() == [True, False, False]


def test_removed_documents_are_never_found_and_compaction_keeps_the_rest() -> None:
    docs = [["tea", str(i)] for i in range(10)]
    index = _index(docs)
    for position in (1, 4, 4, 8):  # removing twice is a no-op
        index.remove(position)
    assert len(index) == 7
    visible = index.visible(None)
    assert sorted(p for p, _ in top_k(index.sparse_scores(["tea"], visible), 20)) == [
        0,
        2,
        3,
        5,
        6,
        7,
        9,
    ]
    before = dict(top_k(index.sparse_scores(["tea", "3"], visible), 20))
    moved = index.compact()
    assert moved.tolist() == [0, -1, 1, 2, -1, 3, 4, 5, -1, 6]
    after = dict(top_k(index.sparse_scores(["tea", "3"], index.visible(None)), 20))
    assert {int(moved[p]): s for p, s in before.items()} == pytest.approx(after)
    assert index.size == 7
    assert index.removed == 0


def test_top_k_breaks_ties_by_position_and_skips_minus_infinity() -> None:
    scores = np.array([1.0, 3.0, -np.inf, 3.0, 2.0], dtype=np.float32)
    assert top_k(scores, 3) == [(1, 3.0), (3, 3.0), (4, 2.0)]
    assert top_k(scores, 10) == [(1, 3.0), (3, 3.0), (4, 2.0), (0, 1.0)]
    assert top_k(np.full(4, -np.inf, dtype=np.float32), 2) == []
    many_equal = np.array([0.0] * 50 + [1.0] + [0.0] * 50, dtype=np.float32)
    assert top_k(many_equal, 4) == [(50, 1.0), (0, 0.0), (1, 0.0), (2, 0.0)]


def test_a_small_index_reserves_at_most_twice_its_rows_and_a_large_one_a_quarter() -> None:
    index = SearchIndex(8)
    for turn in range(200):  # one turn: the user's message and the reply
        index.add(np.ones((2, 8), dtype=np.float32), [[], []], ["global", "global"])
        rows = (index.nbytes() - index.size * 9) // (8 * 4)  # the matrix's capacity
        assert index.size <= rows <= 2 * index.size
        if turn == 0:
            assert rows == 2
    assert rows <= index.size * 5 // 4


def test_indexes_of_different_users_share_one_string_per_word() -> None:
    first, second = SearchIndex(4), SearchIndex(4)
    for index in (first, second):
        word = "".join(["gar", "den"])  # a new string object each time, as from the analyzer
        index.add(np.eye(4, dtype=np.float32)[:1], [[word]], ["global"])
    [mine], [theirs] = list(first._terms), list(second._terms)
    assert mine is theirs
    assert [p for p, _ in top_k(second.sparse_scores(["garden"], None), 1)] == [0]


def test_adding_mismatched_lengths_is_refused() -> None:
    refused = r"^vectors, terms, scopes and learned vectors differ in length$"
    with pytest.raises(ValueError, match=refused):
        SearchIndex(2).add(np.zeros((2, 2)), [["a"]], ["global", "global"])
    none = SparseVector(np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))
    with pytest.raises(ValueError, match=refused):
        SearchIndex(2).add(np.zeros((2, 2)), [["a"], ["b"]], ["global", "global"], [none])


def test_a_large_index_ranks_by_projection_first_and_keeps_the_exact_order() -> None:
    rng = np.random.default_rng(3)
    centers = _unit(rng, 64, 192)
    picks = rng.integers(0, 64, PROJECT_FROM)
    vectors = centers[picks] + 0.5 * _unit(rng, PROJECT_FROM, 192)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = SearchIndex(192)
    index.add(vectors[:-1], [[] for _ in range(PROJECT_FROM - 1)], ["global"] * (PROJECT_FROM - 1))
    assert not index.wants_projection
    index.add(vectors[-1:], [[]], ["global"])
    assert index.wants_projection
    fitted = index.fit_projection()
    late = _unit(rng, 1, 192)
    index.add(late, [[]], ["global"])  # added while the fit ran: install catches up
    index.install(fitted)
    assert not index.wants_projection
    found = []
    for query in [*_unit(rng, 20, 192), late[0]]:
        exact = [p for p, _ in top_k(index.dense_scores(query, None, exact=True), 10)]
        approx = top_k(index.dense_scores(query, None), 10)
        assert index.dense_top(query, None, 10) == approx
        found.append(len(set(exact) & {p for p, _ in approx}) / 10)
        assert [s for _, s in approx] == sorted((s for _, s in approx), reverse=True)
    assert sum(found) / len(found) >= 0.95
    assert top_k(index.dense_scores(late[0], None), 1)[0][0] == PROJECT_FROM


def test_postings_added_a_few_at_a_time_score_as_those_added_in_bulk() -> None:
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    docs = [[str(w) for w in rng.choice(words, size=int(rng.integers(0, 30)))] for _ in range(120)]
    bulk = SearchIndex(4)
    bulk.add(_unit(rng, len(docs), 4), docs, ["global"] * len(docs))  # NumPy's counting
    piecewise = SearchIndex(4)
    for doc in docs:  # plain Python's counting, one document at a time
        piecewise.add(_unit(rng, 1, 4), [doc], ["global"])
    for query in (["w1"], ["w2", "w3", "w2"], words[:10], ["missing"]):
        assert np.array_equal(
            bulk.sparse_scores(query, None), piecewise.sparse_scores(query, None)
        ), query


# A batch of documents, each a list of term ids (few terms, so they repeat).
_batch = st.lists(st.lists(st.integers(0, 30), max_size=40), min_size=1, max_size=30)


def _model_of(batches: list[list[list[int]]]) -> dict[int, dict[int, int]]:
    model: dict[int, dict[int, int]] = {}
    doc = 0
    for batch in batches:
        for words in batch:
            for term in words:
                model.setdefault(term, {})
                model[term][doc] = model[term].get(doc, 0) + 1
            doc += 1
    return model


def _held(postings: Postings, term: int) -> dict[int, int]:
    docs, counts = postings.of(term)
    assert (docs.dtype, counts.dtype) == (np.dtype(np.int64), np.dtype(np.float32))
    assert len(set(docs.tolist())) == len(docs), "a document posted twice for one term"
    return dict(zip(docs.tolist(), counts.astype(int).tolist(), strict=True))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(_batch, min_size=1, max_size=12), st.integers(1, 200), st.data())
def test_postings_hold_each_terms_documents_and_counts_however_they_were_added(
    batches: list[list[list[int]]], tail_limit: int, data: st.DataObject
) -> None:
    postings = Postings(tail_limit=tail_limit)
    first = 0
    for batch in batches:
        ids = [term for words in batch for term in words]
        if data.draw(st.booleans()):
            ids_arg: list[int] | np.ndarray = np.asarray(ids, dtype=np.int64)
        else:
            ids_arg = ids
        postings.add(first, ids_arg, [len(words) for words in batch])
        first += len(batch)
    model = _model_of(batches)
    merged = Postings.restored(postings.state(merged=True))  # as saved: one run
    assert merged.runs <= 1
    for term in range(32):
        assert _held(postings, term) == _held(merged, term) == model.get(term, {})
    assert len(postings) == len(merged) == sum(len(docs) for docs in model.values())

    gone = set(data.draw(st.lists(st.integers(0, max(first - 1, 0)), max_size=10)))
    moved = np.full(first, -1, dtype=np.int64)
    kept = [doc for doc in range(first) if doc not in gone]
    moved[kept] = np.arange(len(kept))
    postings.renumber(moved)
    held = 0
    for term in range(32):
        expected = {int(moved[d]): c for d, c in model.get(term, {}).items() if d not in gone}
        assert _held(postings, term) == expected
        held += len(expected)
    assert len(postings) == held
    assert postings.runs <= 1


def test_an_index_added_to_in_many_batches_keeps_few_runs() -> None:
    postings = Postings()
    rng = np.random.default_rng(5)
    for batch in range(200):
        lengths = [SMALL_ADDITION // 4] * 8  # each batch large enough to make a run
        ids = rng.integers(0, 500, size=sum(lengths))
        postings.add(batch * 8, ids, lengths)
    assert postings.runs <= 9  # like a binary counter: about log2(200) + 1


def test_terms_read_encoded_in_bulk_score_as_the_same_words_in_lists() -> None:
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(50)]
    docs = [[str(w) for w in rng.choice(words, size=int(rng.integers(0, 25)))] for _ in range(90)]
    distinct = sorted({w for doc in docs for w in doc})
    codes = [distinct.index(w) for doc in docs for w in doc]
    encoded = EncodedTerms(distinct, codes, [len(doc) for doc in docs])
    assert encoded.lists() == docs
    vectors = np.eye(4, dtype=np.float32)[[i % 4 for i in range(len(docs))]]
    listed, bulk = SearchIndex(4), SearchIndex(4)
    listed.add(vectors, docs, ["global"] * len(docs))
    bulk.add(vectors, encoded, ["global"] * len(docs))
    for query in (["w1"], ["w2", "w3"], words[:12], ["missing"]):
        # Term ids differ between the two (first seen vs sorted), and so does the order in
        # which a query's terms are summed: equal to float32 rounding.
        np.testing.assert_allclose(
            listed.sparse_scores(query, None), bulk.sparse_scores(query, None), rtol=1e-6
        )


def test_encoded_terms_whose_lengths_do_not_add_up_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^the lengths do not add up to the codes$"):
        EncodedTerms(["a"], [0, 0], [1])


def _found(scores: np.ndarray) -> list[int]:
    return sorted(p for p, _ in top_k(scores, 100))


@pytest.mark.parametrize(
    ("removed", "found", "left"),
    [
        ([0], [1, 2, 3], 1),
        ([3], [0, 1, 2], 1),
        ([0, 0, 2], [1, 3], 2),
        ([-1], [0, 1, 2, 3], 0),
        ([4], [0, 1, 2, 3], 0),
    ],
)
def test_removing_hides_a_document_once_and_ignores_positions_out_of_range(
    removed: list[int], found: list[int], left: int
) -> None:
    index = _index([["tea"] for _ in range(4)])
    for position in removed:
        index.remove(position)
    assert _found(index.sparse_scores(["tea"], index.visible(None))) == found
    assert len(index) == len(found)
    assert index.removed == left


def test_bm25_after_removal_scores_as_if_the_removed_documents_were_never_added() -> None:
    docs = [
        ["tea", "green", "tea"],
        ["tea", "coffee", "milk", "sugar", "cake"],
        ["green"],
        ["tea"],
        ["coffee", "tea", "tea", "tea"],
    ]
    index = _index(docs)
    index.remove(1)
    index.remove(4)
    kept = [0, 2, 3]
    fresh = _index([docs[p] for p in kept])
    for query in (["tea"], ["green", "tea"], ["coffee"]):
        scores = index.sparse_scores(query, index.visible(None))
        np.testing.assert_allclose(scores[kept], fresh.sparse_scores(query, None), rtol=1e-6)
        assert np.isneginf(scores[[1, 4]]).all()
    index.compact()  # "coffee" is still a known word, in no document left
    for query in (["tea"], ["green", "tea"], ["coffee"]):
        np.testing.assert_allclose(
            index.sparse_scores(query, None), fresh.sparse_scores(query, None), rtol=1e-6
        )


def test_a_scope_does_not_see_removed_documents() -> None:
    index = _index([["tea"] for _ in range(4)], scopes=["global", "app-a", "app-a", "app-b"])
    index.remove(0)
    index.remove(1)
    visible = index.visible("app-a")
    assert visible is not None
    assert visible.tolist() == [False, False, True, False]


def test_similarities_and_pairwise_are_the_cosines_the_dense_scores_give() -> None:
    rng = np.random.default_rng(11)
    vectors = _unit(rng, 6, 8)
    index = SearchIndex(8)
    index.add(vectors, [[] for _ in range(6)], ["global"] * 6)
    query = _unit(rng, 1, 8)[0].astype(np.float64).tolist()  # as a client sends it
    dense = index.dense_scores(query, None)
    expected = [float(dense[p]) for p in (4, 0, 4)]
    assert index.similarities([4, 0, 4], query) == pytest.approx(expected, rel=1e-6)
    assert index.similarities([], query) == []
    rows = vectors[[5, 1, 2]]
    np.testing.assert_allclose(index.pairwise([5, 1, 2]), rows @ rows.T, rtol=1e-6)
    assert index.pairwise([]).shape == (0, 0)


def test_the_memory_estimate_counts_new_words_by_their_length_and_the_projection() -> None:
    index = SearchIndex(4)
    index.reserve(8)  # the vector matrix does not grow in between
    vectors = np.eye(4, dtype=np.float32)
    index.add(vectors[:1], [["tea"]], ["global"])
    sizes = [index.nbytes()]
    for word in ("x" * 300, "y" * 300):
        index.add(vectors[1:2], [[word]], ["global"])
        sizes.append(index.nbytes())
    first, second = sizes[1] - sizes[0], sizes[2] - sizes[1]
    assert first >= 300
    assert second == first  # a word of the same length costs the same
    projection = index.fit_projection()
    without = index.nbytes()
    index.install(projection, quantise=False)
    assert index.nbytes() == without + projection.nbytes()


def test_a_quantised_index_holds_a_quarter_of_the_vector_bytes_and_finds_what_float32_finds() -> (
    None
):
    rng = np.random.default_rng(29)
    centers = _unit(rng, 50, 64)
    vectors = centers[rng.integers(0, 50, 3_000)] + 0.6 * _unit(rng, 3_000, 64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    exact, quantised = SearchIndex(64), SearchIndex(64)
    for index in (exact, quantised):
        index.add(vectors, [[] for _ in range(3_000)], ["global"] * 3_000)
    fitted = exact.fit_projection()
    exact.install(fitted, quantise=False)
    before = quantised.nbytes()
    projection = quantised.fit_projection()
    quantised.install(projection)
    saved = before + projection.nbytes() - quantised.nbytes()
    assert saved >= 0.7 * vectors.nbytes  # int8 and a scale a row: 68 bytes, not 256
    late = _unit(rng, 5, 64)  # added after: quantised as they come
    for index in (exact, quantised):
        index.add(late, [[] for _ in range(5)], ["global"] * 5)
    overlap = []
    for query in [*_unit(rng, 30, 64), *late]:
        want = exact.dense_top(query, None, 10)
        got = quantised.dense_top(query, None, 10)
        overlap.append(len({p for p, _ in want} & {p for p, _ in got}) / 10)
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=0.01)
        full = quantised.dense_scores(query, None, exact=True)
        assert full == pytest.approx(exact.dense_scores(query, None, exact=True), abs=0.01)
    assert sum(overlap) / len(overlap) >= 0.97
    positions = [3, 3_002, 17]
    assert quantised.similarities(positions, late[2]) == pytest.approx(
        exact.similarities(positions, late[2]), abs=0.01
    )
    assert quantised.pairwise(positions) == pytest.approx(exact.pairwise(positions), abs=0.01)


def test_reserving_room_keeps_the_documents_held_and_scores_as_an_index_that_grew() -> None:
    rng = np.random.default_rng(13)
    vectors = _unit(rng, 30, 8)
    grew, reserved = SearchIndex(8), SearchIndex(8)
    grew.add(vectors, [[] for _ in range(30)], ["global"] * 30)
    reserved.add(vectors[:5], [[] for _ in range(5)], ["global"] * 5)
    reserved.reserve(30)
    reserved.reserve(3)  # less than held: nothing to do
    reserved.add(vectors[5:], [[] for _ in range(25)], ["global"] * 25)
    query = _unit(rng, 1, 8)[0]
    scores = reserved.dense_scores(query, None)
    assert scores.dtype == np.float32
    assert np.array_equal(scores, grew.dense_scores(query, None))


def test_words_loaded_in_two_encoded_batches_find_the_documents_of_both() -> None:
    index = SearchIndex(4)
    vectors = np.eye(4, dtype=np.float32)
    index.add(vectors[:2], EncodedTerms(["tea", "milk"], [0, 1, 0], [2, 1]), ["global"] * 2)
    index.add(vectors[2:], EncodedTerms(["tea", "cake"], [1, 0], [1, 1]), ["global"] * 2)
    assert _found(index.sparse_scores(["tea"], None)) == [0, 1, 3]
    assert _found(index.sparse_scores(["milk"], None)) == [0]
    assert _found(index.sparse_scores(["cake"], None)) == [2]


def test_documents_without_words_load_in_bulk_and_are_found_by_their_vectors() -> None:
    assert EncodedTerms([], [], []).lists() == []
    terms = EncodedTerms([], [], [0, 0])
    assert terms.lists() == [[], []]
    index = SearchIndex(4)
    index.add(np.eye(4, dtype=np.float32)[:2], terms, ["global"] * 2)
    assert [p for p, _ in index.dense_top([0.0, 1.0, 0.0, 0.0], None, 1)] == [1]
    assert top_k(index.sparse_scores(["tea"], None), 5) == []


def test_an_index_ranked_by_projection_stays_exact_through_compaction_and_new_documents() -> None:
    rng = np.random.default_rng(17)
    index = SearchIndex(8)
    index.add(_unit(rng, 300, 8), [[] for _ in range(300)], ["global"] * 300)
    fitted = index.fit_projection()
    index.add(_unit(rng, 10, 8), [[] for _ in range(10)], ["global"] * 10)
    index.install(fitted)  # catches up with the 10 added during the fit
    assert fitted.size == index.size == 310
    for position in range(0, 310, 3):
        index.remove(position)
    index.compact()
    assert fitted.size == index.size == 206
    index.add(_unit(rng, 40, 8), [[] for _ in range(40)], ["global"] * 40)
    index.remove(7)
    assert fitted.size == index.size == 246
    mask = index.visible(None)
    for query in _unit(rng, 5, 8):
        exact = [p for p, _ in top_k(index.dense_scores(query, mask, exact=True), 10)]
        assert [p for p, _ in index.dense_top(query, mask, 10)] == exact
        assert [p for p, _ in top_k(index.dense_scores(query, mask), 10)] == exact


# Projected on the identity, a row's projected score is its exact dot product.
_ROWS = np.array([[0.1, 0.0], [0.9, 0.0], [0.5, 0.0], [0.7, 0.0], [0.3, 0.0]], dtype=np.float32)


def _projected() -> Projection:
    projection = Projection(np.eye(2, dtype=np.float32))
    projection.extend(_ROWS[:1])
    projection.extend(_ROWS[1:])
    return projection


@pytest.mark.parametrize(
    ("hidden", "count", "size", "expected"),
    [
        ([], 2, 5, [1, 3]),
        ([], 4, 5, [1, 2, 3, 4]),
        ([], 5, 5, [0, 1, 2, 3, 4]),
        ([], 9, 5, [0, 1, 2, 3, 4]),
        ([], 2, 3, [1, 2]),
        ([1], 2, 5, [2, 3]),
        ([1, 3], 5, 5, [0, 2, 4]),
        ([0, 1, 2, 3], 2, 5, [4]),
    ],
)
def test_projection_candidates_are_the_best_projected_rows_within_the_mask_and_size(
    hidden: list[int], count: int, size: int, expected: list[int]
) -> None:
    mask = np.isin(np.arange(size), hidden, invert=True) if hidden else None
    found = _projected().candidates(np.array([1.0, 0.0], dtype=np.float32), mask, count, size)
    assert sorted(found.tolist()) == expected


def test_a_compacted_projection_keeps_the_rows_marked_in_their_order() -> None:
    projection = _projected()
    projection.keep(np.array([True, False, True, True, False]))
    assert projection.size == 3
    query = np.array([1.0, 0.0], dtype=np.float32)
    assert projection.candidates(query, None, 1, 3).tolist() == [2]  # 0.7, once position 3


def test_projected_rows_added_one_at_a_time_rank_as_rows_added_at_once() -> None:
    rng = np.random.default_rng(19)
    rows = _unit(rng, 50, 3)
    basis = np.eye(3, dtype=np.float32)
    one_by_one, at_once = Projection(basis), Projection(basis)
    for row in rows:
        one_by_one.extend(row[None, :])
    at_once.extend(rows)
    assert one_by_one.size == at_once.size == 50
    query = _unit(rng, 1, 3)[0]
    best = sorted(np.argsort(-(rows @ query))[:7].tolist())
    for projection in (one_by_one, at_once):
        assert sorted(projection.candidates(query, None, 7, 50).tolist()) == best
    # Four bytes a number: extended once, it holds its rows and its basis, no more.
    assert at_once.nbytes() == rows.nbytes + basis.nbytes
    assert one_by_one.nbytes() >= at_once.nbytes()


def test_a_fitted_projection_spans_the_directions_the_vectors_lie_in() -> None:
    rng = np.random.default_rng(23)
    plane = np.linalg.qr(rng.standard_normal((6, 2)))[0]  # two orthonormal directions
    vectors = (rng.standard_normal((40, 2)) @ plane.T).astype(np.float32)
    basis = Projection.fit(vectors, dims=2).basis
    assert basis.shape == (6, 2)
    assert basis.dtype == np.float32
    np.testing.assert_allclose(basis.T @ basis, np.eye(2), atol=1e-5)
    np.testing.assert_allclose(vectors @ basis @ basis.T, vectors, atol=1e-4)
    # Three vectors have three directions at most, however many are asked for.
    assert Projection.fit(vectors[:3], dims=5).basis.shape == (6, 3)


def test_a_projection_fitted_on_more_vectors_than_it_samples_is_reproducible() -> None:
    vectors = _unit(np.random.default_rng(29), 20_001, 4)  # it fits on 20,000
    first, second = Projection.fit(vectors, dims=2), Projection.fit(vectors, dims=2)
    assert np.array_equal(first.basis, second.basis)


def test_equal_bulk_additions_merge_the_last_run_while_the_older_is_at_most_twice_it() -> None:
    postings = Postings()
    runs = []
    for batch in range(8):  # 300 documents of one word each: a run of 300 postings
        postings.add(batch * 300, np.arange(300, dtype=np.int64) % 7, [1] * 300)
        runs.append(postings.runs)
    assert runs == [1, 1, 1, 2, 1, 2, 2, 1]
    assert len(postings) == 2400
    assert _held(postings, 3) == {doc: 1 for doc in range(2400) if doc % 300 % 7 == 3}


def test_the_tail_becomes_a_run_once_past_its_limit() -> None:
    postings = Postings(tail_limit=4)
    runs = []
    for doc in range(6):
        postings.add(doc, [doc % 3], [1])
        runs.append(postings.runs)
    assert runs == [0, 0, 0, 0, 1, 1]
    assert _held(postings, 1) == {1: 1, 4: 1}


def test_the_tail_counts_from_empty_again_once_it_became_a_run() -> None:
    postings = Postings(tail_limit=4)
    postings.add(0, list(range(10, 30)), [20])  # one document of 20 words: past the limit
    runs = [postings.runs]
    for doc in range(1, 7):
        postings.add(doc, [doc % 3], [1])
        runs.append(postings.runs)
    assert runs == [1, 1, 1, 1, 1, 2, 2]  # a run of 20, then one of 5 (not merged)
    assert _held(postings, 1) == {1: 1, 4: 1}
    assert _held(postings, 29) == {0: 1}


@pytest.mark.parametrize(("words", "runs"), [(SMALL_ADDITION, 0), (SMALL_ADDITION + 1, 1)])
def test_an_addition_of_up_to_small_addition_words_goes_to_the_tail(words: int, runs: int) -> None:
    postings = Postings()
    postings.add(0, list(range(words)), [words])  # one document of distinct words
    assert postings.runs == runs
    assert len(postings) == words
    assert _held(postings, words - 1) == {0: 1}


def test_postings_renumbered_without_any_document_left_hold_nothing() -> None:
    empty = Postings()
    empty.renumber(np.zeros(0, dtype=np.int64))
    assert (len(empty), empty.runs) == (0, 0)
    postings = Postings()
    postings.add(0, [1, 2, 1], [2, 1])
    postings.renumber(np.array([-1, -1], dtype=np.int64))
    assert len(postings) == 0
    for term in (1, 2, 5):
        docs, counts = postings.of(term)
        assert (docs.dtype, counts.dtype) == (np.dtype(np.int64), np.dtype(np.float32))
        assert (len(docs), len(counts)) == (0, 0)


@pytest.mark.parametrize(
    ("ids", "lengths"),
    [
        ([7] * 200, [1] * 200),  # a word in 200 chat turns: the tail
        ([1] * 300, [1] * 300),  # a bulk load: a run
        ([10_000] + [1] * 300, [1] * 301),  # a run whose words have large ids
    ],
)
def test_the_postings_memory_estimate_covers_two_numbers_per_posting(
    ids: list[int], lengths: list[int]
) -> None:
    postings = Postings()
    postings.add(0, ids, lengths)
    assert postings.nbytes() >= 8 * len(postings) > 0


def _okapi(docs: list[list[str]], query: list[str]) -> list[float]:
    """BM25 by hand: -inf for a document no query term is in."""
    average = sum(map(len, docs)) / len(docs)
    scores = []
    for doc in docs:
        score = -math.inf
        for term in query:
            if term in doc:
                df = sum(1 for d in docs if term in d)
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                tf = doc.count(term)
                norm = BM25_K1 * (1 - BM25_B + BM25_B * len(doc) / average)
                score = max(score, 0.0) + idf * tf * (BM25_K1 + 1) / (tf + norm)
        scores.append(score)
    return scores


@pytest.mark.parametrize(
    "docs",
    [
        [["tea"], []],  # under one word a document on average
        [["tea", "tea"], ["tea"], ["green"]],
        [["word"] * 10 + ["tea"], ["tea"], ["tea", "green", "tea"]],
    ],
)
def test_bm25_matches_the_okapi_formula_for_documents_of_any_length(
    docs: list[list[str]],
) -> None:
    scores = _index(docs).sparse_scores(["tea", "green"], None)
    assert scores.dtype == np.float32
    assert scores.tolist() == pytest.approx(_okapi(docs, ["tea", "green"]), rel=1e-6)


def test_an_index_whose_documents_were_all_removed_finds_nothing() -> None:
    index = _index([["tea"], ["tea", "green"]])
    index.remove(0)
    index.remove(1)
    assert len(index) == 0
    for mask in (None, index.visible(None)):
        assert top_k(index.sparse_scores(["tea"], mask), 5) == []
    assert index.dense_top([1.0, 0.0, 0.0, 0.0], index.visible(None), 5) == []


def _projected_index(n: int, seed: int) -> tuple[SearchIndex, np.ndarray]:
    """An index of ``n`` random vectors in scopes app-a, app-b, app-a, ..., ranked by a
    projection (on all 8 dimensions: it picks every visible document while n <= 1000)."""
    vectors = _unit(np.random.default_rng(seed), n, 8)
    index = SearchIndex(8)
    index.add(vectors, [[] for _ in range(n)], ["app-a", "app-b"] * (n // 2))
    index.install(index.fit_projection(), quantise=False)  # exact scores
    return index, vectors


def test_dense_scores_are_the_cosines_and_minus_infinity_where_the_mask_hides() -> None:
    index, vectors = _projected_index(60, seed=31)
    mask = index.visible("app-a")
    assert mask is not None
    query = _unit(np.random.default_rng(37), 1, 8)[0]
    for exact in (False, True):
        scores = index.dense_scores(query, mask, exact=exact)
        assert scores.dtype == np.float32
        assert np.isneginf(scores[~mask]).all()
        np.testing.assert_allclose(scores[mask], (vectors @ query)[mask], rtol=1e-5)
    best = [p for p, _ in top_k(np.where(mask, vectors @ query, -np.inf), 5)]
    assert [p for p, _ in index.dense_top(query, mask, 5)] == best
    assert all(p % 2 == 0 for p in best)


@pytest.mark.parametrize("projected", [False, True])
def test_a_read_sees_only_the_positions_its_mask_covers_when_documents_come_after(
    projected: bool,
) -> None:
    index, _ = _projected_index(40, seed=41)
    if not projected:
        index = _index([["tea"] for _ in range(40)], scopes=["app-a", "app-b"] * 20, dim=8)
    mask = index.visible("app-a")  # taken, then another thread adds documents
    assert mask is not None
    index.add(np.eye(8, dtype=np.float32)[:5], [[] for _ in range(5)], ["app-a"] * 5)
    query = np.full(8, 8**-0.5, dtype=np.float32)
    for exact in (False, True):
        assert len(index.dense_scores(query, mask, exact=exact)) == 40
    found = [p for p, _ in index.dense_top(query, mask, 100)]
    assert sorted(found) == list(range(0, 40, 2))


def test_a_projection_scores_only_its_candidates_and_may_miss_the_true_best() -> None:
    # Most documents lie near the x axis, a few near y; the projection keeps x alone.
    angles = np.concatenate([np.linspace(0, 0.2, 1100), np.linspace(1.4, 1.57, 100)])
    vectors = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    index = SearchIndex(2)
    index.add(vectors, [[] for _ in angles], ["global"] * len(angles))
    index.install(Projection(np.array([[1.0], [0.0]], dtype=np.float32)), quantise=False)
    query = np.array([np.cos(1.5), np.sin(1.5)], dtype=np.float32)
    scores = index.dense_scores(query, None)
    assert np.flatnonzero(np.isfinite(scores)).tolist() == list(range(CANDIDATES))
    approx = index.dense_top(query, None, 3)
    assert approx == top_k(scores, 3)
    assert [p for p, _ in approx] == [999, 998, 997]  # the candidates nearest the query
    exact = top_k(index.dense_scores(query, None, exact=True), 1)
    assert exact[0][0] == 1100 + round((1.5 - 1.4) / (0.17 / 99))


def test_top_k_of_nothing_or_of_zero_is_empty() -> None:
    scores = np.array([0.5, 0.25], dtype=np.float32)
    assert top_k(scores, 0) == []
    assert top_k(scores, -1) == []
    assert top_k(np.zeros(0, dtype=np.float32), 3) == []


def test_a_growing_index_regrows_its_vector_matrix_rarely() -> None:
    index = SearchIndex(8)
    capacities = set()
    for _ in range(300):  # a turn at a time
        index.add(np.ones((2, 8), dtype=np.float32), [[], []], ["global", "global"])
        capacities.add((index.nbytes() - index.size * 9) // (8 * 4))
    # 2, 4, 8, 16, 32, 48, 64, then a quarter more each time up to 600 rows
    assert len(capacities) <= 20


def test_an_empty_index_holds_nothing_and_finds_nothing() -> None:
    index = SearchIndex(4)
    assert (len(index), index.size, index.nbytes()) == (0, 0, 0)
    assert index.visible(None) is None
    query = np.ones(4, dtype=np.float32) / 2
    dense = index.dense_scores(query, None)
    assert (dense.dtype, len(dense)) == (np.dtype(np.float32), 0)
    assert index.dense_top(query, None, 3) == []
    assert top_k(index.sparse_scores(["tea"], None), 3) == []
    assert Postings().nbytes() == 0


def test_renumbering_that_drops_nothing_keeps_the_postings_and_their_memory() -> None:
    postings = Postings()
    ids = np.arange(600, dtype=np.int64) % 11
    postings.add(0, ids, [3] * 200)  # a bulk load: one run
    before = {term: _held(postings, term) for term in range(11)}
    memory = postings.nbytes()
    postings.renumber(np.arange(200, dtype=np.int64))
    assert {term: _held(postings, term) for term in range(11)} == before
    assert postings.nbytes() == memory
    assert len(postings) == sum(len(docs) for docs in before.values())
    # Two 4-byte numbers a posting and an 8-byte offset a term, before and after.
    assert memory <= 8 * len(postings) + 8 * (11 + 1)


@pytest.mark.parametrize(
    ("documents", "tail_limit"),
    [
        ([40], TAIL_LIMIT),  # one bulk load alone
        ([40, 2, 3, 40, 1, 80], TAIL_LIMIT),  # bulk loads and chat turns
        ([1] * 30 + [45], 10),  # turns the tail makes runs of, then a bulk load
    ],
)
def test_postings_loaded_in_bulk_and_renumbered_hold_what_a_dictionary_would(
    documents: list[int], tail_limit: int
) -> None:
    rng = np.random.default_rng(len(documents))
    batches = [
        [rng.integers(0, 30, size=int(rng.integers(5, 16))).tolist() for _ in range(n)]
        for n in documents
    ]
    postings = Postings(tail_limit=tail_limit)
    first = 0
    for batch in batches:
        postings.add(first, [t for words in batch for t in words], [len(w) for w in batch])
        first += len(batch)
    model = _model_of(batches)
    assert {t: _held(postings, t) for t in range(31)} == {t: model.get(t, {}) for t in range(31)}
    kept = np.arange(first) % 3 != 1  # a document in three is gone
    moved = np.full(first, -1, dtype=np.int64)
    moved[kept] = np.arange(int(kept.sum()))
    postings.renumber(moved)
    expected = {
        t: {int(moved[d]): c for d, c in model.get(t, {}).items() if moved[d] >= 0}
        for t in range(31)
    }
    assert {t: _held(postings, t) for t in range(31)} == expected
    assert len(postings) == sum(map(len, expected.values()))


def test_a_projection_holds_its_basis_and_regrows_its_rows_rarely() -> None:
    basis = np.eye(4, dtype=np.float32)[:, :2]
    projection = Projection(basis)
    assert projection.nbytes() == basis.nbytes  # no rows before the first position
    rows = _unit(np.random.default_rng(43), 300, 4)
    capacities = set()
    for row in rows:  # a position at a time, as chat turns come
        projection.extend(row[None, :])
        capacity = (projection.nbytes() - basis.nbytes) // (2 * 4)
        assert projection.size <= capacity <= max(16, projection.size * 5 // 4 + 16)
        capacities.add(capacity)
    assert len(capacities) <= 10  # 16, 36, 61, 92, 131, 179, 239, 314


def test_a_projection_fitted_on_float64_vectors_keeps_a_float32_basis() -> None:
    vectors = _unit(np.random.default_rng(47), 30, 6).astype(np.float64)
    # float64 on purpose, against the float32 signature: a caller's float64 input must
    # still give the float32 basis the index multiplies with.
    basis = Projection.fit(vectors, dims=3).basis  # type: ignore[arg-type]
    assert (basis.shape, basis.dtype) == ((6, 3), np.dtype(np.float32))


def test_the_vector_matrix_doubles_while_small_then_grows_16_rows_then_a_quarter() -> None:
    index = SearchIndex(8)
    capacities = [0]
    for _ in range(150):  # a document at a time
        index.add(np.ones((1, 8), dtype=np.float32), [[]], ["global"])
        capacity = (index.nbytes() - index.size * 9) // (8 * 4)
        if capacity != capacities[-1]:
            capacities.append(capacity)
    assert capacities == [0, 1, 2, 4, 8, 16, 32, 48, 64, 80, 100, 125, 156]


def _learned(rng: np.random.Generator, n: int) -> list[SparseVector]:
    """Random sparse vectors over a SPLADE-wide vocabulary, 0 to 40 terms each."""
    out = []
    for _ in range(n):
        ids = np.unique(rng.integers(999, 30_522, size=int(rng.integers(0, 40))))
        out.append(
            SparseVector(ids.astype(np.int32), rng.uniform(0.01, 3.0, len(ids)).astype(np.float32))
        )
    return out


def _dots(vectors: list[SparseVector], query: SparseVector) -> np.ndarray:
    return np.array([v.dot(query) for v in vectors])


def test_learned_scores_are_the_dot_products_however_the_vectors_were_added() -> None:
    rng = np.random.default_rng(3)
    vectors = _learned(rng, 900)
    index = SearchIndex(4)
    for start, size in ((0, 3), (3, 500), (503, 1), (504, 396)):  # tail and runs
        part = vectors[start : start + size]
        index.add(
            np.eye(4, dtype=np.float32)[[0] * size], [[] for _ in part], ["global"] * size, part
        )
    for query in _learned(rng, 20):
        expected = _dots(vectors, query)
        scores = index.learned_scores(query, None)
        shared = expected > 0
        # Weights are held to a thousandth.
        assert np.allclose(scores[shared], expected[shared], atol=0.05 * max(len(query), 1))
        assert np.all(np.isneginf(scores[~shared]))


def test_documents_without_learned_vectors_are_not_found_by_them_until_given() -> None:
    index = SearchIndex(4)
    query = SparseVector(
        np.array([1000, 1001], dtype=np.int32), np.array([1.0, 2.0], dtype=np.float32)
    )
    index.add(np.eye(4, dtype=np.float32)[:2], [["a"], ["b"]], ["global", "global"])
    assert np.all(np.isneginf(index.learned_scores(query, None)))
    assert index.without_learned() == [0, 1]
    index.add_learned([1], [query])
    assert index.without_learned() == [0]
    assert index.learned_scores(query, None)[1] == pytest.approx(5.0, abs=0.01)
    # Given twice, it counts once.
    index.add_learned([1], [query])
    assert index.learned_scores(query, None)[1] == pytest.approx(5.0, abs=0.01)


def test_learned_vectors_survive_removal_compaction_and_a_saved_state() -> None:
    rng = np.random.default_rng(5)
    vectors = _learned(rng, 300)
    index = SearchIndex(4)
    index.add(
        np.eye(4, dtype=np.float32)[[0] * 300], [[] for _ in vectors], ["global"] * 300, vectors
    )
    for position in range(0, 300, 3):
        index.remove(position)
    query = _learned(rng, 1)[0]
    before = index.learned_scores(query, None)
    assert np.all(np.isneginf(before[::3]))
    moved = index.compact()
    after = index.learned_scores(query, None)
    kept = np.flatnonzero(moved >= 0)
    assert np.array_equal(after[moved[kept]], before[kept])
    restored = SearchIndex.restored(4, index.state())
    assert np.array_equal(restored.learned_scores(query, None), after)
    assert restored.without_learned() == []
    # A state saved before learned vectors were held: none, and every document lacks one.
    old = {k: v for k, v in index.state().items() if not k.startswith("learned")}
    assert SearchIndex.restored(4, old).without_learned() == list(range(200))
