"""The in-memory hybrid index: exact cosine, BM25 by hand, scopes, removal and compaction;
its postings, however they were added, hold what a plain dictionary would."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.postings import SMALL_ADDITION, Postings
from memory.projection import PROJECT_FROM
from memory.search_index import BM25_B, BM25_K1, EncodedTerms, SearchIndex, top_k


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


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
    with pytest.raises(ValueError, match="differ in length"):
        SearchIndex(2).add(np.zeros((2, 2)), [["a"]], ["global", "global"])


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
    for term in range(32):
        assert _held(postings, term) == model.get(term, {})
    assert len(postings) == sum(len(docs) for docs in model.values())

    gone = set(data.draw(st.lists(st.integers(0, max(first - 1, 0)), max_size=10)))
    moved = np.full(first, -1, dtype=np.int64)
    kept = [doc for doc in range(first) if doc not in gone]
    moved[kept] = np.arange(len(kept))
    postings.renumber(moved)
    for term in range(32):
        expected = {int(moved[d]): c for d, c in model.get(term, {}).items() if d not in gone}
        assert _held(postings, term) == expected
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
    with pytest.raises(ValueError, match="do not add up"):
        EncodedTerms(["a"], [0, 0], [1])
