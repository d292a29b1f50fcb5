"""Seed 001's relevance score, seed 002's RRF and composite score, reproduced with exact numbers."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.scoring import (
    answer_relevance,
    composite_score,
    frequency_score,
    kept_agreement,
    keyword_coverage,
    normalized_rrf,
    recency_score,
    relevance_score,
    rrf_score,
    score_texts,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def test_rrf_sums_reciprocal_ranks_with_k_60() -> None:
    assert rrf_score(1, 3, limit=10) == pytest.approx(1 / 61 + 1 / 63)


def test_rrf_uses_limit_plus_one_for_a_side_that_missed() -> None:
    assert rrf_score(2, None, limit=10) == pytest.approx(1 / 62 + 1 / 71)
    assert rrf_score(None, 1, limit=20) == pytest.approx(1 / 81 + 1 / 61)


def test_normalized_rrf_is_one_for_first_place_on_both_sides_and_capped() -> None:
    assert normalized_rrf(rrf_score(1, 1, limit=5)) == pytest.approx(1.0)
    assert normalized_rrf(5.0) == 1.0


@pytest.mark.parametrize(
    ("days", "expected"),
    [(0, 1.0), (7, 0.5), (14, 0.25), (3.5, math.exp(-math.log(2) / 7 * 3.5))],
    ids=["now", "one-half-life", "two-half-lives", "half-a-week"],
)
def test_recency_halves_every_seven_days(days: float, expected: float) -> None:
    assert recency_score(NOW - timedelta(days=days), NOW) == pytest.approx(expected)


def test_recency_of_never_referenced_is_zero_and_future_is_clamped() -> None:
    assert recency_score(None, NOW) == 0.0
    assert recency_score(NOW + timedelta(days=1), NOW) == 1.0


def test_frequency_is_log_normalised_against_the_most_accessed() -> None:
    assert frequency_score(0, 10) == 0.0
    assert frequency_score(10, 10) == pytest.approx(1.0)
    assert frequency_score(3, 15) == pytest.approx(math.log(4) / math.log(16))
    assert frequency_score(3, 0) == 0.0
    assert frequency_score(1, 1) == 1.0  # the one access of the only accessed candidate
    assert frequency_score(1, 10) == pytest.approx(math.log(2) / math.log(11))
    assert frequency_score(20, 10) == 1.0  # counted since the maximum was taken: capped


def test_seed_001_relevance_formula() -> None:
    score = relevance_score(
        keyword=0.8, category_boost=1.0, recency=0.5, frequency=0.25, confidence=0.9
    )
    assert score == pytest.approx(0.8 * 0.4 + 1.0 * 0.2 + 0.5 * 0.15 + 0.25 * 0.1 + 0.9 * 0.15)


def test_seed_001_preference_boost_and_topic_boost() -> None:
    plain = relevance_score(keyword=0.5, category_boost=1.0, recency=0, frequency=0, confidence=1)
    preferred = relevance_score(
        keyword=0.5, category_boost=1.5, recency=0, frequency=0, confidence=1
    )
    on_topic = relevance_score(
        keyword=0.5, category_boost=1.0, recency=0, frequency=0, confidence=1, on_topic=True
    )
    assert preferred - plain == pytest.approx(0.5 * 0.2)
    assert on_topic == pytest.approx(plain * 1.3)


def test_seed_002_composite_formula() -> None:
    score = composite_score(relevance=0.7, importance=5.0, recency=0.5, effective_confidence=0.8)
    assert score == pytest.approx(0.4 * 0.7 + 0.3 * 0.5 + 0.2 * 0.5 + 0.1 * 0.8)


def test_seed_002_composite_caps_relevance_at_one() -> None:
    capped = composite_score(relevance=3.0, importance=10.0, recency=1.0, effective_confidence=1.0)
    assert capped == pytest.approx(1.0)


_WORD = st.text(alphabet="abcdeéß", min_size=1, max_size=9)


@given(st.lists(_WORD, max_size=5), st.lists(_WORD, max_size=30))
def test_keyword_coverage_finds_a_long_keyword_by_its_stem_at_the_start_of_any_word(
    keywords: list[str], words: list[str]
) -> None:
    text = " ".join(words)
    folded = [w.casefold() for w in re.findall(r"[^\W_]+", text.casefold())]

    def found(keyword: str) -> bool:
        keyword = keyword.casefold()
        if len(keyword) <= 4:
            return bool({keyword, keyword + "s", keyword + "es"} & set(folded))
        return any(w.startswith(keyword[: max(4, len(keyword) - 2)]) for w in folded)

    expected = sum(map(found, keywords)) / len(keywords) if keywords else 0.0
    assert keyword_coverage(keywords, text) == expected


@pytest.mark.parametrize(
    ("keyword", "text", "found"),
    [
        ("cat", "two cats and a dog", True),
        ("box", "the boxes", True),
        ("cat", "a category", False),
        ("tree", "the trees", True),
        ("tree", "a treehouse", False),  # four letters: the whole word, plurals aside
        ("happy", "such happiness", True),  # five: the first four letters start a word
        ("allergic", "her allergies", True),
        ("allergic", "an allergen", True),  # a stem of all but the last two letters
        ("allergic", "in allerton", False),
        ("咖啡", "我喜欢喝咖啡", True),  # Chinese: anywhere in the text
        ("咖啡", "我喜欢喝茶", False),
    ],
)
def test_keyword_coverage_takes_short_words_whole_and_long_ones_by_their_stem(
    keyword: str, text: str, found: bool
) -> None:
    assert keyword_coverage([keyword], text) == (1.0 if found else 0.0)


@pytest.mark.parametrize(
    ("similarity", "coverage", "expected"),
    [
        (None, 0.0, 0.0),
        (None, 0.5, 0.25),
        (1.0, 1.0, 1.0),
        (0.6, 0.2, 0.4),
        (-0.3, 0.5, 0.25),  # a negative cosine counts as 0
        (1.4, 1.7, 1.0),  # both capped at 1
        (0.8, -0.1, 0.4),
    ],
)
def test_answer_relevance_is_the_mean_of_similarity_and_coverage_each_in_zero_to_one(
    similarity: float | None, coverage: float, expected: float
) -> None:
    assert answer_relevance(similarity, coverage) == pytest.approx(expected)


def test_texts_in_memory_rank_by_each_modes_measure_and_keyword_search_drops_misses() -> None:
    items = [("green tea every morning", [1.0, 0.0]), ("coffee at noon", [0.6, 0.8])]
    query = [0.6, 0.8]
    semantic = score_texts(items, query, ["tea"], "semantic")
    assert [(i, round(s, 6)) for i, s, _, _ in semantic] == [(1, 1.0), (0, 0.6)]
    hybrid = score_texts(items, query, ["tea"], "hybrid")
    # tea: 0.5 * 0.6 + 0.5 * 1.0 = 0.8 for the first; 0.5 * 1.0 + 0 = 0.5 for the second.
    assert [(i, round(s, 6), round(r, 6)) for i, s, _, r in hybrid] == [
        (0, 0.8, 0.8),
        (1, 0.5, 0.5),
    ]
    assert [i for i, *_ in score_texts(items, None, ["tea"], "keyword")] == [0]
    assert score_texts(items, None, ["tea"], "keyword")[0][2] is None
    assert score_texts([], query, [], "hybrid") == []


def test_a_lift_never_carries_a_message_above_one_both_sides_rank_above_it() -> None:
    # 0 beats 2 on both sides (cosine and text rank); 1 beats 2 by cosine only. 2 was
    # lifted (by a neighbour) above both: it may pass 1, not 0. 3 was lifted too, but
    # nothing beats it on both sides: it keeps its lift.
    own = {0: 0.030, 1: 0.025, 2: 0.020, 3: 0.010}
    lifted = {0: 0.030, 1: 0.025, 2: 0.040, 3: 0.050}
    similarity = {0: 0.6, 1: 0.7, 2: 0.3, 3: 0.9}
    text_rank = {0: 1, 2: 2}
    kept = kept_agreement(lifted, own, similarity, text_rank)
    assert kept[0] == 0.030
    assert kept[1] == 0.025
    assert kept[1] < kept[2] < kept[0]
    assert kept[3] == 0.050
    # Not lifted: as it was.
    assert kept_agreement(own, own, similarity, text_rank) == own


def test_agreement_holds_along_a_chain_of_lifted_messages() -> None:
    # 0 beats 1 beats 2 on both sides; 1 and 2 were lifted above 0.
    own = {0: 0.03, 1: 0.02, 2: 0.01}
    lifted = {0: 0.03, 1: 0.05, 2: 0.06}
    kept = kept_agreement(lifted, own, {0: 0.9, 1: 0.8, 2: 0.7}, {0: 1, 1: 2, 2: 3})
    assert kept[0] > kept[1] > kept[2]


def test_a_message_below_a_cut_text_list_is_not_held_under_the_last_one_listed() -> None:
    # The text list was cut at its depth: 0 is listed last, 1 is not listed. 0 has the
    # higher cosine, 1 was lifted above it by a neighbour. Below the cut, 1 may share as
    # many words as 0: no mode ranks 0 above it, so 1 keeps its lift.
    own = {0: 0.020, 1: 0.018}
    lifted = {0: 0.020, 1: 0.030}
    similarity = {0: 0.52, 1: 0.47}
    cut = kept_agreement(lifted, own, similarity, {0: 60}, every_text_hit=False)
    assert cut == lifted
    # When the list holds every message that shares a word, 1 shares none: held under 0.
    whole = kept_agreement(lifted, own, similarity, {0: 60})
    assert whole[1] < whole[0] == 0.020
