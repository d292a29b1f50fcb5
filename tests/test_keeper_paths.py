"""FactKeeper in process: the frames and events that report what changed, learning,
hand-made facts, and one batch of jobs."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import anyio
import msgspec
import pytest

from actors.errors import ArchiveUnavailable, Rejected
from actors.events import Event, EventBus
from actors.keeper import FactKeeper, changes_frame, emit_changes, fact_view
from memory.facts import Changes, Conflict, Stored
from memory.hashing import HashEmbedder
from schemas.records import Fact
from schemas.settings import Settings
from schemas.wire import FactConflict, FactView, MemoryChanged
from tests.fakes import MemoryStore
from tests.keeper_world import (
    DAY,
    EMBED,
    NOW,
    FixedClock,
    Recorder,
    extracted,
    line,
    make,
    pick,
    put,
    world,
)

pytestmark = pytest.mark.anyio

# -- frames and events ---------------------------------------------------------------------


def test_a_fact_view_carries_every_field_a_client_sees() -> None:
    seen: dict[str, Any] = {
        **{"id": "fact_00000001", "content": "User's sister Anna lives in Oslo"},
        **{"category": "goal", "confidence": 0.4, "scope": "app1", "validity": "superseded"},
        **{"pinned": True, "mention_count": 3, "created_at": NOW - 3 * DAY},
        **{"updated_at": NOW - 2 * DAY, "last_seen": NOW - DAY, "source": "user_stated"},
        **{"extractor": "rules", "status": "fading", "subject": "Anna", "predicate": "lives_in"},
        **{"key": "city", "value": "Oslo", "relation": "sister", "negated": True},
        **{"supersedes_id": "fact_00000002", "superseded_by": "fact_00000003"},
        **{"conflicts_with": "fact_00000004", "access_count": 4, "last_accessed": NOW},
        **{"importance": 7.5, "permanence": "stable", "tags": ["t"]},
        **{"entity_id": "ent_00000001", "last_confirmed_at": NOW, "source_scope": "app1"},
        **{"source_episode_id": "ep_0000000000000001"},
    }
    unseen: dict[str, Any] = {
        "user_id": "u1",
        "source_id": "l1",
        "session_id": "s1",
        "meta": {"k": 1},
    }
    assert fact_view(Fact(**seen, **unseen)) == FactView(**seen)


A, B, C, D = (make(f"fact_0000000{i}", f"fact {i}") for i in range(1, 5))
EVERY_KIND = Changes(
    added=[Stored(A, (1.0,))],
    updated=[B],
    superseded=[C],
    removed=[D],
    conflicts=[Conflict("fact_00000001", "fact_00000009", "pinned")],
)


def test_a_changes_frame_lists_each_kind_of_change() -> None:
    assert changes_frame(EVERY_KIND, "r1") == MemoryChanged(
        id="r1",
        added=[fact_view(A)],
        updated=[fact_view(B)],
        superseded=[fact_view(C)],
        removed=["fact_00000004"],
        conflicts=[FactConflict(id="fact_00000001", kept_id="fact_00000009", reason="pinned")],
    )


@pytest.mark.parametrize("kind", ["added", "updated", "superseded", "removed"])
def test_any_one_kind_of_change_alone_makes_a_frame(kind: str) -> None:
    only = Changes(**{kind: getattr(EVERY_KIND, kind)})
    frame = changes_frame(only)
    assert frame is not None
    assert frame.id is None
    assert msgspec.to_builtins(frame)[kind] == msgspec.to_builtins(changes_frame(EVERY_KIND))[kind]


def test_no_change_makes_no_frame_unless_a_request_waits_for_one() -> None:
    assert changes_frame(Changes(skipped=[("x", "duplicate")])) is None
    assert changes_frame(Changes()) is None
    assert changes_frame(Changes(), "r2") == MemoryChanged(id="r2")


def test_emitted_events_name_each_kind_of_change_with_its_facts() -> None:
    bus, seen = EventBus(), list[Event]()
    bus.listen(seen.append)
    emit_changes(bus, EVERY_KIND, "u1", "s1")
    emit_changes(bus, Changes(skipped=[("x", "duplicate")]), "u1", "s1")

    conflict = {"id": "fact_00000001", "kept_id": "fact_00000009", "reason": "pinned"}

    def listed(fact: Fact) -> list[dict[str, str]]:
        return [{"id": fact.id, "content": fact.content, "category": "knowledge"}]

    assert [(e.kind, e.user_id, e.session_id, e.data) for e in seen] == [
        ("facts.added", "u1", "s1", {"facts": listed(A)}),
        ("facts.reinforced", "u1", "s1", {"facts": listed(B)}),
        ("facts.superseded", "u1", "s1", {"facts": listed(C)}),
        ("facts.evicted", "u1", "s1", {"facts": listed(D)}),
        ("facts.conflicted", "u1", "s1", {"conflicts": [conflict]}),
    ]


# -- learning and hand-made facts ----------------------------------------------------------


async def test_learning_stores_known_categories_and_logs_the_rejected_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "mnemo.facts")
    async with world() as w:
        changes = await w.learn(
            extracted("Reads runes", "Runes"),
            extracted("Likes green tea", " Preference ", permanence="forever"),
            extracted("Knows Rust", "fact", permanence="volatile", confidence=0.9),
            extracted("Plays chess", "pattern", confidence=0.3),
            scope="app1",
        )
    assert [r.getMessage() for r in caplog.records] == [
        "rejected fact with unknown category 'Runes': Reads runes",
        "skipped fact (low confidence): Plays chess",
    ]
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO"]
    assert changes.skipped == [("Plays chess", "low confidence")]
    tea, rust = (s.fact for s in changes.added)
    assert w.facts.of() == {"Likes green tea": tea, "Knows Rust": rust}
    kind = "category permanence source extractor"
    assert pick(tea, kind) == ("preference", "standard", "inferred", "llm")
    assert pick(tea, "user_id scope session_id created_at") == ("u1", "app1", "s1", NOW)
    assert pick(rust, "category permanence source") == ("knowledge", "volatile", "user_stated")
    assert [s.vector for s in changes.added] == await EMBED.embed(["Likes green tea", "Knows Rust"])


@pytest.mark.parametrize(
    ("confidence", "extractor", "source", "expected"),
    [
        (0.89, "llm", "system", "system"),
        (0.9, "llm", "system", "user_stated"),
        (0.6, "rules", "system", "user_stated"),
    ],
)
async def test_a_fact_counts_as_user_stated_when_sure_or_read_by_the_rules(
    confidence: float, extractor: str, source: str, expected: str
) -> None:
    async with world() as w:
        fact = extracted("Likes green tea", confidence=confidence)
        changes = await w.learn(fact, extractor=extractor, source=source)
    [added] = changes.added
    assert (added.fact.source, added.fact.extractor) == (expected, extractor)


async def test_learning_nothing_acceptable_returns_no_changes_without_the_writer() -> None:
    release = anyio.Event()
    async with world() as w, anyio.create_task_group() as tg:
        tg.start_soon(w.writer.call, release.wait)
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(1):
            changes = await w.learn(extracted("x", "nope"))
        release.set()
    assert changes == Changes()


@pytest.mark.parametrize(
    ("content", "category"),
    [
        ("I work at Spotify", "project"),
        ("I like it when it rains", "preference"),
        ("The capital of France is Paris", "knowledge"),
    ],
)
async def test_a_fact_remembered_without_a_category_gets_a_guessed_one(
    content: str, category: str
) -> None:
    async with world() as w:
        [added] = (await w.remember(content)).added
    assert added.fact.category == category


async def test_a_remembered_fact_is_stated_by_hand_with_the_structure_it_reads_as() -> None:
    async with world(manual_confidence=0.65) as w:
        [color] = (await w.remember("My favorite color is blue", pinned=True)).added
        [meat] = (await w.remember("I don't eat meat", category="Fact", session_id=None)).added
        [anna] = (await w.remember("My sister Anna lives in Oslo", scope="app1")).added
        [plain] = (await w.remember("The capital of France is Paris")).added
    structure = "subject predicate key value relation negated"
    assert [pick(s.fact, structure) for s in (color, meat, anna, plain)] == [
        ("user", "favorite", "color", "blue", None, False),
        ("user", "eats", None, "meat", None, True),
        ("Anna", "lives_in", None, "Oslo", "sister", False),
        (None, None, None, None, None, False),
    ]
    assert pick(color.fact, "confidence source extractor") == (0.65, "user_stated", "manual")
    assert pick(color.fact, "pinned session_id scope") == (True, "s1", "global")
    assert pick(meat.fact, "pinned session_id category") == (False, None, "knowledge")
    assert (color.vector, anna.fact.scope) == (EMBED.embed_one(color.fact.content), "app1")


async def test_remembering_with_an_unknown_category_names_the_known_ones() -> None:
    async with world() as w:
        known = "project, preference, identity, goal, correction, knowledge, behavior, context"
        with pytest.raises(ValueError, match=rf"^unknown category 'runes'; known: {known}$"):
            await w.remember("Reads runes", category="runes")
    assert w.facts.writes == []


@pytest.mark.parametrize("error", [OSError("disk gone"), ValueError("bad row"), RuntimeError("x")])
async def test_a_store_fault_fails_learning_as_an_unavailable_archive(error: Exception) -> None:
    async with world(Recorder(fail=error)) as w:
        with pytest.raises(ArchiveUnavailable) as raised:
            await w.remember("Likes green tea")
    assert str(raised.value) == str(error)


async def test_a_mnemo_error_of_the_store_reaches_the_caller_as_it_is() -> None:
    error = Rejected("too big")
    async with world(Recorder(fail=error)) as w:
        with pytest.raises(Rejected) as raised:
            await w.remember("Likes green tea")
    assert raised.value is error


class ShortEmbedder(HashEmbedder):
    """Answers one vector fewer than it was given texts."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return (await super().embed(texts))[1:]


