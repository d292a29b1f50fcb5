"""What the LanceDB store keeps in memory for resolving and for ``memory_stats`` stays true.

Entities are kept per user and counts between writes (issue 20): every write of this
process is seen by the next read, and a resolve over the kept index finds exactly what
one over the plain list finds.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import msgspec
import pytest

from actors.entities import EntityKeeper
from actors.writer import ArchiveWriter
from memory import entities
from memory.entities import EntityIndex, _tier
from memory.episodes import new_episode
from memory.hashing import HashEmbedder
from memory.predicates import Vocabulary
from memory.rules import StoredRule, new_rule
from schemas.records import Entity, Episode
from server.adapters.lance_store import LanceStore
from tests.fakes import SteppingClock
from tests.stored_rows import stored_fact

pytestmark = pytest.mark.anyio
_T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
_embedder = HashEmbedder()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[LanceStore]:
    store = LanceStore(tmp_path / "db", embedder=_embedder)
    await store.open()
    yield store
    await store.aclose()


def _entity(n: int, name: str, *aliases: str, user: str = "u1") -> Entity:
    at = _T0 + timedelta(seconds=n)
    return Entity(
        id=f"ent_{n:08x}",
        user_id=user,
        canonical_name=name,
        entity_type="person",
        created_at=at,
        updated_at=at,
        aliases=list(aliases),
    )


async def _names(store: LanceStore, user: str = "u1") -> list[str]:
    return sorted(e.canonical_name for e in await store.entities.entities_of(user))


async def test_an_entity_created_updated_or_cleared_is_seen_by_the_next_read(
    store: LanceStore,
) -> None:
    await store.entities.put_entities([_entity(1, "Ana Souza", "Ana")])
    assert await _names(store) == ["Ana Souza"]  # read once, kept from now on
    await store.entities.put_entities([_entity(2, "Bruno Lima")])
    assert await _names(store) == ["Ana Souza", "Bruno Lima"]
    renamed = msgspec.structs.replace(_entity(1, "Ana Souza"), canonical_name="Ana S. Costa")
    await store.entities.put_entities([renamed])
    assert await _names(store) == ["Ana S. Costa", "Bruno Lima"]
    assert await _names(store, "u2") == []
    assert await store.entities.clear_entities("u1") == 2
    assert await _names(store) == []


async def test_the_kept_entities_are_what_a_fresh_read_of_the_table_finds(
    store: LanceStore, tmp_path: Path
) -> None:
    await store.entities.put_entities([_entity(n, f"Person {n}") for n in range(5)])
    await store.entities.entities_of("u1")
    changed = msgspec.structs.replace(_entity(2, "Person 2"), meta={"merged_into": "ent_x"})
    await store.entities.put_entities([changed, _entity(9, "Person 9")])
    kept = await store.entities.entities_of("u1")
    fresh = LanceStore(tmp_path / "db", embedder=_embedder)
    await fresh.open()
    try:
        assert kept == await fresh.entities.entities_of("u1")
    finally:
        await fresh.aclose()


async def test_a_resolve_sees_an_entity_created_renamed_or_merged_just_before(
    store: LanceStore,
) -> None:
    clock = SteppingClock()
    writer = ArchiveWriter(store, _embedder)
    keeper = EntityKeeper(store, writer, clock, Vocabulary())
    async with anyio.create_task_group() as group:
        await group.start(writer.run)
        assert await keeper.resolve("u1", "Ana") == []
        ana = await keeper.create("u1", "Ana Souza", "person", aliases=["Ana"])
        assert [r.entity.id for r in await keeper.resolve("u1", "Ana")] == [ana.id]
        await keeper.update("u1", ana.id, canonical_name="Ana Costa")
        found = await keeper.resolve("u1", "Ana Costa")
        assert [(r.entity.id, r.name_match) for r in found] == [(ana.id, "exact")]
        other = await keeper.create("u1", "Ana Maria", "person")
        assert await keeper.merge("u1", other.id, ana.id) is not None
        assert [r.entity.id for r in await keeper.resolve("u1", "Ana Maria")] == [ana.id]
        await store.entities.clear_entities("u1")
        assert await keeper.resolve("u1", "Ana") == []
        group.cancel_scope.cancel()


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("abcdeé ßSẞİ\u0131-'x") for _ in range(rng.randint(0, 8)))


def test_a_resolve_over_an_index_finds_what_each_entitys_tiers_find() -> None:
    rng = random.Random(20)
    for _ in range(200):
        found = [
            _entity(n, _word(rng) or "a", *(_word(rng) for _ in range(rng.randint(0, 3))))
            for n in range(rng.randint(0, 25))
        ]
        index = EntityIndex(found)
        for _ in range(20):
            name = _word(rng) if rng.random() < 0.7 else rng.choice(found or [_entity(0, "z")])
            name = name if isinstance(name, str) else name.canonical_name
            for fuzzy in (False, True):
                expected = [
                    (e.id, tier)
                    for e in sorted(found, key=lambda e: e.canonical_name)
                    if name.strip() and (tier := _tier(e, name.strip(), fuzzy)) is not None
                ]
                got = entities.resolve(index, name, enable_fuzzy=fuzzy)
                by_score = sorted(expected, key=lambda p: -entities.TIER_SCORES[p[1]])
                assert sorted((r.entity.id, r.name_match) for r in got) == sorted(expected)
                assert [r.name_match for r in got] == [t for _, t in by_score]


async def test_fact_counts_follow_every_write_of_the_users_facts(store: LanceStore) -> None:
    async def counts(scope: str | None = None) -> dict[str, int]:
        return await store.facts.fact_counts("u1", scope=scope)

    assert (await counts())["active"] == 0
    await store.facts.add_facts([stored_fact("u1", "fact_00000001", "Likes tea")])
    assert (await counts())["active"] == 1
    old = stored_fact("u1", "fact_00000001", "Likes tea", validity="superseded")
    await store.facts.put_facts([old, stored_fact("u1", "fact_00000002", "Likes coffee")])
    assert (await counts()) | {} == {
        "active": 1,
        "fading": 0,
        "superseded": 1,
        "expired": 0,
        "retracted": 0,
    }
    await store.facts.delete_facts("u1", ["fact_00000002"], purge_now=False)
    assert (await counts())["active"] == 0
    assert (await counts("work"))["superseded"] == 1
    await store.facts.clear_facts("u1")
    assert sum((await counts()).values()) == 0


async def test_rule_counts_follow_every_write_of_the_users_rules(store: LanceStore) -> None:
    def rule(n: int, **meta: object) -> StoredRule:
        made = new_rule(f"rule_{n:08x}", "u1", f"Rule {n}", _T0, scope="work")
        made = msgspec.structs.replace(made, meta=dict(meta))
        return StoredRule(made, _embedder.embed_one(made.content))

    assert (await store.rules.rule_counts("u1"))["candidate"] == 0
    await store.rules.put_rules([rule(1), rule(2)])
    assert (await store.rules.rule_counts("u1"))["candidate"] == 2
    assert (await store.rules.rule_counts("u1", scope="home"))["candidate"] == 0
    await store.rules.put_rules([rule(2, forgotten=True)])
    counts = await store.rules.rule_counts("u1", scope="work")
    assert (counts["candidate"], counts["forgotten"]) == (1, 1)
    await store.rules.delete_rules("u1", ["rule_00000001"])
    assert (await store.rules.rule_counts("u1"))["candidate"] == 0
    await store.rules.clear_rules("u1")
    assert (await store.rules.rule_counts("u1"))["forgotten"] == 0


async def test_episode_counts_follow_every_write_of_the_users_episodes(store: LanceStore) -> None:
    def episode(n: int, user: str = "u1") -> tuple[Episode, list[float]]:
        made = new_episode(f"ep_{n:016x}", user, f"Episode {n}", "work", _T0)
        return made, _embedder.embed_one(made.content)

    assert await store.episodes.episode_count("u1") == 0
    await store.episodes.add_episodes([episode(1), episode(2), episode(3, "u2")])
    assert await store.episodes.episode_count("u1") == 2
    await store.episodes.put_episodes([episode(4)])
    assert await store.episodes.episode_count("u1") == 3
    await store.episodes.delete_episodes("u1", ["ep_0000000000000001"])
    assert await store.episodes.episode_count("u1") == 2
    await store.episodes.clear_episodes("u1")
    assert await store.episodes.episode_count("u1") == 0
    assert await store.episodes.episode_count("u2") == 1
