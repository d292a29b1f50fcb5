"""What sessions learn, under trio's MockClock with in-memory fakes: extraction, facts, frames."""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from trio.testing import MockClock

from actors.errors import LlmError, LlmUnavailable
from memory.facts import Stored
from memory.hashing import HashEmbedder
from schemas.records import Fact
from schemas.settings import Settings
from schemas.wire import (
    Ack,
    Chat,
    ContextBlock,
    ContextRequest,
    Done,
    End,
    ErrorFrame,
    MemoryChanged,
    Remember,
    ServerMessage,
    Turn,
)
from testing.records import make_fact
from tests.actor_world import World, world

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return ("trio", {"clock": MockClock(autojump_threshold=0)})


def extraction(*facts: dict[str, Any], topic: str | None = None, **analysis: Any) -> str:
    return json.dumps(
        {
            "facts": list(facts),
            "memory_update": {"should_store": bool(facts)},
            "analysis": {"current_topic": topic, **analysis},
        }
    )


def fact(
    content: str, category: str = "identity", confidence: float = 0.9, **extra: Any
) -> dict[str, Any]:
    """A fact as the model returns it; structure defaults to an unknown, many-valued
    predicate about the user with the content as its value."""
    structure = {"subject": "user", "predicate": "note", "value": content}
    return {
        "content": content,
        "category": category,
        "confidence": confidence,
        **structure,
        **extra,
    }


async def test_turn_triggers_extraction_and_pushes_the_added_fact() -> None:
    async with world() as w:
        pushed = w.subscribe()
        w.llm.json_script = [extraction(fact("User lives in Lyon"))]
        [ack] = await w.ask(Turn(id="t1", user="I live in Lyon", assistant="Nice"))
        with anyio.fail_after(60), pushed:
            frame = await pushed.receive()
        stored = await w.store.facts.facts_of("u1")
    assert isinstance(ack, Ack)
    assert isinstance(frame, MemoryChanged)
    assert [f.content for f in frame.added] == ["User lives in Lyon"]
    assert frame.added[0].id.startswith("fact_")
    [only] = stored
    assert (only.fact.extractor, only.fact.session_id, only.fact.source) == (
        "llm",
        "s1",
        "user_stated",
    )
    system, prompt = w.llm.json_prompts[0]
    assert "<episode_content>I live in Lyon</episode_content>" in prompt
    assert system is not None
    assert "data only" in system


async def test_a_learned_fact_carries_seed_001s_long_term_fields() -> None:
    async with world() as w:
        w.llm.json_script = [
            extraction(
                fact("Codes in Python at night", "pattern", 0.7, key="coding_time", value="night")
            )
        ]
        await w.ask(Turn(id="t1", user="I always code in Python at night", assistant="ok"))
        await w.settle()
        # The rule-based reader's "codes in Python" stands beside it.
        [stored] = [s for s in await w.store.facts.facts_of("u1") if s.fact.extractor == "llm"]
    got = stored.fact
    assert re.fullmatch(r"fact_[0-9a-f]{8}", got.id)
    assert (got.session_id, got.category, got.key, got.value, got.confidence, got.source) == (
        "s1",
        "behavior",  # seed 001's "pattern", in the configured taxonomy
        "coding_time",
        "night",
        0.7,
        "inferred",  # below 0.9 the model did not hear it stated outright
    )
    assert got.created_at.tzinfo is not None
    assert (got.last_accessed, got.access_count) == (None, 0)


async def test_turns_during_an_extraction_coalesce_into_the_next_call() -> None:
    async with world() as w:
        w.llm.json_delay = 10.0
        for i in range(1, 4):
            await w.ask(Turn(id=f"t{i}", user=f"message {i}", assistant="ok"))
        await anyio.sleep(60)
    prompts = [p for _, p in w.llm.json_prompts]
    assert len(prompts) == 2
    assert "message 1" in prompts[0]
    assert "message 2" not in prompts[0]
    assert "message 2" in prompts[1]
    assert "message 3" in prompts[1]


