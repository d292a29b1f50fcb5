"""Seed 001's retrieval algorithm end to end over real LanceDB: keyword scores from BM25 or
the keyword fallback, preference recall, the current topic, and an empty result."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import lancedb
import msgspec
import pytest

from actors.context import ContextBuilder, chat_context
from actors.keeper import FactKeeper
from actors.ports import FactHit
from actors.writer import ArchiveWriter
from memory.facts import Stored
from memory.hashing import HashEmbedder
from memory.scoring import recency_score, relevance_score, rrf_score
from schemas.records import Fact
from schemas.settings import Settings
from server.adapters.lance_store import LanceStore
from server.adapters.onnx_embedder import EmbedderUnavailable
from testing.records import DAY, NOW, make_fact
from tests.stored_rows import message, put

pytestmark = pytest.mark.anyio

_embedder = HashEmbedder()


class _At:
    """A clock that stays at the facts' NOW."""

    def now(self) -> datetime:
        return NOW


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[LanceStore]:
    store = LanceStore(tmp_path / "db", embedder=_embedder)
    await store.open()
    yield store
    await store.aclose()


@pytest.fixture
async def builder(store: LanceStore) -> AsyncIterator[ContextBuilder]:
    settings, clock = Settings(), _At()
    writer = ArchiveWriter(store, _embedder)
    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        keeper = FactKeeper(store, _embedder, writer, settings, clock)
        yield ContextBuilder(store, _embedder, keeper, settings, clock)
        tg.cancel_scope.cancel()


async def _add(store: LanceStore, *facts: Fact) -> None:
    await store.facts.add_facts([Stored(f, _embedder.embed_one(f.content)) for f in facts])


def _fact(n: int, content: str, category: str = "knowledge", **fields: Any) -> Fact:
    return make_fact(f"fact_{n:08x}", content=content, category=category, **fields)


async def test_bm25_is_the_keyword_score_best_hit_one_and_prefixes_match(
    store: LanceStore,
) -> None:
    await _add(
        store,
        _fact(1, "User codes in Python and Python is their favourite"),
        _fact(2, "User once tried Python"),
        _fact(3, "User grows tomatoes"),
    )
    hits = await store.facts.search_facts(
        "u1", "Python", _embedder.embed_one("Python"), k=5, scope=None
    )
    keyword = {h.stored.fact.id: h.keyword_score for h in hits}
    assert keyword["fact_00000001"] == 1.0
    assert 0.0 < keyword["fact_00000002"] < 1.0
    assert keyword["fact_00000003"] == 0.0
    prefix = await store.facts.search_facts("u1", "Pyth*", [0.0] * 64, k=5, scope=None)
    assert sorted(h.stored.fact.id for h in prefix if h.text_rank) == [
        "fact_00000001",
        "fact_00000002",
    ]


