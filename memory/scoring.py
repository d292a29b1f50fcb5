"""Retrieval scores: reciprocal rank fusion, seed 001's weighted score, seed 002's composite.

All pure functions of numbers and timestamps; the weights are parameters with
the seeds' defaults so settings can change them and tests can reproduce them.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from memory.tokens import is_cjk
from schemas.settings import MIN_SIMILARITY

__all__ = [
    "RRF_K",
    "CompositeWeights",
    "RelevanceWeights",
    "answer_relevance",
    "composite_score",
    "frequency_score",
    "kept_agreement",
    "keyword_coverage",
    "normalized_rrf",
    "recency_score",
    "relevance_score",
    "rrf_score",
    "score_texts",
]

RRF_K = 60


def rrf_score(
    semantic_rank: int | None, keyword_rank: int | None, *, limit: int, k: int = RRF_K
) -> float:
    """Seed 002: ``1/(k + semantic_rank) + 1/(k + keyword_rank)``, ranks from 1; a result found
    by one side only takes ``rank = limit + 1`` on the other."""
    semantic = semantic_rank if semantic_rank is not None else limit + 1
    keyword = keyword_rank if keyword_rank is not None else limit + 1
    return 1.0 / (k + semantic) + 1.0 / (k + keyword)


def normalized_rrf(score: float, *, k: int = RRF_K) -> float:
    """RRF scaled so first place on both sides is 1.0 (capped at 1.0), seed 002's relevance."""
    return min(1.0, score / (2.0 / (k + 1)))


def recency_score(last: datetime | None, now: datetime, *, half_life_days: float = 7.0) -> float:
    """``exp(-ln 2 / half_life * days)`` clamped to [0, 1]; never referenced → 0.0 (seed 002).
    Seed 001 uses the same 7-day half-life on ``last_accessed``."""
    if last is None:
        return 0.0
    days = max(0.0, (now - last).total_seconds() / 86400.0)
    return min(1.0, max(0.0, math.exp(-math.log(2) / half_life_days * days)))


def frequency_score(access_count: int, max_count: int) -> float:
    """Seed 001: access count log-normalised against the most-accessed candidate, in [0, 1]."""
    if max_count <= 0 or access_count <= 0:
        return 0.0
    return min(1.0, math.log1p(access_count) / math.log1p(max_count))


@dataclass(frozen=True, slots=True)
class RelevanceWeights:
    """Seed 001's weights and its current-topic boost (the preference boost of 1.5 is the
    ``preference`` category's ``retrieval_boost`` in the taxonomy)."""

    keyword: float = 0.4
    category: float = 0.2
    recency: float = 0.15
    frequency: float = 0.1
    confidence: float = 0.15
    topic_boost: float = 1.3


def relevance_score(
    *,
    keyword: float,
    category_boost: float,
    recency: float,
    frequency: float,
    confidence: float,
    on_topic: bool = False,
    weights: RelevanceWeights = RelevanceWeights(),
) -> float:
    """Seed 001: ``keyword*0.4 + category_boost*0.2 + recency*0.15 + frequency*0.1 +
    confidence*0.15``, times 1.3 for a memory related to the session's current topic.

    ``category_boost`` is 1.0, or the category's boost (preference: 1.5) when the
    message expresses a preference.
    """
    score = (
        keyword * weights.keyword
        + category_boost * weights.category
        + recency * weights.recency
        + frequency * weights.frequency
        + confidence * weights.confidence
    )
    return score * weights.topic_boost if on_topic else score


@dataclass(frozen=True, slots=True)
class CompositeWeights:
    """Seed 002's recall weights."""

    relevance: float = 0.4
    importance: float = 0.3
    recency: float = 0.2
    confidence: float = 0.1


def composite_score(
    *,
    relevance: float,
    importance: float,
    recency: float,
    effective_confidence: float,
    weights: CompositeWeights = CompositeWeights(),
) -> float:
    """Seed 002: ``0.4*relevance + 0.3*(importance/10) + 0.2*recency + 0.1*effective_confidence``,
    relevance capped at 1.0."""
    return (
        weights.relevance * min(1.0, relevance)
        + weights.importance * (importance / 10.0)
        + weights.recency * recency
        + weights.confidence * effective_confidence
    )


_WORDS = re.compile(r"[^\W_]+")


def _matches(keyword: str, words: set[str], ordered: list[str], text: str) -> bool:
    if any(is_cjk(c) for c in keyword):
        return keyword in text
    if len(keyword) <= 4:
        return bool({keyword, keyword + "s", keyword + "es"} & words)
    stem = keyword[: max(4, len(keyword) - 2)]  # "allergic" finds "allergies"
    # The words in order: those starting with the stem begin where it would go.
    at = bisect.bisect_left(ordered, stem)
    return at < len(ordered) and ordered[at].startswith(stem)