async def _seconds_a_chat_waits(w: World) -> float:
    started = anyio.current_time()
    replies = await w.ask(Chat(id="c1", content="hello"))
    done = replies[-1]
    assert isinstance(done, Done)
    assert done.usage.queued_ms < 100.0
    return anyio.current_time() - started


async def test_replies_never_wait_for_memory_work() -> None:
    async with world() as w:
        w.llm.json_delay = 1000.0
        await w.ask(Turn(id="t1", user="I love jazz", assistant="ok"))
        assert await _seconds_a_chat_waits(w) < 1.0


async def test_replies_never_wait_for_storing_learned_facts() -> None:
    async with world() as w:
        w.store.facts.write_delay = 1000.0
        w.llm.json_script = [extraction(fact("Loves jazz"))]
        await w.ask(Turn(id="t1", user="I love jazz", assistant="ok"))
        await anyio.sleep(1)  # extraction answered; its facts wait on the slow disk
        assert await _seconds_a_chat_waits(w) < 1.0


async def test_done_reports_the_time_spent_building_the_memory_context() -> None:
    async with world() as w:
        w.store.search_delay = 0.25
        replies = await w.ask(Chat(id="c1", content="hello"))
    done = replies[-1]
    assert isinstance(done, Done)
    assert 250.0 <= done.usage.context_ms < 300.0


async def test_done_reports_how_long_the_model_took_to_its_first_chunk() -> None:
    async with world() as w:
        w.llm.chunk_delay = 0.4
        w.store.search_delay = 0.25
        replies = await w.ask(Chat(id="c1", content="hello"))
    done = replies[-1]
    assert isinstance(done, Done)
    assert 400.0 <= done.usage.model_first_ms < 450.0


async def test_done_reports_how_long_a_chat_queued_behind_the_one_before() -> None:
    async with world() as w:
        w.llm.chunk_delay = 0.1  # "OK" streams in one chunk: each chat takes 0.1 s
        first: list[ServerMessage] = []
        second: list[ServerMessage] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _collect(w, Chat(id="c1", content="one"), first))
            await anyio.sleep(0.01)
            tg.start_soon(lambda: _collect(w, Chat(id="c2", content="two"), second))
    assert isinstance(first[-1], Done)
    assert isinstance(second[-1], Done)
    assert first[-1].usage.queued_ms < 50.0
    assert 50.0 <= second[-1].usage.queued_ms < 200.0


async def _collect(w: World, chat: Chat, into: list[ServerMessage]) -> None:
    into.extend(await w.ask(chat))


async def test_an_unreadable_answer_is_not_retried_and_the_readers_facts_stand() -> None:
    async with world() as w:
        w.llm.json_script = ["this is not json", extraction()]
        await w.ask(Turn(id="t1", user="I live in Lyon", assistant="Nice"))
        await w.settle()
        stats = w.deps.learning.extractor.stats
        stored = await w.store.facts.facts_of("u1")
        progress = await w.store.facts.get_progress("u1", "s1")
    assert (stats.invalid, stats.succeeded, stats.failed) == (1, 0, 0)
    assert len(w.llm.json_prompts) == 1  # at temperature 0 a retry gets the same answer
    assert [(s.fact.content, s.fact.extractor) for s in stored] == [("User lives in Lyon", "rules")]
    assert progress is not None
    assert progress.extracted_through == 1  # the model had its say on this turn


async def test_a_confidence_out_of_range_is_clamped_and_a_broken_fact_dropped_alone() -> None:
    async with world() as w:
        broken = fact("User is called Bob", confidence=0.9, value="")
        w.llm.json_script = [
            extraction(
                fact("User is called Ada", confidence=10.2, predicate="name", value="Ada"), broken
            )
        ]
        await w.ask(Turn(id="t1", user="I'm Ada", assistant="Hi Ada"))
        await w.settle()
        stats = w.deps.learning.extractor.stats
        stored = await w.store.facts.facts_of("u1")
    # In the rule-based reader's words, which read it too.
    assert [(s.fact.content, s.fact.confidence) for s in stored] == [("User's name is Ada", 1.0)]
    assert (stats.succeeded, stats.rejected) == (1, {"unreadable": 1})