async def test_an_embedder_answering_too_few_vectors_fails_learning_and_imports() -> None:
    async with world() as w:
        keeper = FactKeeper(
            MemoryStore(facts=w.facts), ShortEmbedder(), w.writer, Settings(), FixedClock()
        )
        two = [extracted("Likes tea"), extracted("Knows Rust")]
        with pytest.raises(ValueError, match="zip"):
            await keeper.learn("u1", two, session_id=None, scope="global", extractor="llm")
        with pytest.raises(ValueError, match="zip"):
            await keeper.import_facts("u1", [line("l1", "Likes tea"), line("l2", "Knows Rust")])
    assert w.facts.writes == []


# -- one batch of jobs ---------------------------------------------------------------------


async def test_jobs_in_one_batch_see_each_others_reinforcements_and_write_each_fact_once() -> None:
    async with world() as w:
        put(w.facts, make("fact_00000001", "Likes green tea", category="preference"))
        results = await w.batch(
            lambda: w.remember("Likes green tea"),
            lambda: w.remember("Likes green tea"),
            lambda: w.remember("Knows Rust"),
            lambda: w.remember("Knows Rust"),
        )
    assert [r.updated[0].mention_count for r in results[:2]] == [2, 3]
    assert results[3].updated[0].id == results[2].added[0].fact.id
    assert {c: f.mention_count for c, f in w.facts.of().items()} == {
        **{"Likes green tea": 3, "Knows Rust": 2}
    }
    # New and reinforced facts in one write: no reader sees one without the other.
    assert w.facts.writes == [("put", "Knows Rust", "Likes green tea")]
    assert all(s.vector == EMBED.embed_one(s.fact.content) for s in w.facts.facts.values())


