"""A cluster node that froze after its "still home" check writes late: once the user's
new node has fenced them (their rows carry its higher epoch), every update, merge and
delete of the late writer changes nothing. Two stores on one data directory stand for
the two nodes; each node's epoch is what its lease said."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import anyio
import msgspec
import pytest

from actors.errors import NotHome
from memory.episodes import new_episode
from memory.facts import Stored
from memory.hashing import HashEmbedder
from memory.recall import said
from memory.rules import StoredRule, new_rule
from schemas.records import AppNote, ArchivedMessage, Entity, UserProfile, WorkingMemory
from server.adapters.lance_common import quote_all
from server.adapters.lance_epochs import EPOCH
from server.adapters.lance_fences import Batches, KeptRecords
from server.adapters.lance_store import LanceStore
from testing.records import make_fact
from tests.stored_rows import message

pytestmark = pytest.mark.anyio
_T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
_embedder = HashEmbedder()
_USER = "cy"


def _fact(user: str, fact_id: str, content: str) -> Stored:
    return Stored(make_fact(fact_id, user_id=user, content=content), _embedder.embed_one(content))


@pytest.fixture
async def nodes(tmp_path: Path) -> AsyncIterator[tuple[LanceStore, LanceStore, KeptRecords]]:
    """The old node's store (epoch 1) and the new node's (epoch 2), one directory."""
    old = LanceStore(tmp_path / "db", embedder=_embedder, shared=True)
    new = LanceStore(tmp_path / "db", embedder=_embedder, shared=True)
    await old.open()
    await new.open()
    records = KeptRecords()
    old.epochs.serve_with(lambda _user: 1, records=records)
    new.epochs.serve_with(lambda _user: 2, records=records)
    yield old, new, records
    await old.aclose()
    await new.aclose()


def _entity(name: str) -> Entity:
    return Entity(
        id="ent_00000001",
        user_id=_USER,
        canonical_name=name,
        entity_type="person",
        created_at=_T0,
        updated_at=_T0,
    )


def _note(content: str) -> AppNote:
    return AppNote(
        id="note_00000001",
        user_id=_USER,
        app_id="chat",
        content=content,
        created_at=_T0,
        updated_at=_T0,
    )


def _rule(content: str) -> StoredRule:
    rule = new_rule("rule_00000001", _USER, content, _T0)
    return StoredRule(rule, _embedder.embed_one(content))


def _working(topic: str) -> WorkingMemory:
    return WorkingMemory(
        session_id="s1",
        current_topic=topic,
        context_variables={},
        turn_count=1,
        last_emotion=None,
        created_at=_T0,
        updated_at=_T0,
    )


def _writes(store: LanceStore, word: str) -> list[Awaitable[None]]:
    """A replacement of every kind of row the user has."""
    episode = new_episode("ep_0000000000000001", _USER, f"A {word} day", "work", _T0)
    return [
        store.facts.put_facts([_fact(_USER, "fact_00000001", f"Likes {word} tea")]),
        store.entities.put_entities([_entity(f"{word} Ann")]),
        store.rules.put_rules([_rule(f"Answer in {word} words")]),
        store.facts.put_notes([_note(f"Talked about {word} tea")]),
        store.facts.put_profile(UserProfile(user_id=_USER, work=f"{word} work")),
        store.put_working([(_USER, _working(f"{word} summary"))]),
        store.episodes.put_episodes([(episode, _embedder.embed_one(episode.content))]),
    ]


async def _write_everything(store: LanceStore, word: str) -> None:
    await store.facts.put_facts([_fact(_USER, "fact_00000002", "Lives in Oslo")])
    for write in _writes(store, word):
        await write


async def _rows(store: LanceStore, table: str, users: Sequence[str] = (_USER,)) -> dict[int, int]:
    """How many of the users' rows ``table`` holds, by epoch (read as a tool would)."""
    where = f"user_id IN {quote_all(users)}"
    found = await (await store._db.open_table(table)).query().where(where).to_list()
    return dict(Counter(row["epoch"] for row in found))


async def _state(store: LanceStore) -> dict[str, object]:
    await store.refresh()
    store.forget(lambda _user: True, "")
    facts = await store.facts.get_facts(_USER, ["fact_00000001", "fact_00000002"])
    working = await store.get_working(_USER, "s1")
    profile = await store.facts.get_profile(_USER)
    return {
        "facts": sorted(s.fact.content for s in facts),
        "entities": [e.canonical_name for e in await store.entities.entities_of(_USER)],
        "rules": [s.rule.content for s in await store.rules.rules_of(_USER)],
        "notes": [n.content for n in await store.facts.notes_of(_USER, "chat")],
        "profile": profile.work if profile else None,
        "working": working.current_topic if working else None,
        "episodes": [e.content for e, _ in await store.episodes.episodes_of(_USER)],
    }