async def test_without_full_text_analysis_the_keyword_score_is_the_share_of_keywords_matched(
    store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _add(store, _fact(1, "User drinks green tea every morning"), _fact(2, "User owns a bike"))

    async def broken(self: Any, text: str, **_: Any) -> list[Any]:
        raise RuntimeError("full text search index is corrupt")

    def broken_here(text: str, **_: Any) -> list[Any]:
        raise RuntimeError("the analyzer is broken")

    monkeypatch.setattr(lancedb.table.AsyncTable, "tokenize", broken)
    # The store checked at open that queries can be analyzed on the spot: break that too.
    monkeypatch.setattr(lancedb, "tokenize", broken_here)
    hits = await store.facts.search_facts("u1", "tea coffee", [0.0] * 64, k=5, scope=None)
    keyword = {h.stored.fact.id: h.keyword_score for h in hits}
    assert keyword == {"fact_00000001": 0.5, "fact_00000002": 0.0}


async def test_a_preference_message_recalls_every_preference_fact_as_a_candidate(
    store: LanceStore,
) -> None:
    await _add(
        store,
        *(_fact(n, f"User visited city number {n}") for n in range(1, 6)),
        _fact(9, "User loves spicy food", "preference"),
    )
    vector = _embedder.embed_one("city number")
    plain = await store.facts.search_facts("u1", "city number", vector, k=2, scope=None)
    asked = await store.facts.search_facts(
        "u1", "city number", vector, k=2, scope=None, categories=["preference"]
    )
    assert "fact_00000009" not in {h.stored.fact.id for h in plain}
    found = {h.stored.fact.id: h for h in asked}
    assert found["fact_00000009"].dense_rank is None
    assert found["fact_00000009"].text_rank is None


async def test_a_preference_message_boosts_preference_facts_by_seed_001s_category_boost(
    builder: ContextBuilder,
) -> None:
    liked = _fact(1, "User likes long walks", "preference")
    known = _fact(2, "User likes long walks", "knowledge")
    hits = [FactHit(Stored(f, [0.0] * 64), 1, 1, 0.5) for f in (liked, known)]

    def scores(query: str) -> dict[str, float]:
        found = builder.score(hits, query=query, topic=None, limit=50)
        return {s.fact.id: s.score for s in found}

    preferring = scores("我喜欢散步")  # expresses a preference
    neutral = scores("how far is the park")
    # seed 001: category_boost 1.5 instead of 1.0, weight 0.2, half of the final mean
    assert preferring["fact_00000001"] - preferring["fact_00000002"] == pytest.approx(
        0.5 * 0.2 * (1.5 - 1.0)
    )
    assert neutral["fact_00000001"] == pytest.approx(neutral["fact_00000002"])
    ranked = builder.score(hits, query="我喜欢散步", topic=None, limit=50)
    assert [s.fact.id for s in ranked] == ["fact_00000001", "fact_00000002"]


async def test_facts_on_the_current_topic_get_seed_001s_topic_boost(
    builder: ContextBuilder,
) -> None:
    on = _fact(1, "User bakes sourdough bread")
    off = _fact(2, "User bakes sourdough cakes")
    hits = [FactHit(Stored(f, [0.0] * 64), 1, 1, 0.25) for f in (on, off)]
    ranked = builder.score(hits, query="what should I make", topic="bread", limit=50)
    scores = {s.fact.id: s.score for s in ranked}
    fact = on  # identical apart from the topic word
    seed001 = relevance_score(
        keyword=0.25, category_boost=1.0, recency=_recency(fact), frequency=0.0, confidence=0.7
    )
    assert scores["fact_00000001"] - scores["fact_00000002"] == pytest.approx(
        0.5 * seed001 * (1.3 - 1.0)
    )
    assert [s.fact.id for s in ranked] == ["fact_00000001", "fact_00000002"]


def _recency(fact: Fact) -> float:
    return recency_score(fact.last_accessed or fact.last_seen, NOW)


async def test_the_current_topic_joins_the_query(
    builder: ContextBuilder, store: LanceStore
) -> None:
    await _add(store, _fact(1, "User plays chess on Sundays"), _fact(2, "User owns a red car"))
    recalled = await builder.recall_facts("u1", "any plans?", scope=None, limit=1, topic="chess")
    assert [s.fact.id for s in recalled] == ["fact_00000001"]


async def test_no_memories_give_an_empty_recall_and_an_empty_block(
    builder: ContextBuilder,
) -> None:
    assert await builder.recall_facts("nobody", "what do I like?", scope=None, limit=5) == []
    block = await builder.build(
        "nobody", "what do I like?", format="about-user", budget=300, scope=None
    )
    assert (block.text, block.tokens, block.memory_ids) == ("", 0, [])
    conversation = await builder.build(
        "nobody", "what do I like?", format="conversation", budget=300, scope=None
    )
    assert conversation.memory_ids == []


class _CountingEmbedder(HashEmbedder):
    """Counts embed calls; fails them all once ``broken`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.broken = False

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.broken:
            raise EmbedderUnavailable("model file damaged (fake)")
        return await super().embed(texts)


async def test_a_chat_prompt_embeds_its_query_once_for_facts_and_conversation(
    store: LanceStore,
) -> None:
    embedder = _CountingEmbedder()
    settings, clock = Settings(), _At()
    await _add(store, _fact(1, "User plays chess"))
    await put(store, message(1, "we talked about chess openings"))
    writer = ArchiveWriter(store, embedder)
    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        keeper = FactKeeper(store, embedder, writer, settings, clock)
        builder = ContextBuilder(store, embedder, keeper, settings, clock)
        found = await chat_context(
            builder, "u1", "chess?", scope=None, topic=None, history=[], system_tokens=10
        )
        assert embedder.calls == 1
        assert "User plays chess" in found.memory_text
        assert "chess openings" in found.memory_text
        embedder.broken = True
        with pytest.raises(EmbedderUnavailable):  # a MnemoError, not an ExceptionGroup
            await store.search_messages("u1", "chess", builder.query_vector("chess"), k=3)
        degraded = await chat_context(
            builder, "u1", "chess?", scope=None, topic=None, history=[], system_tokens=10
        )
        assert degraded.memory_text == ""  # memory helps a reply, never blocks it
        tg.cancel_scope.cancel()


# -- seed 002's composite score in recall ----------------------------------------------


def _scores(builder: ContextBuilder, hits: Sequence[FactHit]) -> dict[str, float]:
    found = builder.score(hits, query="what do I do on weekends", topic=None, limit=50)
    return {s.fact.id: s.score for s in found}


async def test_recall_scores_seed_002s_importance_over_ten_and_normalized_rrf_into_the_mean(
    builder: ContextBuilder,
) -> None:
    # 0.4 x relevance + 0.3 x importance / 10 + 0.2 x recency + 0.1 x effective confidence,
    # relevance the RRF of both ranks over the best possible (capped at 1.0); the final
    # score is the mean of seed 001's and this one.
    plain = _fact(1, "User hikes on weekends")
    weighty = msgspec.structs.replace(_fact(2, "User hikes on weekends"), importance=8.0)
    hits = [FactHit(Stored(f, [0.0] * 64), 1, 1, 0.5) for f in (plain, weighty)]
    scores = _scores(builder, hits)
    assert plain.importance == 5.0
    assert scores["fact_00000002"] - scores["fact_00000001"] == pytest.approx(
        0.5 * 0.3 * (8.0 - 5.0) / 10
    )
    first = FactHit(Stored(plain, [0.0] * 64), 1, 1, 0.5)  # first on both sides: 1.0
    unranked = FactHit(
        Stored(msgspec.structs.replace(plain, id="fact_00000003"), [0.0] * 64), None, None, 0.5
    )
    scores = _scores(builder, [first, unranked])
    relevance = rrf_score(None, None, limit=50) / rrf_score(1, 1, limit=50)
    assert scores["fact_00000001"] - scores["fact_00000003"] == pytest.approx(
        0.5 * 0.4 * (1.0 - relevance)
    )


async def test_recall_recency_halves_every_seven_days_since_the_fact_was_last_referenced(
    builder: ContextBuilder,
) -> None:
    # 0.2 x recency in seed 002's score, 0.15 x in seed 001's: half of each after 7 days.
    now = _fact(1, "User swims on weekends", last_accessed=NOW, access_count=1)
    week = _fact(2, "User swims on weekends", last_accessed=NOW - 7 * DAY, access_count=1)
    hits = [FactHit(Stored(f, [0.0] * 64), 1, 1, 0.5) for f in (now, week)]
    scores = _scores(builder, hits)
    assert scores["fact_00000001"] - scores["fact_00000002"] == pytest.approx(
        0.5 * (0.2 + 0.15) * (1.0 - 0.5)
    )


async def test_recall_leaves_out_facts_whose_decayed_confidence_is_below_0_2_unless_pinned(
    builder: ContextBuilder, store: LanceStore
) -> None:
    long_ago = NOW - 200 * DAY  # 0.9 x exp(-0.008 x 200) = 0.18
    await _add(
        store,
        _fact(1, "User sails a dinghy", confidence=0.9),
        _fact(2, "User sails a catamaran", confidence=0.9, last_confirmed_at=long_ago),
        _fact(3, "User sails a yacht", confidence=0.9, last_confirmed_at=long_ago, pinned=True),
        _fact(4, "User sails a canoe", confidence=0.1),
    )
    recalled = await builder.recall_facts("u1", "sails", scope=None, limit=10)
    assert sorted(s.fact.id for s in recalled) == ["fact_00000001", "fact_00000003"]