async def test_facts_with_unknown_categories_are_rejected_and_others_kept() -> None:
    async with world() as w:
        w.llm.json_script = [
            extraction(fact("User likes tea", "preference"), fact("User is tall", "physique"))
        ]
        await w.ask(Turn(id="t1", user="I like tea and I am tall", assistant="ok"))
        await w.settle()
        stored = await w.store.facts.facts_of("u1")
    assert [s.fact.content for s in stored] == ["User likes tea"]


def _skip_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "mnemo.facts" and r.getMessage().startswith("skipped fact")
    ]


async def test_fact_below_the_confidence_threshold_is_not_stored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mnemo.facts")
    async with world() as w:
        w.llm.json_script = [extraction(fact("User plays golf now and then", "preference", 0.4))]
        await w.ask(Turn(id="t1", user="Golf, now and then.", assistant="ok"))
        await w.settle()
        assert await w.store.facts.facts_of("u1") == []
    # seed 000: a "low-confidence fact skipped" log line
    assert _skip_logs(caplog) == ["skipped fact (low confidence): User plays golf now and then"]


async def test_a_duplicate_under_the_unchanged_policy_is_skipped_logged_and_left_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mnemo.facts")
    async with world(duplicate_policy="unchanged") as w:
        w.llm.json_script = [
            extraction(fact("User plays chess", "preference", 0.8)),
            extraction(fact("user plays CHESS", "preference", 0.95)),
        ]
        await w.ask(Turn(id="t1", user="I play chess", assistant="ok"))
        await w.settle()
        [before] = await w.store.facts.facts_of("u1")
        await w.ask(Turn(id="t2", user="I play chess, really", assistant="ok"))
        await w.settle()
        [after] = await w.store.facts.facts_of("u1")
    assert after.fact == before.fact  # seed 000: the existing fact stays unchanged
    # The reader read it too: in its words.
    assert _skip_logs(caplog) == ["skipped fact (duplicate): User plays chess"]


@pytest.mark.parametrize(
    ("confidence", "source"), [(0.9, "user_stated"), (0.85, "inferred")], ids=["0.9", "0.85"]
)
async def test_only_a_fact_extracted_at_0_9_or_more_counts_as_user_stated(
    confidence: float, source: str
) -> None:
    # seed 001: what the user stated explicitly is stored with source user_stated and
    # confidence >= 0.9; mnemo reads that from each fact's confidence.
    async with world() as w:
        w.llm.json_script = [extraction(fact("User lives in Lyon", confidence=confidence))]
        await w.ask(Turn(id="t1", user="I live in Lyon", assistant="Nice"))
        await w.settle()
        [only] = await w.store.facts.facts_of("u1")
    assert (only.fact.source, only.fact.confidence) == (source, confidence)


async def test_unreachable_model_falls_back_to_rules_and_keeps_turns_pending() -> None:
    async with world() as w:
        w.llm.json_script = [LlmUnavailable("connection refused")]
        await w.ask(Turn(id="t1", user="I live in Lyon", assistant="Nice"))
        await w.settle()
        stored = await w.store.facts.facts_of("u1")
        progress = await w.store.facts.get_progress("u1", "s1")
    [only] = stored
    assert only.fact.extractor == "rules"
    assert only.fact.confidence == pytest.approx(0.6)
    assert "Lyon" in only.fact.content
    assert progress is not None
    assert (progress.extracted_through, progress.last_turn) == (0, 1)
    assert w.deps.learning.extractor.stats.by_rules == 1


async def test_a_model_failing_every_attempt_leaves_the_readers_facts_and_the_turn_pending() -> (
    None
):
    async with world() as w:
        failures: list[str | BaseException] = [LlmError("boom")] * 3
        w.llm.json_script = [*failures, extraction()]
        await w.ask(Turn(id="t1", user="I play chess", assistant="ok"))
        await w.settle()
        stored = await w.store.facts.facts_of("u1")
        progress = await w.store.facts.get_progress("u1", "s1")
    assert [(s.fact.content, s.fact.extractor) for s in stored] == [("User plays chess", "rules")]
    assert (w.deps.learning.extractor.stats.failed, w.deps.learning.extractor.stats.by_rules) == (
        3,
        1,
    )
    assert progress is not None
    assert progress.extracted_through == 0  # the sweeper asks the model again later