async def test_a_late_writers_updates_merges_and_deletes_change_nothing_once_the_user_is_fenced(
    nodes: tuple[LanceStore, LanceStore, KeptRecords],
) -> None:
    old, new, records = nodes
    refused: list[str] = []
    old.epochs.serve_with(lambda _user: 1, refused.append, records)
    await _write_everything(old, "green")
    before = await _state(old)
    await new.refresh()
    assert await new.epochs.restamp(_USER, 2) == 8  # every row of the user, every table
    assert await new.epochs.restamp(_USER, 2) == 0  # once
    # The old node, frozen past its check, wakes and writes what it was writing: each
    # replacement and delete is refused, and the node told so.
    deletes = [
        old.facts.delete_facts(_USER, ["fact_00000002"], purge_now=True),
        old.entities.clear_entities(_USER),
        old.rules.clear_rules(_USER),
        old.facts.clear_notes(_USER),
        old.facts.delete_profile(_USER),
        old.delete_working(_USER, "s1"),
        old.episodes.clear_episodes(_USER),
    ]
    for write in [*_writes(old, "black"), *deletes]:
        with pytest.raises(NotHome, match="newer node"):
            await write
    assert refused == [_USER] * 14
    # An append cannot be refused: its row lands, but the new node does not read it,
    # and the user's next fence deletes it. The late writer learns it afterwards.
    with pytest.raises(NotHome, match="newer node"):
        await old.facts.add_facts([_fact(_USER, "fact_00000003", "Likes black coffee")])
    assert refused[-1] == _USER
    assert await _state(new) == before
    assert before["facts"] == ["Likes green tea", "Lives in Oslo"]
    assert await _rows(new, "facts") == {1: 1, 2: 2}
    # The new node writes as ever.
    await _write_everything(new, "white")
    await new.facts.delete_facts(_USER, ["fact_00000002"], purge_now=True)
    after = await _state(old)
    assert after["facts"] == ["Likes white tea"]
    assert after["entities"] == ["white Ann"]
    assert after["working"] == "white summary"
    # A third node fences the user: the row appended late is gone, the rest moves on.
    assert await new.epochs.restamp(_USER, 3) == 7
    assert await _rows(new, "facts") == {3: 1}


async def test_a_single_server_writes_epoch_zero_and_a_node_may_not_write_a_user_it_has_not_fenced(
    tmp_path: Path,
) -> None:
    store = LanceStore(tmp_path / "db", embedder=_embedder)
    await store.open()
    try:
        await _write_everything(store, "green")
        assert (await _state(store))["facts"] == ["Likes green tea", "Lives in Oslo"]

        def unfenced(user_id: str) -> int:
            raise NotHome("not fenced")

        store.epochs.serve_with(unfenced)
        with pytest.raises(NotHome):
            await store.facts.put_facts([_fact(_USER, "fact_00000001", "Likes red tea")])
        with pytest.raises(NotHome):
            await store.facts.delete_facts(_USER, ["fact_00000001"], purge_now=False)
        store.epochs.serve_with(lambda _user: 0)
        assert (await _state(store))["facts"] == ["Likes green tea", "Lives in Oslo"]
    finally:
        await store.aclose()


async def test_users_fenced_at_once_share_one_update_of_each_table(tmp_path: Path) -> None:
    store = LanceStore(tmp_path / "db", embedder=_embedder, shared=True)
    await store.open()
    try:
        users = [f"user-{n}" for n in range(12)]
        store.epochs.serve_with(lambda _user: 1)
        await store.facts.add_facts([_fact(u, "fact_00000001", f"{u} likes tea") for u in users])
        facts = await store._db.open_table("facts")
        before = await facts.version()
        store.epochs.serve_with(lambda _user: 2, records=KeptRecords())
        moved: dict[str, int] = {}

        async def fence(user: str) -> None:
            moved[user] = await store.epochs.restamp(user, 2)

        async with anyio.create_task_group() as tasks:
            for user in users:
                tasks.start_soon(fence, user)
        assert moved == dict.fromkeys(users, 1)
        await facts.checkout_latest()
        assert await facts.version() - before <= 2  # the first alone, then the rest at once
        assert await _rows(store, "facts", users) == {2: 12}
    finally:
        await store.aclose()


