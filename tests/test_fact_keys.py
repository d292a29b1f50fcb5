"""Seed 002's uniqueness keys, as a property: however many sessions store facts at once, no
two active facts share a one-valued key: (entity, scope, predicate) for a fact about an
entity, (scope, subject, predicate) otherwise."""

from __future__ import annotations

from collections import Counter

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.keeper import FactKeeper, Stated
from actors.writer import ArchiveWriter
from memory.hashing import HashEmbedder
from memory.predicates import Vocabulary
from schemas.records import Entity
from schemas.settings import Settings
from testing.records import T0
from tests.fakes import MemoryStore, SteppingClock

# One stored fact: (session, subject, predicate, value, entity); entity 0 is none.
_Store = tuple[int, str, str, str, int]
_stores = st.lists(
    st.tuples(
        st.integers(0, 5),
        st.sampled_from(["user", "Ana"]),
        st.sampled_from(["lives_in", "employer", "likes", "age"]),
        st.sampled_from(["Lyon", "Porto", "Acme", "tea", "jazz", "30", "31"]),
        st.integers(0, 2),
    ),
    min_size=1,
    max_size=40,
)
ENTITIES = ["ent_00000001", "ent_00000002"]


async def _store_at_once(stores: list[_Store]) -> MemoryStore:
    store = MemoryStore()
    await store.entities.put_entities(
        [
            Entity(
                id=e,
                user_id="u1",
                canonical_name=e,
                entity_type="person",
                created_at=T0,
                updated_at=T0,
            )
            for e in ENTITIES
        ]
    )
    embedder = HashEmbedder()
    writer = ArchiveWriter(store, embedder, linger=0)
    keeper = FactKeeper(store, embedder, writer, Settings(), SteppingClock())

    async def one(session: int, subject: str, predicate: str, value: str, entity: int) -> None:
        await keeper.remember(
            "u1",
            f"{subject} (entity {entity}) {predicate} {value}",
            category="knowledge",
            pinned=False,
            session_id=f"s{session}",
            scope="global",
            stated=Stated(
                subject=subject,
                predicate=predicate,
                entity_id=ENTITIES[entity - 1] if entity else None,
            ),
        )

    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        async with anyio.create_task_group() as sessions:
            for item in stores:
                sessions.start_soon(one, *item)
        tg.cancel_scope.cancel()
    return store


@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(_stores)
def test_no_two_active_facts_ever_share_a_one_valued_key(stores: list[_Store]) -> None:
    store = anyio.run(_store_at_once, stores)
    vocabulary = Vocabulary()
    active = [s.fact for s in store.facts.facts.values() if s.fact.validity == "active"]
    keys = Counter(
        (f.entity_id, f.scope, f.predicate)
        if f.entity_id
        else (None, f.scope, f.subject, f.predicate)
        for f in active
        if vocabulary.cardinality(f.predicate) == "one"
    )
    assert [key for key, n in keys.items() if n > 1] == []
    # ... and every one-valued key that was stored holds exactly one active fact.
    stored = {
        (ENTITIES[e - 1], "global", p) if e else (None, "global", s, p)
        for _, s, p, _, e in stores
        if vocabulary.cardinality(p) == "one"
    }
    assert set(keys) == stored
    # A many-valued predicate keeps every value it was given.
    likes = {(s, v, e) for _, s, p, v, e in stores if p == "likes"}
    kept = {
        (f.subject, f.content.rsplit(" ", 1)[-1], f.entity_id)
        for f in active
        if f.predicate == "likes"
    }
    assert len(kept) == len({(s, v, ENTITIES[e - 1] if e else None) for s, v, e in likes})