async def test_analysis_updates_topic_variables_and_emotion() -> None:
    async with world() as w:
        w.llm.json_script = [
            extraction(topic="travel", context_variables={"city": "Oslo"}, last_emotion="excited")
        ]
        await w.ask(Turn(id="t1", user="Going to Oslo!", assistant="Fun"))
        await w.settle()
        memory = w.memory()
    assert memory is not None
    assert (memory.current_topic, memory.context_variables, memory.last_emotion) == (
        "travel",
        {"city": "Oslo"},
        "excited",
    )


async def test_remember_answers_with_a_memory_frame_and_a_repeat_reinforces() -> None:
    async with world() as w:
        [first] = await w.ask(Remember(id="r1", content="I prefer dark mode"))
        [second] = await w.ask(Remember(id="r2", content="i prefer DARK mode"))
    assert isinstance(first, MemoryChanged)
    assert isinstance(second, MemoryChanged)
    assert first.id == "r1"
    [added] = first.added
    assert (added.category, added.confidence, added.extractor) == ("preference", 0.6, "manual")
    assert second.added == []
    [reinforced] = second.updated
    assert (reinforced.id, reinforced.mention_count) == (added.id, 2)
    assert reinforced.confidence == pytest.approx(0.85)  # by hand: +0.25, not +0.15


async def test_remember_with_unknown_category_is_bad_request() -> None:
    async with world() as w:
        [error] = await w.ask(Remember(id="r1", content="x", category="astrology"))
    assert isinstance(error, ErrorFrame)
    assert error.code == "bad_request"
    assert error.id == "r1"


async def test_conflicting_fact_supersedes_the_old_one_and_only_the_new_is_recalled() -> None:
    async with world() as w:
        w.llm.json_script = [
            extraction(fact("User lives in Copenhagen", subject="user", predicate="lives_in")),
            extraction(
                fact(
                    "User lives in London",
                    subject="user",
                    predicate="lives_in",
                    updates_previous=True,
                )
            ),
        ]
        pushed = w.subscribe()
        await w.ask(Turn(id="t1", user="I live in Copenhagen", assistant="ok"))
        await w.settle()
        await w.ask(Turn(id="t2", user="I moved to London", assistant="ok"))
        await w.settle()
        frames = []
        with pushed:
            while True:
                try:
                    frames.append(pushed.receive_nowait())
                except anyio.WouldBlock:
                    break
        active = await w.store.facts.facts_of("u1")
        everything = await w.store.facts.facts_of("u1", active_only=False)
        [block] = await w.ask(ContextRequest(id="q", query="where do I live?", format="about-user"))
    assert [s.fact.content for s in active] == ["User lives in London"]
    old = next(s.fact for s in everything if s.fact.content == "User lives in Copenhagen")
    assert old.validity == "superseded"
    assert old.superseded_by == active[0].fact.id
    assert active[0].fact.supersedes_id == old.id
    assert isinstance(frames[-1], MemoryChanged)
    assert [f.id for f in frames[-1].superseded] == [old.id]
    assert isinstance(block, ContextBlock)
    assert "London" in block.text
    assert "Copenhagen" not in block.text


@pytest.mark.parametrize(
    ("name", "starts"),
    [
        ("about-user", "## What you know about this user\n\nPreferences:\n- User likes green tea"),
        (
            "memory-context",
            "# Memory Context\n\n## Key Facts\n- [user] [likes]: User likes green tea",
        ),
        ("user-context", "Facts:\n- [preference | 0.60] User likes green tea"),
    ],
    ids=["about-user", "memory-context", "user-context"],
)
async def test_context_request_renders_facts_in_the_named_format(name: str, starts: str) -> None:
    async with world() as w:
        await w.ask(Remember(id="r", content="User likes green tea", category="preference"))
        [block] = await w.ask(
            ContextRequest(id="q", query="green tea please", format=name, budget=400)
        )
    assert isinstance(block, ContextBlock)
    assert block.text.startswith(starts)
    assert len(block.memory_ids) == 1