async def test_a_fact_superseded_earlier_in_a_batch_is_no_longer_active_for_later_jobs() -> None:
    async with world() as w:
        lyon = {"subject": "user", "predicate": "lives_in", "value": "Lyon"}
        put(w.facts, make("fact_00000001", "I live in Lyon", **lyon))
        first, second = await w.batch(
            lambda: w.remember("I live in Paris"), lambda: w.remember("I live in Lyon")
        )
    assert [f.id for f in first.superseded] == ["fact_00000001"]
    assert [f.content for f in second.superseded] == ["I live in Paris"]
    assert [s.fact.content for s in second.added] == ["I live in Lyon"]
    facts = await w.facts.facts_of("u1", active_only=False)
    assert sorted((s.fact.content, s.fact.validity) for s in facts) == [
        ("I live in Lyon", "active"),
        ("I live in Lyon", "superseded"),
        ("I live in Paris", "superseded"),
    ]
    # The new facts and the superseded one in one write: never seen half done.
    assert w.facts.writes == [("put", "I live in Paris", "I live in Lyon", "I live in Lyon")]


async def test_facts_evicted_in_a_batch_are_deleted_once_and_new_ones_never_written() -> None:
    async with world(max_facts=1) as w:
        old = {"created_at": NOW - 9 * DAY, "last_seen": NOW - 9 * DAY}
        put(w.facts, make("fact_00000001", "Knows Rust", **old))
        put(w.facts, make("fact_00000002", "Old", user_id="u2"))
        results = await w.batch(
            lambda: w.remember("Knows Rust"),  # reinforced, then evicted
            lambda: w.remember("Likes green tea"),  # evicts it, then is evicted itself
            lambda: w.remember("Plays chess"),
            lambda: w.remember("Knows Rust"),  # evicted: a new fact again
            lambda: w.remember("Likes jazz", user_id="u2"),
        )
    removed = [[f.content for f in r.removed] for r in results]
    assert removed == [[], ["Knows Rust"], ["Likes green tea"], ["Plays chess"], ["Old"]]
    assert list(w.facts.of()) == ["Knows Rust"]
    assert w.facts.of()["Knows Rust"].id != "fact_00000001"
    assert w.facts.writes == [
        ("add", "Knows Rust", "Likes jazz"),
        ("delete", "u1", "fact_00000001", False),
        ("delete", "u2", "fact_00000002", False),
    ]
