"""The LanceDB store on a temp directory: paging, isolation, hybrid search, real deletion."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import lancedb
import msgspec
import numpy as np
import pyarrow as pa
import pytest
from lancedb.index import FTS

from actors.errors import ArchiveUnavailable
from memory.facts import Stored
from memory.hashing import HashEmbedder
from schemas.records import AppNote, ArchivedMessage, WorkingMemory
from server.adapters.lance_messages import messages_schema
from server.adapters.lance_store import LanceStore, StoreMismatch, quote
from server.adapters.message_entry import MessageEntry
from tests.stored_rows import MESSAGES_T0, everything_on_disk, message, put, stored_fact

pytestmark = pytest.mark.anyio

_embedder = HashEmbedder()


class _MovingStore(LanceStore):
    """Journaled, and every append moved into the table at once."""

    async def append_messages(
        self, rows: Sequence[ArchivedMessage], vectors: Sequence[Sequence[float]]
    ) -> None:
        await super().append_messages(rows, vectors)
        await self.flush_messages()


@pytest.fixture(params=["table", "journal", "journal, moved"])
async def store(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[LanceStore]:
    """Every test runs on a store that appends to the table, on one whose messages stay
    journaled, and on one that moves them from the journal into the table."""
    journal = None if request.param == "table" else tmp_path / "journal"
    kind = _MovingStore if request.param == "journal, moved" else LanceStore
    store = kind(tmp_path / "db", embedder=_embedder, journal=journal)
    await store.open()
    yield store
    await store.aclose()


async def test_list_pages_newest_first_with_total(store: LanceStore) -> None:
    await put(store, *(message(i, f"text {i}") for i in range(5)))
    page, total = await store.list_messages("u1", limit=2, offset=1)
    assert total == 5
    assert [m.turn for m in page] == [3, 2]
    assert page[0].meta == {"n": 3}
    assert page[0].at == MESSAGES_T0 + timedelta(minutes=3)


async def test_reads_never_cross_users(store: LanceStore) -> None:
    await put(store, message(1, "alice likes tea", user="alice"))
    await put(store, message(2, "bob likes tea", user="bob"))
    page, total = await store.list_messages("alice", limit=10, offset=0)
    assert (total, [m.text for m in page]) == (1, ["alice likes tea"])
    assert await store.get_message("alice", message(2, "").id) is None
    hits = await store.search_messages("alice", "likes tea", _embedder.embed_one("tea"), k=10)
    assert [m.user_id for m, _ in hits] == ["alice"]
    assert not await store.delete_message("alice", message(2, "").id)
    assert await store.clear_messages("alice") == 1
    assert (await store.list_messages("bob", limit=10, offset=0))[1] == 1


async def test_session_messages_are_oldest_first_and_limited(store: LanceStore) -> None:
    await put(store, *(message(i, f"m{i}") for i in range(6)), message(9, "x", session="s2"))
    found = await store.session_messages("u1", "s1", limit=3)
    assert [m.text for m in found] == ["m3", "m4", "m5"]


async def test_search_finds_chinese_text_by_word(store: LanceStore) -> None:
    await put(store, message(1, "我喜欢用 Python 写代码"), message(2, "今天天气很好"))
    hits = await store.search_messages("u1", "代码", _embedder.embed_one("代码"), k=1)
    assert [m.turn for m, _ in hits] == [1]


async def test_delete_removes_the_row_from_disk_including_old_versions(
    store: LanceStore, tmp_path: Path
) -> None:
    secret = "zebra-crossing-7731"
    await put(store, message(1, f"my password hint is {secret}"), message(2, "keep me"))
    assert await store.delete_message("u1", message(1, "").id)
    assert await store.get_message("u1", message(1, "").id) is None
    on_disk = everything_on_disk(tmp_path)
    assert secret.encode() not in on_disk
    assert b"keep me" in on_disk


async def test_a_delete_the_disk_fails_is_archive_unavailable_and_keeps_the_message(
    store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await put(store, message(1, "keep me"))

    async def failing(where: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store._messages, "delete", failing)
    with pytest.raises(ArchiveUnavailable, match="disk full"):
        await store.delete_message("u1", message(1, "").id)
    monkeypatch.undo()
    assert (await store.get_message("u1", message(1, "").id)) is not None


async def test_clear_removes_all_of_a_users_rows_from_disk(
    store: LanceStore, tmp_path: Path
) -> None:
    await put(store, message(1, "alpha-secret-one"), message(2, "beta-secret-two"))
    await put(store, message(3, "other user stays", user="u2"))
    assert await store.clear_messages("u1") == 2
    on_disk = everything_on_disk(tmp_path)
    assert b"alpha-secret-one" not in on_disk
    assert b"beta-secret-two" not in on_disk
    assert (await store.list_messages("u2", limit=5, offset=0))[1] == 1


async def test_filter_values_are_quoted_not_injected(store: LanceStore) -> None:
    await put(store, message(1, "private", user="alice"))
    assert quote("x' OR '1'='1") == "'x'' OR ''1''=''1'"
    assert await store.session_messages("alice", "s' OR user_id != '", limit=5) == []
    with pytest.raises(ValueError, match="invalid user id"):
        await store.list_messages("x' OR '1'='1", limit=5, offset=0)


async def test_working_memory_snapshots_upsert_and_delete(store: LanceStore) -> None:
    memory = WorkingMemory(
        session_id="s1",
        current_topic="tea",
        context_variables={"k": [1, 2]},
        turn_count=3,
        last_emotion=None,
        created_at=MESSAGES_T0,
        updated_at=MESSAGES_T0,
    )
    await store.put_working([("u1", memory)])
    await store.put_working([("u1", WorkingMemory(**{**_fields(memory), "turn_count": 4}))])
    assert (await store.get_working("u1", "s1")) == WorkingMemory(
        **{**_fields(memory), "turn_count": 4}
    )
    assert await store.get_working("u2", "s1") is None
    await store.delete_working("u1", "s1")
    assert await store.get_working("u1", "s1") is None


async def test_reopening_with_another_vector_size_is_a_clear_error(tmp_path: Path) -> None:
    first = LanceStore(tmp_path / "db", embedder=HashEmbedder(8))
    await first.open()
    await first.aclose()
    second = LanceStore(tmp_path / "db", embedder=HashEmbedder(16))
    with pytest.raises(StoreMismatch, match="hash-8"):
        await second.open()


async def test_optimize_compacts_many_small_appends(store: LanceStore) -> None:
    for i in range(12):
        await put(store, message(i, f"row {i}"))
    await store.optimize(cleanup_older_than=1.0)
    assert (await store.list_messages("u1", limit=50, offset=0))[1] == 12
    hits = await store.search_messages("u1", "row", _embedder.embed_one("row 3"), k=3)
    assert len(hits) == 3


async def test_lancedb_caches_stay_within_their_bounds_as_writes_add_versions(
    tmp_path: Path,
) -> None:
    # Unbounded, 60 single-row writes (each a version) and reads cache ~2.7 MB here.
    store = LanceStore(
        tmp_path / "db",
        embedder=_embedder,
        lance_metadata_bytes=512 << 10,
        lance_index_bytes=512 << 10,
    )
    await store.open()
    try:
        for i in range(60):
            await put(store, message(i, f"row {i}"))
            assert (await store.list_messages("u1", limit=1, offset=0))[1] == i + 1
        assert 0 < store.lance_cache_bytes() <= 1 << 20
    finally:
        await store.aclose()


async def test_users_messages_are_read_from_lancedb_two_users_at_a_time(
    store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(6):
        await put(store, message(i, f"row {i}", user=f"u{i}"))
    reading, most = 0, 0
    search = store._search
    read = search._read_messages

    async def counted(user_id: str) -> MessageEntry:
        nonlocal reading, most
        reading += 1
        most = max(most, reading)
        try:
            await anyio.sleep(0.01)
            return await read(user_id)
        finally:
            reading -= 1

    monkeypatch.setattr(search, "_read_messages", counted)
    async with anyio.create_task_group() as tg:
        for i in range(6):
            tg.start_soon(store.warm, f"u{i}")
    assert most == 2
    for i in range(6):
        assert len(await store.message_index(f"u{i}")) == 1


def _fields(memory: WorkingMemory) -> dict[str, Any]:
    return {f: getattr(memory, f) for f in memory.__struct_fields__}


async def test_search_with_a_scope_sees_global_and_that_scope_only(store: LanceStore) -> None:
    def scoped(n: int, scope: str) -> ArchivedMessage:
        return msgspec.structs.replace(message(n, f"dentist appointment {scope}"), scope=scope)

    await put(store, scoped(1, "global"), scoped(2, "calendar"), scoped(3, "mail"))
    vector = _embedder.embed_one("dentist appointment")
    hits = await store.search_messages("u1", "dentist", vector, k=10, scope="calendar")
    assert sorted(m.scope for m, _ in hits) == ["calendar", "global"]
    everything = await store.search_messages("u1", "dentist", vector, k=10)
    assert len(everything) == 3


async def test_facts_of_users_reads_active_facts_of_each_user_in_one_call(
    store: LanceStore,
) -> None:
    await store.facts.add_facts(
        [
            stored_fact("u1", "fact_00000001", "Likes tea"),
            stored_fact("u1", "fact_00000002", "Liked coffee", validity="superseded"),
            stored_fact("u2", "fact_00000001", "Lives in Oslo"),
            stored_fact("u3", "fact_00000003", "Plays chess"),
        ]
    )
    found = await store.facts.facts_of_users(["u1", "u2", "u4"])
    assert {u: [s.fact.content for s in items] for u, items in found.items()} == {
        "u1": ["Likes tea"],
        "u2": ["Lives in Oslo"],
        "u4": [],
    }


async def test_facts_by_key_match_user_and_id_together(store: LanceStore) -> None:
    await store.facts.add_facts(
        [
            stored_fact("u1", "fact_00000001", "Likes tea"),
            stored_fact("u2", "fact_00000001", "Lives in Oslo"),
            stored_fact("u2", "fact_00000002", "Plays chess"),
        ]
    )
    got = await store.facts.get_facts_by_key([("u1", "fact_00000001"), ("u2", "fact_00000002")])
    assert sorted((s.fact.user_id, s.fact.content) for s in got) == [
        ("u1", "Likes tea"),
        ("u2", "Plays chess"),
    ]


async def test_batched_fact_reads_refuse_unsafe_user_ids(store: LanceStore) -> None:
    with pytest.raises(ValueError, match="invalid user id"):
        await store.facts.facts_of_users(["u1", "x' OR '1'='1"])
    with pytest.raises(ValueError, match="invalid user id"):
        await store.facts.get_facts_by_key([("x' OR '1'='1", "fact_00000001")])


def _note(n: int, *, app: str = "cal", user: str = "u1", edited_days: int = 0) -> AppNote:
    created = MESSAGES_T0 + timedelta(days=n)
    return AppNote(
        id=f"note_{n:08x}",
        user_id=user,
        app_id=app,
        content=f"Note {n}",
        created_at=created,
        updated_at=created + timedelta(days=edited_days),
        source_session_id=f"s{n}",
    )


async def test_app_notes_come_most_recently_updated_first_and_limited(store: LanceStore) -> None:
    notes = [_note(n) for n in range(1, 13)]
    notes[0] = _note(1, edited_days=30)  # the oldest note, edited last
    await store.facts.put_notes([*notes, _note(13, app="todo"), _note(14, user="u2")])
    newest = await store.facts.notes_of("u1", "cal", limit=10)
    assert [n.content for n in newest] == ["Note 1", *(f"Note {n}" for n in range(12, 3, -1))]
    assert len(await store.facts.notes_of("u1", "cal")) == 12
    assert await store.facts.count_notes("u1", "cal") == 12
    assert await store.facts.count_notes("u1", "todo") == 1
    assert await store.facts.count_notes("u2", "todo") == 0


async def test_a_message_is_found_by_its_speakers_name_and_the_message_it_answered(
    store: LanceStore,
) -> None:
    question = msgspec.structs.replace(
        message(1, "Did you go anywhere last weekend?"), speaker="Melanie", role="other"
    )
    answer = msgspec.structs.replace(
        message(2, "Yes, we went camping by the lake!"),
        speaker="Caroline",
        context="Melanie: Did you go anywhere last weekend?",
    )
    noise = [message(n, f"Something else, number {n}", session=f"x{n}") for n in range(3, 30)]
    await put(store, question, answer, *noise)
    # The hash embedder's vector side ranks the noise arbitrarily, and with seed 002's rule a
    # hit found by text alone scores like the vector side's first: look a few deep.
    by_name = await store.search_messages("u1", "Caroline", _embedder.embed_one("Caroline"), k=3)
    by_question = await store.search_messages("u1", "weekend", _embedder.embed_one("weekend"), k=5)
    assert answer.id in [m.id for m, _ in by_name]
    assert answer.id in [m.id for m, _ in by_question]
    said = next(m for m, _ in by_name if m.id == answer.id)
    assert said.text == "Yes, we went camping by the lake!"  # stored as said


async def test_a_store_from_before_search_texts_is_migrated_on_open(tmp_path: Path) -> None:
    old = msgspec.structs.replace(message(1, "we went camping"), speaker="Caroline")
    row = _old_row(old)
    db = await lancedb.connect_async(str(tmp_path / "db"))
    schema = pa.schema(
        # From before search texts, and so before rows carried an epoch too.
        [
            f
            for f in messages_schema(_embedder.dim, "hash")
            if f.name not in ("search_text", "epoch")
        ]
    )
    table = await db.create_table("messages", schema=schema)
    await table.add(pa.Table.from_pylist([row], schema=schema))
    await table.create_index("text", config=FTS(base_tokenizer="icu", with_position=True))
    db.close()  # type: ignore[no-untyped-call]  # lancedb leaves close() unannotated
    store = LanceStore(tmp_path / "db", embedder=_embedder)
    await store.open()
    try:
        found = await store.search_messages("u1", "Caroline", _embedder.embed_one("x"), k=1)
        await put(store, message(2, "a new message"))
        total = (await store.list_messages("u1", limit=10, offset=0))[1]
    finally:
        await store.aclose()
    assert [m.text for m, _ in found] == ["we went camping"]
    assert total == 2


def _old_row(m: ArchivedMessage) -> dict[str, object]:
    return {
        "id": m.id,
        "user_id": m.user_id,
        "session_id": m.session_id,
        "scope": m.scope,
        "turn": m.turn,
        "role": m.role,
        "speaker": m.speaker,
        "text": m.text,
        "at": m.at,
        "meta": "{}",
        "source_id": m.source_id,
        "vector": _embedder.embed_one(m.text),
    }


async def test_counting_messages_gives_the_total_of_a_page(store: LanceStore) -> None:
    assert await store.count_messages("u1") == 0
    await put(store, *(message(i, f"text {i}") for i in range(3)))
    await put(store, message(7, "other user", user="u2"))
    _, total = await store.list_messages("u1", limit=1, offset=0)
    assert await store.count_messages("u1") == total == 3
    await store.flush_messages()
    assert await store.count_messages("u1") == 3


class _RenamedEmbedder(HashEmbedder):
    """The hash embedder's vectors under another name: another model of the same size."""

    @property
    def name(self) -> str:
        return "another-model"