async def test_facts_put_into_a_context_count_as_accessed() -> None:
    async with world() as w:
        [frame] = await w.ask(
            Remember(id="r", content="User likes green tea", category="preference")
        )
        assert isinstance(frame, MemoryChanged)
        for _ in range(2):
            await w.ask(ContextRequest(id="q", query="green tea", format="about-user"))
        await w.settle()
        [stored] = await w.store.facts.get_facts("u1", [frame.added[0].id])
    assert stored.fact.access_count == 2
    assert stored.fact.last_accessed is not None


async def test_an_apps_context_recalls_up_to_20_facts_of_global_and_that_app_and_counts_them() -> (
    None
):
    # seed 002: the butler's name is the recall scope, up to 20 results are recalled, and
    # each returned result gets reference_count + 1 and last_referenced_at = now.
    embedder = HashEmbedder()
    day = datetime(2025, 12, 31, tzinfo=UTC)  # the day before the world's clock starts
    seen = {"created_at": day, "updated_at": day, "last_seen": day, "last_confirmed_at": day}
    facts = [
        *(
            make_fact(f"fact_000000{n:02x}", content=f"User owns kayak {n}", **seen)
            for n in range(24)
        ),
        make_fact(
            "fact_000000a0", content="User owns a kayak for the butler", scope="butler", **seen
        ),
        make_fact("fact_000000b0", content="User owns a kayak for the cook", scope="cook", **seen),
    ]
    async with world() as w:
        await w.store.facts.add_facts([Stored(f, embedder.embed_one(f.content)) for f in facts])
        await w.registry.open("u1", "s1", "butler")
        [block] = await w.ask(
            ContextRequest(id="q", query="kayak butler", budget=4000, format="memory-context")
        )
        assert isinstance(block, ContextBlock)
        await w.settle()
        after = {s.fact.id: s.fact for s in await w.store.facts.facts_of("u1")}
    assert len(block.memory_ids) == 20
    assert "fact_000000a0" in block.memory_ids  # the app's own fact
    assert "fact_000000b0" not in block.memory_ids  # another app's never
    for ident, fact in after.items():
        if ident in block.memory_ids:
            assert fact.access_count == 1
            assert fact.last_accessed is not None
            assert fact.last_accessed > day
        else:
            assert (fact.access_count, fact.last_accessed) == (0, None)


async def test_chat_prompt_carries_facts_about_the_user() -> None:
    async with world() as w:
        await w.ask(Remember(id="r", content="User is vegetarian", category="preference"))
        await w.ask(Chat(id="c", content="Suggest a dinner I would like"))
    system = w.llm.prompts[-1][0]
    assert system.role == "system"
    assert "## What you know about this user" in system.content
    assert "- User is vegetarian" in system.content


async def test_a_user_without_facts_is_invited_to_share_and_later_is_not() -> None:
    async with world() as w:
        await w.ask(Chat(id="c1", content="Hello there"))
        first = w.llm.prompts[-1][0].content
        await w.ask(Remember(id="r", content="User is vegetarian", category="preference"))
        await w.ask(Chat(id="c2", content="What is the capital of Peru?"))
        later = w.llm.prompts[-1][0].content
    welcome = Settings().welcome_prompt
    assert "invite them to share" in welcome
    assert first.endswith(welcome)
    assert welcome not in later


async def test_a_chat_prompt_carries_at_most_five_facts_the_most_relevant_included() -> None:
    facts = [
        "User plays the cello",
        "User has a cat named Miso",
        "User works as a nurse",
        "User lives in Porto",
        "User studies Japanese",
        "User runs marathons",
        "User bakes sourdough bread",
        "User collects vinyl records",
    ]
    async with world() as w:
        for n, content in enumerate(facts):
            await w.ask(Remember(id=f"r{n}", content=content, category="knowledge"))
        await w.ask(Chat(id="c", content="Any tips for my sourdough bread?"))
    system = w.llm.prompts[-1][0].content
    shown = [fact for fact in facts if fact in system]
    assert Settings().retrieval_limit == 5
    assert len(shown) == 5
    assert "User bakes sourdough bread" in shown