def keyword_coverage(keywords: Sequence[str], text: str) -> float:
    """The share of a query's ``keywords`` (``memory.keywords.extract_keywords``) that
    ``text`` contains, endings aside; 0.0 for a query without keywords."""
    if not keywords:
        return 0.0
    folded = text.casefold()
    words = set(_WORDS.findall(folded))
    ordered = sorted(words)
    found = sum(1 for keyword in keywords if _matches(keyword.casefold(), words, ordered, folded))
    return found / len(keywords)


def answer_relevance(similarity: float | None, coverage: float) -> float:
    """How well a fact or a message answers a query, on one scale for both (0..1): the
    mean of its cosine similarity to the query (below 0 counts as 0) and its keyword
    coverage. Unlike a rank-based score it is low for a miss, whatever else was found."""
    semantic = min(1.0, max(0.0, similarity or 0.0))
    return 0.5 * semantic + 0.5 * min(1.0, max(0.0, coverage))


def score_texts(
    items: Sequence[tuple[str, Sequence[float]]],
    query: Sequence[float] | None,
    keywords: Sequence[str],
    mode: str,
    *,
    min_similarity: float = MIN_SIMILARITY,
) -> list[tuple[int, float, float | None, float]]:
    """Rank texts held in memory (rules, episodes) for a query: (index, score,
    similarity, relevance), best first, misses left out. ``similarity`` is the cosine
    of unit vectors (None without a query vector); ``relevance`` is ``answer_relevance``.
    ``semantic`` scores by similarity, ``keyword`` by keyword coverage (texts without a
    keyword are misses), ``hybrid`` by relevance (texts that share neither a keyword nor
    meaning, a similarity of ``min_similarity``, are misses)."""
    ranked: list[tuple[int, float, float | None, float]] = []
    for index, (text, vector) in enumerate(items):
        similarity = (
            float(sum(a * b for a, b in zip(vector, query, strict=True)))
            if query is not None
            else None
        )
        coverage = keyword_coverage(keywords, text)
        relevance = answer_relevance(similarity, coverage)
        if mode == "keyword":
            if coverage == 0.0:
                continue
            score = coverage
        elif mode == "semantic":
            score = similarity or 0.0
        else:
            if coverage == 0.0 and (similarity or 0.0) < min_similarity:
                continue
            score = relevance
        ranked.append((index, score, similarity, relevance))
    ranked.sort(key=lambda r: (-r[1], r[0]))
    return ranked


def kept_agreement(
    scores: Mapping[int, float],
    own: Mapping[int, float],
    similarity: Mapping[int, float],
    text_rank: Mapping[int, int],
    *,
    every: bool = False,
    every_text_hit: bool = True,
) -> dict[int, float]:
    """``scores`` lowered where they would put a memory above one that both sides of a
    search rank above it: a higher cosine ``similarity`` and found by text where it was
    not, or ranked better there (``text_rank``, from 1). Such a memory scores just below
    the lowest of those. ``own``: each memory's reciprocal-rank fusion of the same two
    orders, which ranks those first; only the memories whose score rose above it (lifted
    by a neighbour) can need lowering, unless ``every`` (scores of their own, such as a
    fact's, which weigh more than the two orders). A ``similarity`` that is NaN (not
    known) compares with none; so does the text rank of a memory missing from a
    ``text_rank`` that does not hold ``every_text_hit`` (a list cut at its depth: a
    memory below the cut may share words with the query as much as the last one listed,
    and no mode ranks it above or below that one)."""
    order = sorted(scores, key=lambda p: -own.get(p, 0.0))  # any that beats p comes first
    kept = np.array([scores[p] for p in order], dtype=np.float64)
    owns = np.array([own.get(p, 0.0) for p in order], dtype=np.float64)
    rose = np.arange(len(order)) if every else np.flatnonzero(kept > owns)
    if not rose.size:
        return dict(scores)
    near = np.array([similarity[p] for p in order], dtype=np.float64)
    missing = np.inf if every_text_hit else np.nan
    ranks = np.array([text_rank.get(p, missing) for p in order], dtype=np.float64)
    # above[r, j]: the message at ``order[j]`` beats the r-th one that rose on both sides.
    above = (near[None, :] > near[rose, None]) & (ranks[None, :] < ranks[rose, None])
    # A rise below every such message's own score (never more than its final one) is fine.
    least = np.where(above, owns[None, :], np.inf).min(axis=1) if not every else None
    for row, i in enumerate(rose):
        if (least is None or kept[i] >= least[row]) and above[row].any():
            kept[i] = min(kept[i], float(np.nextafter(kept[above[row]].min(), -np.inf)))
    return {p: float(score) for p, score in zip(order, kept, strict=True)}
