"""Facts, log entries and links journaled by the LanceDB store (on a temp directory): read
before they reach their tables, moved in one write per table, replayed after a crash."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import msgspec
import pytest

from actors.audit import ACTING_FOR
from actors.errors import ArchiveUnavailable
from actors.keeper import FactKeeper
from actors.writer import ArchiveWriter
from memory.facts import Stored
from memory.hashing import HashEmbedder
from schemas.records import MemoryEvent, MemoryLink
from schemas.settings import Settings
from server.adapters.lance_store import LanceStore
from server.adapters.learned_journal import Moving
from server.app import SystemClock
from testing.records import make_fact

pytestmark = pytest.mark.anyio

_T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
_embedder = HashEmbedder()


def fact(n: int, content: str, **fields: object) -> Stored:
    made = make_fact(f"fact_{n:08x}", content=content, created_at=_T0 + timedelta(minutes=n))
    return Stored(msgspec.structs.replace(made, **fields), _embedder.embed_one(content))


def event(n: int, fact_id: str) -> MemoryEvent:
    return MemoryEvent(
        id=f"evt_{n:08x}",
        user_id="u1",
        event_type="fact_created",
        created_at=_T0 + timedelta(minutes=n),
        actor="rest",
        payload={"fact_id": fact_id},
    )


def link(source: str, target: str) -> MemoryLink:
    return MemoryLink(
        user_id="u1",
        source_type="fact",
        source_id=source,
        target_type="fact",
        target_id=target,
        relation="supersedes",
        created_at=_T0,
    )


def opened(root: Path) -> LanceStore:
    return LanceStore(root / "db", embedder=_embedder, journal=root / "journal")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[LanceStore]:
    store = opened(tmp_path)
    await store.open()
    yield store
    await store.aclose()


def journal_files(root: Path) -> list[Path]:
    return sorted((root / "learned").glob("*"))


async def what_is_read(store: LanceStore) -> dict[str, object]:
    """Every read of facts, log entries and links, as the server's routes make them."""
    listed, total = await store.facts.list_facts("u1", limit=10, offset=0, validity=None)
    hits = await store.facts.search_facts(
        "u1", "green tea", _embedder.embed_one("green tea"), k=5, scope=None
    )
    return {
        "listed": sorted(f.id for f in listed),
        "total": total,
        "active": sorted(s.fact.id for s in await store.facts.facts_of("u1")),
        "all": sorted(s.fact.id for s in await store.facts.facts_of("u1", active_only=False)),
        "got": [s.fact.content for s in await store.facts.get_facts("u1", ["fact_00000001"])],
        "superseded": await store.facts.count_facts("u1", "superseded", scope=None),
        "found": sorted(h.stored.fact.id for h in hits),
        "events": [e.id for e in await store.events.events_of("u1", limit=10)],
        "links": [(k.source_id, k.target_id) for k in await store.links.links_of_user("u1")],
    }


async def write_some(store: LanceStore) -> None:
    """Two facts, one then superseded by a third, one deleted; their log and a link."""
    await store.facts.add_facts([fact(1, "Prefers green tea"), fact(2, "Lives in Oslo")])
    await store.facts.put_facts(
        [fact(2, "Lives in Oslo", validity="superseded"), fact(3, "Lives in Bergen")]
    )
    await store.facts.add_facts([fact(4, "Owns a red bike")])
    await store.facts.delete_facts("u1", ["fact_00000004"], purge_now=False)
    await store.events.append_events([event(1, "fact_00000001"), event(2, "fact_00000003")])
    assert await store.links.add_links([link("fact_00000003", "fact_00000002")]) == 1
    assert await store.links.add_links([link("fact_00000003", "fact_00000002")]) == 0


EXPECTED = {
    "listed": ["fact_00000001", "fact_00000002", "fact_00000003"],
    "total": 3,
    "active": ["fact_00000001", "fact_00000003"],
    "all": ["fact_00000001", "fact_00000002", "fact_00000003"],
    "got": ["Prefers green tea"],
    "superseded": 1,
    "found": ["fact_00000001", "fact_00000003"],
    "events": ["evt_00000002", "evt_00000001"],
    "links": [("fact_00000003", "fact_00000002")],
}