async def test_every_vector_table_records_its_embedder_and_another_one_is_refused(
    tmp_path: Path,
) -> None:
    first = LanceStore(tmp_path / "db", embedder=HashEmbedder(8))
    await first.open()
    await first.aclose()
    db = await lancedb.connect_async(tmp_path / "db")
    rows = await (await db.open_table("embedding_versions")).query().to_list()
    assert sorted((r["table_name"], r["embedder"], r["dim"]) for r in rows) == [
        ("episodes", "hash-8", 8),
        ("facts", "hash-8", 8),
        ("messages", "hash-8", 8),
        ("rules", "hash-8", 8),
    ]
    again = LanceStore(tmp_path / "db", embedder=HashEmbedder(8))
    await again.open()  # the same embedder: opens
    await again.aclose()
    other = LanceStore(tmp_path / "db", embedder=_RenamedEmbedder(8))
    with pytest.raises(StoreMismatch, match="'hash-8' \\(8 dimensions\\); the configured"):
        await other.open()


async def test_a_categorys_facts_join_a_search_as_the_k_nearest_the_query(
    store: LanceStore,
) -> None:
    drinks = ["tea", "coffee", "juice", "cocoa", "milk", "water"] * 10
    facts = []
    for n, drink in enumerate(drinks):
        made = stored_fact("u1", f"fact_{n:08x}", f"Likes {drink} number {n}")
        facts.append(Stored(msgspec.structs.replace(made.fact, category="preference"), made.vector))
    await store.facts.add_facts(facts)
    vector = _embedder.embed_one("Likes tea number 0")
    hits = await store.facts.search_facts(
        "u1", "zzz", vector, k=5, scope=None, categories=["preference"]
    )
    assert 5 <= len(hits) <= 15  # each side 5 deep, and 5 of the 60 preferences, not all
    by_nearness = sorted(facts, key=lambda s: -float(np.dot(s.vector, vector)))
    joined = {h.stored.fact.id for h in hits if h.dense_rank is None and h.text_rank is None}
    assert joined <= {s.fact.id for s in by_nearness[:10]}
    assert all(h.similarity is not None for h in hits)


async def test_a_fact_that_changes_category_or_scope_joins_the_searches_of_its_new_one(
    store: LanceStore,
) -> None:
    made = [stored_fact("u1", f"fact_{n:08x}", f"Likes tea number {n}") for n in range(3)]
    facts = [Stored(msgspec.structs.replace(s.fact, category="preference"), s.vector) for s in made]
    await store.facts.add_facts(facts)
    vector = _embedder.embed_one("zzz")

    async def joined(scope: str | None = None) -> set[str]:
        hits = await store.facts.search_facts(
            "u1", "zzz", vector, k=5, scope=scope, categories=["preference"], mode="keyword"
        )
        return {h.stored.fact.id for h in hits}  # no text matches "zzz": the category's

    assert await joined() == {s.fact.id for s in facts}
    moved = msgspec.structs.replace(facts[0].fact, category="knowledge")
    scoped = msgspec.structs.replace(facts[1].fact, scope="work")
    await store.facts.put_facts([Stored(moved, facts[0].vector), Stored(scoped, facts[1].vector)])
    assert await joined() == {facts[1].fact.id, facts[2].fact.id}
    assert await joined("home") == {facts[2].fact.id}
    assert await joined("work") == {facts[1].fact.id, facts[2].fact.id}