async def test_long_history_is_trimmed_middle_out_before_the_model_call() -> None:
    async with world(chat_context_tokens=400, history_messages=40) as w:
        for i in range(12):
            await w.ask(Turn(id=f"t{i}", user=f"question {i} " + "x" * 80, assistant=f"answer {i}"))
        await w.ask(Chat(id="c", content="last question"))
    sent = [m.content.split(" ")[0:2] for m in w.llm.prompts[-1][1:]]
    assert sent[0] == ["question", "0"]
    assert sent[1] == ["answer", "0"]
    assert len(w.llm.prompts[-1]) == 1 + 2 + 6
    assert sent[-1] == ["last", "question"]


async def test_end_extracts_pending_turns_then_writes_the_app_note_and_profile() -> None:
    async with world() as w:
        await w.registry.open("u1", "s1", scope="calendar")
        w.llm.json_delay = 1.0
        w.llm.json_script = [
            extraction(fact("User has a dentist appointment on Friday", "context")),
            json.dumps({"content": "User booked a dentist appointment for Friday."}),
            json.dumps({"work": "", "personal": "Goes to the dentist", "top_of_mind": "Friday"}),
        ]
        await w.ask(Turn(id="t1", user="Book the dentist on Friday", assistant="Done"))
        await w.ask(End())
        await w.settle()
        notes = await w.store.facts.notes_of("u1", "calendar")
        profile = await w.store.facts.get_profile("u1")
        stored = await w.store.facts.facts_of("u1")
    assert [n.content for n in notes] == ["User booked a dentist appointment for Friday."]
    assert notes[0].source_session_id == "s1"
    assert profile is not None
    assert profile.top_of_mind == "Friday"
    assert [s.fact.scope for s in stored] == ["calendar"]
    assert w.registry.get("u1", "s1") is None


async def test_sweeper_catches_up_pending_turns_of_ended_sessions() -> None:
    async with world() as w:
        w.llm.json_script = [LlmError("down")] * 6
        await w.ask(Turn(id="t1", user="I work at Acme", assistant="ok"))
        await w.ask(End())
        await w.settle()
        assert (await w.store.facts.pending_progress())[0].session_id == "s1"
        w.llm.json_script = [extraction(fact("User works at Acme", "project"))]
        caught_up = await w.sweeper.retry_once()
        await w.settle()
        stored = await w.store.facts.facts_of("u1")
        pending = await w.store.facts.pending_progress()
    assert caught_up == 1
    assert [s.fact.content for s in stored] == ["User works at Acme"]
    assert pending == []


async def test_decay_sweep_fades_and_expires_facts() -> None:
    async with world() as w:
        now = w.deps.clock.now()

        def aged(fid: str, days: float, permanence: str, rate: float) -> Stored:
            at = now - timedelta(days=days)
            return Stored(
                Fact(
                    id=fid,
                    user_id="u1",
                    content=fid,
                    category="knowledge",
                    confidence=1.0,
                    created_at=at,
                    updated_at=at,
                    last_seen=now,
                    last_confirmed_at=at,
                    permanence=permanence,
                    decay_rate=rate,
                ),
                HashEmbedder().embed_one(fid),
            )

        await w.store.facts.put_facts(
            [
                aged("fact_00000001", 25, "ephemeral", 0.1),  # exp(-2.5) = 0.082 -> fading
                aged("fact_00000002", 40, "ephemeral", 0.1),  # exp(-4) = 0.018 -> expired
                aged("fact_00000003", 400, "permanent", 0.0),  # never decays
            ]
        )
        changed = await w.sweeper.sweep_once()
        facts = {s.fact.id: s.fact for s in await w.store.facts.facts_of("u1", active_only=False)}
    assert changed == 2
    assert (facts["fact_00000001"].validity, facts["fact_00000001"].status) == ("active", "fading")
    assert facts["fact_00000002"].validity == "expired"
    assert facts["fact_00000003"].validity == "active"
    assert datetime.now(UTC) > now - timedelta(days=1)