async def test_writes_are_read_before_they_reach_the_tables_and_the_same_after(
    store: LanceStore, tmp_path: Path
) -> None:
    await write_some(store)
    assert store.learned_pending > 0
    assert await what_is_read(store) == EXPECTED
    assert await store.flush_learned() > 0
    assert store.learned_pending == 0
    assert journal_files(tmp_path) == []
    assert await what_is_read(store) == EXPECTED
    assert await store.flush_learned() == 0


async def test_journaled_writes_come_back_after_a_crash_and_land_once(tmp_path: Path) -> None:
    crashed = opened(tmp_path)
    await crashed.open()
    await write_some(crashed)
    assert journal_files(tmp_path) != []
    # Never closed: the process died with its writes in the journal only.
    assert crashed._learned is not None
    crashed._learned.close()  # (its file handle only, as the process's end would)
    again = opened(tmp_path)
    await again.open()
    try:
        assert again.learned_pending == 0  # replayed into the tables at open
        assert journal_files(tmp_path) == []
        assert await what_is_read(again) == EXPECTED
    finally:
        await again.aclose()


async def test_a_move_that_fails_part_way_is_redone_without_writing_anything_twice(
    store: LanceStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await write_some(store)
    moved = store.links.move

    async def unreachable(items: object) -> None:
        raise OSError("the links table is unreachable (test)")

    monkeypatch.setattr(store.links, "move", unreachable)
    with pytest.raises(ArchiveUnavailable):
        await store.flush_learned()  # the facts and the log landed, the links did not
    assert store.learned_pending > 0
    assert await what_is_read(store) == EXPECTED
    monkeypatch.setattr(store.links, "move", moved)
    assert await store.flush_learned() > 0
    assert journal_files(tmp_path) == []
    assert await what_is_read(store) == EXPECTED


async def test_a_fact_deleted_for_good_leaves_no_journal_file_that_holds_it(
    store: LanceStore, tmp_path: Path
) -> None:
    await store.facts.add_facts([fact(1, "Prefers green tea"), fact(5, "Secret zqxv plan")])
    assert any(b"zqxv" in p.read_bytes() for p in journal_files(tmp_path))
    assert await store.facts.delete_facts("u1", ["fact_00000005"], purge_now=True) == 1
    assert not any(b"zqxv" in p.read_bytes() for p in journal_files(tmp_path))
    assert [s.fact.id for s in await store.facts.facts_of("u1")] == ["fact_00000001"]


async def test_a_write_during_a_move_stays_pending_for_the_next_one(
    store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.facts.add_facts([fact(1, "Prefers green tea")])
    move = store.facts.move

    async def write_meanwhile(moving: Moving) -> None:
        await store.facts.add_facts([fact(6, "Plays the cello")])
        await move(moving)

    monkeypatch.setattr(store.facts, "move", write_meanwhile)
    assert await store.flush_learned() == 1
    assert store.learned_pending == 1
    monkeypatch.setattr(store.facts, "move", move)
    assert await store.flush_learned() == 1
    ids = sorted(s.fact.id for s in await store.facts.facts_of("u1", active_only=False))
    assert ids == ["fact_00000001", "fact_00000006"]


async def test_a_fact_added_by_hand_is_not_held_up_by_a_long_write_at_the_writer(
    store: LanceStore,
) -> None:
    writer = ArchiveWriter(store, _embedder, linger=0)
    keeper = FactKeeper(store, _embedder, writer, Settings(), SystemClock())
    release = anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        ACTING_FOR.set("u0")
        tg.start_soon(writer.call, release.wait)  # another user's consolidation, say
        await anyio.wait_all_tasks_blocked()
        ACTING_FOR.set("u1")
        with anyio.fail_after(5):
            changes = await keeper.remember(
                "u1",
                "Prefers green tea",
                category="preference",
                pinned=False,
                session_id=None,
                scope="global",
            )
        assert not release.is_set()  # answered while the writer was still busy
        [added] = changes.added
        assert [s.fact.id for s in await store.facts.facts_of("u1")] == [added.fact.id]
        assert store.learned_pending > 0  # durable in the journal, moved later
        release.set()
        tg.cancel_scope.cancel()