async def _stored_then_fenced(
    nodes: tuple[LanceStore, LanceStore, KeptRecords], said: Sequence[ArchivedMessage]
) -> list[str]:
    """The old node (epoch 1) stores ``said``, then the new one (epoch 2) fences the
    user; the list the old node's refusals are told to."""
    old, new, records = nodes
    refused: list[str] = []
    old.epochs.serve_with(lambda _user: 1, refused.append, records, lambda _user: 1)
    new.epochs.serve_with(lambda _user: 2, None, records, lambda _user: 2)
    await old.append_messages(said, [_embedder.embed_one(m.text) for m in said])
    await new.refresh()
    await new.epochs.restamp(_USER, 2)  # messages are not re-stamped: they keep epoch 1
    return refused


async def test_a_late_clear_of_a_users_messages_leaves_those_a_newer_node_stored(
    nodes: tuple[LanceStore, LanceStore, KeptRecords],
) -> None:
    old, new, _records = nodes
    refused = await _stored_then_fenced(nodes, [message(1, "said to the old node", user=_USER)])
    assert await _rows(new, "messages") == {1: 1}
    later = message(2, "said to the new node", user=_USER)
    await new.append_messages([later], [_embedder.embed_one(later.text)])
    # The old node's clear, late, once its view of the table holds the new message too:
    # the message it held goes (its user asked), not the new one, and it is told.
    await old.refresh()
    with pytest.raises(NotHome, match="newer node"):
        await old.clear_messages(_USER)
    assert refused == [_USER]
    assert await _rows(new, "messages") == {2: 1}


async def test_a_late_delete_of_a_message_brings_back_no_answer_a_newer_node_deleted(
    nodes: tuple[LanceStore, LanceStore, KeptRecords], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new, _records = nodes
    asked = message(1, "my locker code is 4471", user=_USER)
    answer = msgspec.structs.replace(  # its search text quotes the question
        message(2, "Noted: locker code 4471", user=_USER, role="assistant"),
        context=said("user", asked.text),
    )
    kept = message(3, "what a day", user=_USER)
    await _stored_then_fenced(nodes, [asked, answer, kept])
    read_before = await old._answers_to(asked)  # the old node read this, then froze
    assert [m.id for m in read_before] == [answer.id]
    assert await new.delete_message(_USER, answer.id)

    async def as_read_before(_message: ArchivedMessage) -> list[ArchivedMessage]:
        return read_before

    monkeypatch.setattr(old, "_answers_to", as_read_before)
    # It wakes and deletes the question: that goes (the user asked); the answer whose
    # search text quoted it, as the old node read it, is not added back.
    await old.refresh()
    assert await old.delete_message(_USER, asked.id)
    await new.refresh()
    new.forget(lambda _user: True, "")
    assert [m.id for m in (await new.list_messages(_USER, limit=10, offset=0))[0]] == [kept.id]


async def test_a_late_delete_of_a_message_leaves_the_copy_a_newer_node_stored_again(
    nodes: tuple[LanceStore, LanceStore, KeptRecords],
) -> None:
    old, new, _records = nodes
    said = message(1, "my locker code is 4471", user=_USER)
    refused = await _stored_then_fenced(nodes, [said])
    # The user deletes the message on the new node and imports it again (same id).
    assert await new.delete_message(_USER, said.id)
    await new.append_messages([said], [_embedder.embed_one(said.text)])
    # The old node's delete of it, late: refused, and the new node's copy stays.
    await old.refresh()
    with pytest.raises(NotHome, match="newer node"):
        await old.delete_message(_USER, said.id)
    assert refused == [_USER]
    assert await _rows(new, "messages") == {2: 1}


async def test_a_cancelled_request_leaves_the_others_of_its_batch_to_be_fenced() -> None:
    class Slow(KeptRecords):
        async def recorded(self, user_id: str) -> int:
            await anyio.sleep(0.2)
            return await super().recorded(user_id)

    batches, records = Batches(EPOCH), Slow()
    fenced: list[str] = []
    scopes: list[anyio.CancelScope] = []

    async def fence(user_id: str, after: float, *, cancellable: bool = False) -> None:
        await anyio.sleep(after)
        with anyio.CancelScope() as scope:
            if cancellable:
                scopes.append(scope)
            await batches.fence(user_id, 2, [], records)
            fenced.append(user_id)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(fence, "first", 0.0)  # runs alone; the next two wait as one batch
        tasks.start_soon(functools.partial(fence, "leader", 0.05, cancellable=True))
        tasks.start_soon(fence, "follower", 0.1)
        await anyio.sleep(0.3)  # the leader's batch (itself and the follower) is running
        scopes[0].cancel()
    assert fenced == ["first", "follower"]
    assert records.epochs == {"first": 2, "follower": 2}