@pytest.mark.parametrize(
    ("query", "shown"),
    [("What should I cook tonight?", True), ("Summarise the news", False)],
    ids=["personal-query", "impersonal-query"],
)
async def test_identity_facts_appear_only_for_personal_queries(query: str, shown: bool) -> None:
    async with world() as w:
        await w.ask(Remember(id="r1", content="User is called Ada", category="identity"))
        await w.ask(Remember(id="r2", content="User is building a compiler", category="project"))
        [block] = await w.ask(ContextRequest(id="q", query=query, format="about-user"))
    assert isinstance(block, ContextBlock)
    assert "Current work:\n- User is building a compiler" in block.text
    assert ("About user:\n- User is called Ada" in block.text) is shown


async def _end_app_session(w: Any, note_json: str) -> None:
    await w.registry.open("u1", "s1", scope="calendar")
    w.llm.json_script = [extraction(), note_json]
    await w.ask(Turn(id="t1", user="Plan lunch on Monday", assistant="Done"))
    await w.settle()
    await w.ask(End())
    await w.settle()


@pytest.mark.parametrize(("failures", "notes"), [(1, 1), (2, 0)], ids=["retried-once", "given-up"])
async def test_note_write_failing_is_retried_once_then_skipped(failures: int, notes: int) -> None:
    async with world() as w:
        w.store.facts.fail_note_writes = failures
        await _end_app_session(w, json.dumps({"content": "User plans lunch on Monday."}))
        assert len(await w.store.facts.notes_of("u1", "calendar")) == notes
        assert w.deps.learning.notes.stats.skipped == 1 - notes


@pytest.mark.parametrize(
    ("delay", "notes"), [(31.0, 0), (29.0, 1)], ids=["31s-skipped", "29s-written"]
)
async def test_note_creation_times_out_after_30_seconds_and_is_skipped(
    delay: float, notes: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mnemo.notes")
    async with world() as w:
        await w.registry.open("u1", "s1", scope="calendar")
        w.llm.json_script = [extraction()]
        await w.ask(Turn(id="t1", user="Plan lunch", assistant="Done"))
        await w.settle()
        # A valid note, late: only the 30-second timeout keeps it out.
        w.llm.json_script = [json.dumps({"content": "User plans lunch."})]
        w.llm.json_delay = delay
        started = anyio.current_time()
        await w.ask(End())
        ended_after = anyio.current_time() - started
        await anyio.sleep(120)
        stored = await w.store.facts.notes_of("u1", "calendar")
        assert [n.content for n in stored] == ["User plans lunch."] * notes
        assert w.deps.learning.notes.stats.skipped == 1 - notes
    assert ended_after < 1.0  # the end did not wait for the note
    skipped = [r.getMessage() for r in caplog.records if r.getMessage().startswith("no note")]
    assert [("within 30 s" in m) for m in skipped] == [True] * (1 - notes)  # says why


async def test_an_extraction_call_is_capped_at_what_its_turns_can_need() -> None:
    async with world() as w:
        await w.ask(Turn(id="t1", user="I live in Lyon", assistant="Nice"))
        await w.settle()
    [limit] = w.llm.json_limits
    assert limit is not None
    assert 300 < limit <= 2048


async def test_the_warm_up_reads_what_every_extraction_prompt_starts_with() -> None:
    async with world() as w:
        extractor = w.deps.learning.extractor
        await extractor.warm_up()  # the fake answers it with a cut answer, as a model would
        await w.ask(Turn(id="t1", user="I live in Lyon", assistant="Nice"))
        await w.settle()
    [(warm_system, prefix)] = w.llm.warm_ups
    [(sent_system, sent_prompt)] = w.llm.json_prompts
    assert sent_system == warm_system
    assert sent_prompt.startswith(prefix)
    assert prefix.strip()
