"""Seed 003's NoteKeeper on in-memory fakes: metadata, sizes, and database errors in compaction."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta

import anyio
import msgspec
import pytest

from actors.notes import NoteKeeper
from actors.writer import ArchiveWriter
from memory.formats import app_memories
from memory.hashing import HashEmbedder
from memory.prompts import Exchange
from schemas.records import AppNote
from schemas.settings import Settings
from tests.actor_world import world
from tests.fakes import MemoryStore, ScriptedLlm, SteppingClock

pytestmark = pytest.mark.anyio

_CLOCK = SteppingClock()
_T0 = _CLOCK.now()


def talk(text: str = "Book meetings after 2pm") -> list[Exchange]:
    return [Exchange(turn=1, user=text, assistant="Noted.")]


def note_json(content: str, **extra: object) -> str:
    return json.dumps({"content": content, **extra})


def stored_note(n: int) -> AppNote:
    at = _T0 - timedelta(days=20 - n)  # older than anything the keeper writes
    return AppNote(
        id=f"note_{n:08x}",
        user_id="u1",
        app_id="cal",
        content=f"Note number {n}",
        created_at=at,
        updated_at=at,
        source_session_id=f"s{n}",
        meta={"importance": n % 10, "tags": [f"t{n}"], "relatedConversations": [f"s{n}"]},
    )


@asynccontextmanager
async def keeper(
    llm: ScriptedLlm, store: MemoryStore, notes: Sequence[AppNote] = ()
) -> AsyncIterator[NoteKeeper]:
    for note in notes:
        store.facts.notes[(note.user_id, note.id)] = note
    writer = ArchiveWriter(store, HashEmbedder(), linger=0)
    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        yield NoteKeeper(llm, store, writer, Settings(), SteppingClock())
        tg.cancel_scope.cancel()


async def test_a_note_keeps_seed_003_metadata_importance_tags_and_its_conversation() -> None:
    llm = ScriptedLlm(json_script=[note_json("Prefers afternoons.", importance=8, tags=["Time"])])
    store = MemoryStore()
    async with keeper(llm, store) as notes:
        note = await notes.create_note("u1", "cal", "s9", talk())
    assert note is not None
    assert note.meta == {"importance": 8, "tags": ["time"], "relatedConversations": ["s9"]}
    assert note.source_session_id == "s9"
    [(system, _)] = llm.json_prompts
    assert system is not None
    assert "importance" in system
    assert "200 characters" in system


async def test_a_note_without_metadata_gets_middle_importance_and_no_tags() -> None:
    llm = ScriptedLlm(json_script=[note_json("Prefers afternoons.")])
    async with keeper(llm, MemoryStore()) as notes:
        note = await notes.create_note("u1", "cal", "s9", talk())
    assert note is not None
    assert note.meta == {"importance": 5, "tags": [], "relatedConversations": ["s9"]}


@pytest.mark.parametrize("bad", [{"importance": 11}, {"importance": -1}, {"tags": "x"}])
async def test_a_note_with_invalid_metadata_is_skipped(bad: dict[str, object]) -> None:
    llm = ScriptedLlm(json_script=[note_json("Prefers afternoons.", **bad)])
    store = MemoryStore()
    async with keeper(llm, store) as notes:
        assert await notes.create_note("u1", "cal", "s9", talk()) is None
        assert notes.stats.skipped == 1
    assert store.facts.notes == {}


async def test_a_long_note_is_clipped_to_about_200_characters_at_a_word() -> None:
    # seed 003: notes of ~200 characters. The model is asked for about 200; a longer
    # answer is clipped at a word under the hard cap of 280.
    words = " ".join(f"word{i}" for i in range(100))
    llm = ScriptedLlm(json_script=[note_json(words)])
    async with keeper(llm, MemoryStore()) as notes:
        note = await notes.create_note("u1", "cal", "s9", talk())
    assert note is not None
    assert 270 <= len(note.content) <= 280
    system = llm.json_prompts[0][0]
    assert system is not None
    assert "about 200 characters" in system
    assert note.content.endswith("…")
    assert words.startswith(note.content[:-1])
    assert note.content[:-1].split()[-1] in words.split()


def test_the_app_block_stays_within_2000_characters_leaving_out_the_oldest_notes() -> None:
    long = "x" * 150 + " " + "y" * 100
    notes = [msgspec.structs.replace(stored_note(n), content=f"{n} {long}") for n in range(10)]
    block = app_memories("cal", notes)
    assert len(block.text) <= 2000
    assert 1 <= len(block.memory_ids) < 10
    newest_first = [f"note_{n:08x}" for n in range(9, -1, -1)]
    assert block.memory_ids == newest_first[: len(block.memory_ids)]
    assert len(app_memories("cal", notes, max_chars=100_000).memory_ids) == 10


async def test_a_merge_keeps_the_higher_importance_and_both_conversations() -> None:
    existing = [stored_note(n) for n in range(1, 11)]
    decision = {
        "action": "edit",
        "target_id": "note_00000003",
        "new_content": "Merged note.",
        "reason": "same topic",
    }
    llm = ScriptedLlm(
        json_script=[note_json("New one.", importance=9, tags=["new"]), json.dumps(decision)]
    )
    store = MemoryStore()
    async with keeper(llm, store, existing) as notes:
        new = await notes.create_note("u1", "cal", "s99", talk())
    assert new is not None
    kept = {n.id: n for n in await store.facts.notes_of("u1", "cal")}
    assert len(kept) == 10
    assert new.id not in kept
    merged = kept["note_00000003"]
    assert merged.content == "Merged note."
    assert merged.meta == {
        "importance": 9,
        "tags": ["new", "t3"],
        "relatedConversations": ["s3", "s99"],
    }


@pytest.mark.parametrize(
    ("failures", "gone", "by_model", "by_fifo"),
    [
        (1, "note_00000005", 1, 0),  # the retry applies the model's decision
        (2, "note_00000001", 0, 1),  # two failures: FIFO drops the oldest
    ],
)
async def test_a_database_error_in_compaction_is_retried_once_then_fifo(
    failures: int, gone: str, by_model: int, by_fifo: int
) -> None:
    existing = [stored_note(n) for n in range(1, 11)]
    decision = {"action": "delete", "target_id": "note_00000005", "reason": "stale"}
    llm = ScriptedLlm(json_script=[note_json("Eleventh."), json.dumps(decision)])
    store = MemoryStore()
    store.facts.fail_note_deletes = failures
    async with keeper(llm, store, existing) as notes:
        await notes.create_note("u1", "cal", "s99", talk())
        assert (notes.stats.compacted_by_model, notes.stats.compacted_fifo) == (by_model, by_fifo)
    kept = {n.id for n in await store.facts.notes_of("u1", "cal")}
    assert len(kept) == 10
    assert gone not in kept


async def test_an_app_context_shows_only_the_ten_most_recently_updated_notes() -> None:
    async with world() as w:
        notes = [stored_note(n) for n in range(1, 13)]
        notes[0] = msgspec.structs.replace(notes[0], updated_at=_T0)  # edited after all others
        for note in notes:
            w.store.facts.notes[(note.user_id, note.id)] = note
        block = await w.deps.context.build(
            "u1", "plans", format="app-memories", budget=2000, scope="cal"
        )
    shown = re.findall(r"Note number (\d+)", block.text)
    assert sorted(map(int, shown)) == [1, *range(4, 13)]
