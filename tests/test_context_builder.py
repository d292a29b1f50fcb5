"""ContextBuilder in process, over the in-memory fakes: which facts are recalled and in
what order, their exact scores, the confidence floor, the identity filter, the formats,
access tracking, and blocks that fail open."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from actors.context import ContextBuilder, ScoredFact
from actors.errors import ArchiveUnavailable
from actors.ports import FactHit
from actors.query_vector import QueryVector
from memory import formats
from memory.facts import Stored
from memory.recall import format_recalled
from memory.rules import StoredRule, new_rule
from memory.stats import rule_stats
from schemas.records import UserProfile
from tests.context_world import (
    DAY,
    NOW,
    WEIGHTS,
    _add,
    _embedder,
    _expected,
    _fact,
    _hit,
    _message,
    _note,
    _scoring_hits,
    _world,
    msgspec_replace,
)
from tests.fakes import MemoryRules

pytestmark = pytest.mark.anyio


async def test_scores_are_the_mean_of_seed_001_and_seed_002_with_the_configured_weights() -> None:
    w = _world(**WEIGHTS)
    hits = _scoring_hits()
    scored = w.builder.score(hits, query="I love baking", topic="fresh BREAD", limit=10)
    s = w.builder.settings
    expected = {
        "fact_00000001": _expected(s, hits[0], most=3, boost=1.5, topical=True, limit=10),
        "fact_00000002": _expected(s, hits[1], most=3, boost=1.0, topical=False, limit=10),
        "fact_00000003": _expected(s, hits[2], most=3, boost=1.0, topical=False, limit=10),
    }
    assert {x.fact.id: x.score for x in scored} == pytest.approx(expected, rel=1e-12)
    assert [x.fact.id for x in scored] == sorted(expected, key=lambda i: -expected[i])
    neutral = w.builder.score(hits, query="what about weekends", topic=None, limit=10)
    assert {x.fact.id: x.score for x in neutral}["fact_00000001"] == pytest.approx(
        _expected(s, hits[0], most=3, boost=1.0, topical=False, limit=10), rel=1e-12
    )


async def test_equal_scores_rank_newer_first_then_lower_id() -> None:
    w = _world()
    old, new, twin = (_fact(n, "User sings", created_at=NOW - n * DAY) for n in (3, 1, 2))
    twin = msgspec_replace(twin, id="fact_00000000", created_at=old.created_at)
    ranked = w.builder.score(
        [_hit(f, 1, 1) for f in (old, new, twin)], query="x", topic=None, limit=5
    )
    assert [x.fact.id for x in ranked] == ["fact_00000001", "fact_00000000", "fact_00000003"]


async def test_similarity_is_the_searchs_else_the_float32_dot_product_of_same_length_vectors() -> (
    None
):
    fact = _fact(1, "User hikes")
    found = FactHit(Stored(fact, [0.1, 0.2, 0.7]), 1, None, similarity=0.25)
    unknown = FactHit(Stored(fact, [0.1, 0.2, 0.7]), None, 1)
    query = [0.3, 0.7, 0.11]
    dot = float(np.dot(np.asarray([0.1, 0.2, 0.7], np.float32), np.asarray(query, np.float32)))
    assert dot != float(np.dot([0.1, 0.2, 0.7], query))  # float32 shows
    assert ContextBuilder._similarity(found, query) == 0.25
    assert ContextBuilder._similarity(unknown, query) == dot
    assert ContextBuilder._similarity(unknown, None) is None
    assert ContextBuilder._similarity(unknown, [0.3, 0.7]) is None
    ranked = _world().builder.score([unknown], query="x", topic=None, limit=5, query_vector=query)
    assert ranked[0].similarity == dot


async def test_the_query_vector_is_the_embedding_of_its_text() -> None:
    w = _world()
    vector = w.builder.query_vector("green tea")
    assert vector.text == "green tea"
    assert list(await vector()) == _embedder.embed_one("green tea")


async def test_recall_searches_query_and_topic_together_for_fifty_candidates_in_the_scope() -> None:
    w = _world()
    await w.builder.recall_facts("u1", "I love tea", scope="app", limit=5, topic="garden")
    await w.builder.recall_facts("u1", "what now", scope=None, limit=5)
    first, second = w.facts.calls
    assert [first[k] for k in ("user", "text", "k", "scope")] == [
        "u1",
        "I love tea garden",
        50,
        "app",
    ]
    assert list(first["categories"]) == ["preference"]  # the only category with a boost
    assert isinstance(first["vector"], QueryVector)
    assert first["vector"].text == "I love tea garden"
    assert (second["text"], list(second["categories"])) == ("what now", [])


async def test_recall_uses_the_shared_vector_unless_a_topic_changes_the_text() -> None:
    w = _world()
    shared = w.builder.query_vector("tea")
    await w.builder.recall_facts("u1", "tea", scope=None, limit=5, vector=shared)
    await w.builder.recall_facts("u1", "tea", scope=None, limit=5, topic="cups", vector=shared)
    assert w.facts.calls[0]["vector"] is shared
    assert w.facts.calls[1]["vector"].text == "tea cups"


async def test_recall_scores_fifty_candidates_and_keeps_the_best_up_to_the_limit() -> None:
    w = _world(**WEIGHTS)
    hits = _scoring_hits()
    w.facts.hits = hits
    recalled = await w.builder.recall_facts(
        "u1", "I love baking", scope=None, limit=2, topic="bread"
    )
    s = w.builder.settings
    expected = {
        h.stored.fact.id: _expected(
            s, h, most=3, boost=1.5 if h is hits[0] else 1.0, topical=h is hits[0], limit=50
        )
        for h in hits
    }
    best = sorted(expected, key=lambda i: -expected[i])[:2]
    assert [x.fact.id for x in recalled] == best
    assert [x.score for x in recalled] == pytest.approx([expected[i] for i in best], rel=1e-12)
    query = _embedder.embed_one("I love baking bread")
    by_id = {h.stored.fact.id: h for h in hits}
    assert [x.similarity for x in recalled] == [
        ContextBuilder._similarity(by_id[i], query) for i in best
    ]


async def test_recall_of_nothing_does_not_embed_the_query() -> None:
    w = _world()
    w.facts.hits = []
    assert await w.builder.recall_facts("u1", "anything", scope=None, limit=5) == []
    assert w.embedder.texts == []


async def test_facts_below_the_confidence_floor_are_not_recalled_unless_pinned() -> None:
    w = _world(recall_min_confidence=0.5)
    _add(
        w,
        _fact(1, "User rows a boat", confidence=0.5, decay_rate=0.0),
        _fact(2, "User rows a kayak", confidence=0.49, decay_rate=0.0),
        _fact(3, "User rows a canoe", confidence=0.1, pinned=True),
        _fact(4, "User rows a raft", confidence=0.9, last_confirmed_at=None),
        _fact(5, "User rows a gig", confidence=0.9, last_confirmed_at=NOW - 100 * DAY),
    )
    recalled = await w.builder.recall_facts("u1", "rows", scope=None, limit=10)
    assert sorted(x.fact.id for x in recalled) == ["fact_00000001", "fact_00000003"]


async def test_semantic_search_ranks_confident_facts_by_vector_rank_with_their_similarity() -> None:
    w = _world()
    a, b, c, d = (_fact(n, f"User fact {n}") for n in range(1, 5))
    faint = _fact(5, "User fact 5", confidence=0.05)
    w.facts.hits = [
        _hit(a, 3, 1, similarity=0.2, text_score=9.0),
        _hit(b, 1, None, similarity=0.9),
        _hit(c, None, 2, text_score=4.0),
        _hit(d, 2, None),  # ranked without a similarity: not a semantic answer
        _hit(faint, 4, None, similarity=0.1),
    ]
    vector = w.builder.query_vector("fact")
    found = await w.builder.find_facts(
        "u1", "fact", mode="semantic", scope="app", limit=3, vector=vector
    )
    assert found == [ScoredFact(b, 0.9, 0.9), ScoredFact(a, 0.2, 0.2)]
    call = w.facts.calls[0]
    assert (call["user"], call["text"], call["k"]) == ("u1", "fact", 50)
    assert (call["scope"], call["mode"], call["categories"]) == ("app", "semantic", ())
    assert call["vector"] is vector
    await w.builder.find_facts("u1", "fact", mode="semantic", scope=None, limit=70, vector=vector)
    assert w.facts.calls[1]["k"] == 70
    top = await w.builder.find_facts(
        "u1", "fact", mode="semantic", scope=None, limit=1, vector=vector
    )
    assert [x.fact.id for x in top] == [b.id]


async def test_keyword_search_ranks_by_text_rank_alone_with_the_bm25_score_and_no_similarity() -> (
    None
):
    w = _world()
    a, b, c, d = (_fact(n, f"User fact {n}") for n in range(1, 5))
    w.facts.hits = [
        _hit(a, 1, 2, similarity=0.9, text_score=3.0),
        _hit(b, None, 1, text_score=7.0),
        _hit(c, 2, None, similarity=0.5),
        _hit(d, 3, 2, text_score=1.0),  # tied on rank: the store's order stands
    ]
    vector = w.builder.query_vector("fact")
    found = await w.builder.find_facts(
        "u1", "fact", mode="keyword", scope=None, limit=5, vector=vector
    )
    assert found == [ScoredFact(b, 7.0, None), ScoredFact(a, 3.0, None), ScoredFact(d, 1.0, None)]
    assert w.facts.calls[0]["mode"] == "keyword"


async def test_hybrid_search_is_recall_with_the_shared_vector_and_limit() -> None:
    w = _world()
    _add(w, *(_fact(n, f"User plays game {n}") for n in range(1, 5)))
    vector = w.builder.query_vector("game")
    found = await w.builder.find_facts(
        "u1", "game", mode="hybrid", scope="x", limit=2, vector=vector
    )
    assert found == await w.builder.recall_facts("u1", "game", scope="x", limit=2)
    assert (w.facts.calls[0]["vector"], w.facts.calls[0]["scope"]) == (vector, "x")


# -- build: the named formats ----------------------------------------------------------


async def test_about_user_leaves_out_unpinned_identity_unless_the_query_is_personal() -> None:
    w = _world()
    home = _fact(1, "User lives in Lyon", "identity")
    name = _fact(2, "User is called Ann", "identity", pinned=True)
    work = _fact(3, "User works on a compiler", "project")
    _add(w, home, name, work)
    vector = w.builder.query_vector("compiler")
    impersonal = await w.builder.build(
        "u1", "compiler", format="about-user", budget=300, scope="app", vector=vector
    )
    assert (w.facts.calls[0]["vector"], w.facts.calls[0]["scope"]) == (vector, "app")
    personal = await w.builder.build(
        "u1", "my compiler", format="about-user", budget=300, scope=None, topic="code"
    )
    assert w.facts.calls[1]["text"] == "my compiler code"
    assert sorted(impersonal.memory_ids) == [name.id, work.id]
    assert sorted(personal.memory_ids) == [home.id, name.id, work.id]
    assert impersonal.text.startswith(formats.ABOUT_USER_HEADING)
    assert w.keeper.touched == [("u1", impersonal.memory_ids), ("u1", personal.memory_ids)]


async def test_about_user_shows_the_recall_limits_best_facts_within_the_budget() -> None:
    w = _world(recall_limit=3)
    _add(w, *(_fact(n, f"User likes painting style {n}", importance=n) for n in range(1, 6)))
    recalled = await w.builder.recall_facts("u1", "painting", scope=None, limit=3)
    block = await w.builder.build("u1", "painting", format="about-user", budget=300, scope=None)
    facts = [x.fact for x in recalled]
    assert block == formats.about_user(facts, w.builder.settings.categories, 300)
    assert len(block.memory_ids) == 3
    tight = await w.builder.build("u1", "painting", format="about-user", budget=30, scope=None)
    assert 0 < tight.tokens <= 30
    assert len(tight.memory_ids) < 3


async def test_memory_context_and_user_context_render_the_recalled_facts_and_profile() -> None:
    w = _world(recall_limit=2)
    _add(w, *(_fact(n, f"User grows herb {n}") for n in range(1, 4)))
    w.facts.profiles["u1"] = UserProfile(user_id="u1", work="Gardener", personal="Has a dog")
    recalled = [x.fact for x in await w.builder.recall_facts("u1", "herb", scope=None, limit=2)]
    memory = await w.builder.build("u1", "herb", format="memory-context", budget=200, scope=None)
    user = await w.builder.build("u1", "herb", format="user-context", budget=200, scope=None)
    tight = await w.builder.build("u1", "herb", format="user-context", budget=20, scope=None)
    assert memory == formats.memory_context(recalled, 200)
    assert user == formats.user_context(w.facts.profiles["u1"], recalled, 200)
    assert tight == formats.user_context(w.facts.profiles["u1"], recalled, 20)
    assert "Gardener" in user.text
    assert tight.memory_ids == []


async def test_app_memories_show_the_scopes_newest_notes_up_to_the_per_app_limit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    w = _world(notes_per_app=2)
    for n, app in enumerate(["app", "app", "app", "global", "other"]):
        at = NOW - n * DAY
        _note(w, f"note_{n}", app, f"Note {n}", at)
    with caplog.at_level(logging.DEBUG, "mnemo.context"):
        block = await w.builder.build("u1", "q", format="app-memories", budget=300, scope="app")
    assert caplog.messages == ["retrieved 2 notes of app app for user u1"]
    unscoped = await w.builder.build("u1", "q", format="app-memories", budget=300, scope=None)
    assert block.memory_ids == ["note_0", "note_1"]
    assert block.text.startswith("(memories for app: app)")
    assert unscoped.memory_ids == ["note_3"]
    assert w.keeper.touched == [("u1", []), ("u1", [])]  # notes are not facts


async def test_the_conversation_format_leaves_out_what_the_prompt_carries_and_keeps_eight() -> None:
    w = _world()
    w.store.messages = [_message(n, f"we spoke of boats {n}") for n in range(1, 12)]
    said = frozenset({("user", "we spoke of boats 1"), ("assistant", "we spoke of boats 2")})
    vector = w.builder.query_vector("boats")
    block = await w.builder.build(
        "u1", "boats", format="conversation", budget=500, scope="app", exclude=said, vector=vector
    )
    found = [m for m, _ in await w.store.search_messages("u1", "boats", vector, k=20)]
    fresh = [m for m in found if m.text != "we spoke of boats 1"][:8]
    recalled = format_recalled(fresh, 500)
    assert block == formats.Block(recalled.text, recalled.tokens, recalled.memory_ids)
    assert len(block.memory_ids) == 8
    assert w.store.searches[0] == ("boats", vector, 10, "app")
    assert w.keeper.touched == [("u1", [])]  # messages are not facts


async def test_a_conversation_that_does_not_fit_says_what_budget_it_needs() -> None:
    w = _world()
    w.store.messages = [_message(1, "boats " * 40)]
    block = await w.builder.build("u1", "boats", format="conversation", budget=20, scope=None)
    assert (block.text, block.memory_ids) == ("", [])
    assert block.needed == format_recalled(w.store.messages, 20).needed > 20
    searched = w.store.searches[0][1]
    assert isinstance(searched, QueryVector)
    assert searched.text == "boats"


async def test_a_failing_store_degrades_a_block_to_empty_and_touches_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    w = _world()
    _add(w, _fact(1, "User sails"))
    w.facts.error = ArchiveUnavailable("disk gone (fake)")
    with caplog.at_level(logging.WARNING, "mnemo.context"):
        block = await w.builder.build("u1", "sails", format="about-user", budget=300, scope=None)
    assert block == formats.Block("", 0, [])
    assert w.keeper.touched == []
    assert "context for user u1 degraded to empty: disk gone (fake)" in caplog.messages


async def test_touch_counts_only_fact_ids() -> None:
    w = _world()
    w.builder.touch("u9", ["fact_00000001", "note_1", "msg_fact_", "fact_00000002"])
    assert w.keeper.touched == [("u9", ["fact_00000001", "fact_00000002"])]


class _CountedRules(MemoryRules):
    """Counts the reads of every rule (``rules_of``)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def rules_of(self, user_id: str, *, scope: str | None = None) -> list[StoredRule]:
        self.reads += 1
        return await super().rules_of(user_id, scope=scope)

    async def rule_counts(self, user_id: str, *, scope: str | None = None) -> dict[str, int]:
        return rule_stats(s.rule for s in await super().rules_of(user_id, scope=scope))


async def test_a_memory_context_reads_the_rules_only_of_a_user_who_has_live_ones() -> None:
    w = _world()
    rules = w.store.rules = _CountedRules()
    _add(w, _fact(1, "User grows basil"))
    plain = await w.builder.build("u1", "basil", format="memory-context", budget=300, scope=None)
    assert rules.reads == 0  # the counts say there is none to read
    rule = new_rule("rule_00000001", "u1", "Water basil in the morning", NOW)
    rules.rules[("u1", rule.id)] = StoredRule(rule, _embedder.embed_one(rule.content))
    ruled = await w.builder.build("u1", "basil", format="memory-context", budget=300, scope=None)
    assert rules.reads == 1
    assert "Water basil in the morning" not in plain.text
    assert "Water basil in the morning" in ruled.text
