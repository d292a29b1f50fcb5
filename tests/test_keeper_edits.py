"""FactKeeper in process: imports, the cast of people, edits, deletes, access counts, sweeps."""

from __future__ import annotations

import logging
import re
from typing import Any

import anyio
import msgspec
import pytest

from actors.errors import ArchiveUnavailable, Rejected
from actors.keeper import FactEdit
from memory.facts import Stored
from memory.statements import Speaker
from tests.keeper_world import (
    DAY,
    EMBED,
    NOW,
    Recorder,
    line,
    make,
    pick,
    put,
    world,
)

pytestmark = pytest.mark.anyio

# -- imports -------------------------------------------------------------------------------


async def test_an_import_skips_inactive_lines_lines_imported_before_and_duplicates(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "mnemo.facts")
    async with world() as w:
        put(w.facts, make("fact_00000001", "Likes green tea"))
        put(w.facts, make("fact_00000002", "Knew Go", validity="superseded", source_id="old"))
        changes = await w.keeper.import_facts(
            "u1",
            [
                line("new", "Knows Rust", scope="app1", at=NOW - DAY, pinned=True, meta={"k": 1}),
                line("gone", "Knew C", validity="superseded"),
                line("fact_00000002", "Knew Go"),
                line("old", "Knew Go well"),
                line("new", "Knows Rust again"),
                line("tea", "Likes green tea"),
            ],
        )
    assert changes.skipped == [
        ("Likes green tea", "duplicate"),
        ("Knew C", "not active"),
        ("Knew Go", "imported before"),
        ("Knew Go well", "imported before"),
        ("Knows Rust again", "imported before"),
    ]
    assert [r.getMessage() for r in caplog.records] == ["skipped fact (duplicate): Likes green tea"]
    [added] = changes.added
    fact = added.fact
    named = "extractor source_id confidence pinned scope meta created_at updated_at"
    assert pick(fact, named) == ("import", "new", 0.7, True, "app1", {"k": 1}, NOW - DAY, NOW)
    assert added.vector == EMBED.embed_one("Knows Rust")
    assert w.facts.writes == [("add", "Knows Rust")]


async def test_two_imports_of_one_line_at_once_store_it_once() -> None:
    async with world() as w:
        first, second = await w.batch(
            lambda: w.keeper.import_facts("u1", [line("l1", "Knows Rust")]),
            lambda: w.keeper.import_facts("u1", [line("l1", "Knows Rust")]),
        )
    assert [s.fact.content for s in first.added] == ["Knows Rust"]
    assert (second.added, second.skipped) == ([], [("Knows Rust", "imported before")])
    assert list(w.facts.of()) == ["Knows Rust"]


async def test_an_import_fails_as_an_unavailable_archive_when_the_store_does() -> None:
    async with world(Recorder(fail=OSError("disk gone"))) as w:
        with pytest.raises(ArchiveUnavailable, match=r"^disk gone$"):
            await w.keeper.import_facts("u1", [line("l1", "Knows Rust")])


# -- the cast, edits, deletes --------------------------------------------------------------


async def test_the_cast_holds_the_named_people_of_the_users_active_facts() -> None:
    async with world() as w:
        put(
            w.facts,
            make("fact_00000001", "Mike is the brother", subject="Mike", relation="brother"),
            make("fact_00000002", "User is self", subject="User", relation="self"),
            make("fact_00000003", "用户", subject="用户", relation="self"),
            make("fact_00000004", "Sister", subject="sister", relation="sister"),
            make("fact_00000005", "Anna", subject="Anna"),
            make("fact_00000006", "Bob", subject="Bob", relation="friend", validity="superseded"),
            make("fact_00000007", "Eve", subject="Eve", relation="friend", user_id="u2"),
            make("fact_00000008", "Rel", relation="friend"),
        )
        people = await w.keeper.cast("u1")
    assert people.by_name == {"mike": Speaker(name="Mike", relation="brother")}
    assert (people.last, people.other) == (None, None)


async def test_an_edit_changes_only_the_given_fields_and_embeds_new_content() -> None:
    original = make("fact_00000001", "Knows Rust", category="preference", pinned=True)
    async with world() as w:
        put(w.facts, original)
        edited = await w.keeper.edit(
            "u1", "fact_00000001", FactEdit(content="Knows Go", category=" Fact", confidence=1.0)
        )
        again = await w.keeper.edit("u1", "fact_00000001", FactEdit(confidence=0.0))
    expected = msgspec.structs.replace(
        original, content="Knows Go", category="knowledge", confidence=1.0, updated_at=NOW
    )
    assert edited == expected
    assert again == msgspec.structs.replace(expected, confidence=0.0)
    assert w.facts.facts[("u1", "fact_00000001")] == Stored(again, EMBED.embed_one("Knows Go"))


async def test_an_edit_of_an_unknown_fact_returns_none_and_writes_nothing() -> None:
    async with world() as w:
        put(w.facts, make("fact_00000001", "Knows Rust", user_id="u2"))
        assert await w.keeper.edit("u1", "fact_00000001", FactEdit(pinned=True)) is None
    assert w.facts.writes == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (FactEdit(category="runes"), "unknown category 'runes'"),
        (FactEdit(confidence=-0.01), "confidence must be within 0..1"),
        (FactEdit(confidence=1.01), "confidence must be within 0..1"),
        (FactEdit(content=" \n"), "content must not be blank"),
    ],
)
async def test_an_invalid_edit_is_refused_before_anything_is_written(
    change: FactEdit, message: str
) -> None:
    async with world() as w:
        put(w.facts, make("fact_00000001", "Knows Rust"))
        with pytest.raises(ValueError, match=rf"^{re.escape(message)}$"):
            await w.keeper.edit("u1", "fact_00000001", change)
    assert w.facts.writes == []


async def test_pinning_by_edit_counts_only_the_users_active_pins_against_the_cap() -> None:
    async with world(max_pinned=2) as w:
        put(
            w.facts,
            make("fact_00000001", "Pinned", pinned=True),
            make("fact_00000002", "Old pin", pinned=True, validity="superseded"),
            make("fact_00000003", "Their pin", pinned=True, user_id="u2"),
            make("fact_00000004", "Second"),
            make("fact_00000005", "Third"),
        )
        second = await w.keeper.edit("u1", "fact_00000004", FactEdit(category="goal", pinned=True))
        same = await w.keeper.edit("u1", "fact_00000001", FactEdit(pinned=True))
        with pytest.raises(Rejected, match=r"^at most 2 pinned facts$"):
            await w.keeper.edit("u1", "fact_00000005", FactEdit(pinned=True))
        unpinned = await w.keeper.edit("u1", "fact_00000001", FactEdit(pinned=False))
        third = await w.keeper.edit("u1", "fact_00000005", FactEdit(pinned=True))
    assert second is not None
    assert same is not None
    assert unpinned is not None
    assert third is not None
    assert pick(second, "pinned updated_at category") == (True, NOW, "goal")
    assert pick(same, "pinned updated_at") == (True, NOW)
    assert (unpinned.pinned, w.facts.of()["Pinned"].pinned, third.pinned) == (False, False, True)


async def test_a_delete_purges_the_fact_and_says_whether_there_was_one() -> None:
    async with world() as w:
        put(w.facts, make("fact_00000001", "Knows Rust"))
        assert await w.keeper.delete("u1", "fact_00000001") is True
        assert await w.keeper.delete("u1", "fact_00000001") is False
    assert w.facts.writes == [("delete", "u1", "fact_00000001", True)] * 2
    assert w.facts.facts == {}


async def test_confirming_a_fact_restarts_its_decay_and_clears_fading() -> None:
    async with world() as w:
        put(w.facts, make("fact_00000001", "Knows Rust", status="fading"))
        confirmed = await w.keeper.confirm("u1", "fact_00000001")
        assert await w.keeper.confirm("u1", "fact_00000009") is None
    assert confirmed is not None
    stored = w.facts.of()["Knows Rust"]
    assert (stored.last_confirmed_at, stored.status, stored.updated_at) == (NOW, None, NOW)
    assert confirmed == stored


async def test_forgetting_a_fact_retracts_it_once_and_keeps_it_as_history() -> None:
    async with world() as w:
        put(w.facts, make("fact_00000001", "Knows Rust"))
        forgotten = await w.keeper.forget("u1", "fact_00000001")
        again = await w.keeper.forget("u1", "fact_00000001")
        assert await w.keeper.forget("u1", "fact_00000009") is None
    assert forgotten is not None
    assert (forgotten.validity, forgotten.updated_at) == ("retracted", NOW)
    assert again == forgotten
    assert w.facts.of()["Knows Rust"].validity == "retracted"
    assert w.facts.writes == [("put", "Knows Rust")]


# -- access counts and sweeps --------------------------------------------------------------


async def test_touches_are_flushed_as_access_counts_and_times() -> None:
    async with world() as w:
        put(w.facts, make("fact_00000001", "Rust"), make("fact_00000002", "Go"))
        put(w.facts, make("fact_00000001", "Jazz", user_id="u2"))
        w.keeper.touch_nowait("u1", ["fact_00000001", "fact_00000002", "fact_00000001"])
        w.keeper.touch_nowait("u1", ["fact_00000001", "fact_00000009"])
        w.keeper.touch_nowait("u2", ["fact_00000001"])
        await w.writer.call(anyio.lowlevel.checkpoint)
        before = dict(w.facts.facts)
        await w.writer.call(anyio.lowlevel.checkpoint)
    counts = {s.fact.content: (s.fact.access_count, s.fact.last_accessed) for s in before.values()}
    assert counts == {"Rust": (3, NOW), "Go": (1, NOW), "Jazz": (1, NOW)}
    assert all(s.vector == EMBED.embed_one(s.fact.content) for s in before.values())
    assert w.facts.writes == [("put", "Rust", "Go", "Jazz")]


async def test_no_touch_writes_nothing() -> None:
    async with world() as w:
        w.keeper.touch_nowait("u1", [])
        await w.writer.call(anyio.lowlevel.checkpoint)
    assert w.facts.writes == []


async def test_a_sweep_expires_and_fades_decayed_facts_and_reports_them() -> None:
    unseen: dict[str, Any] = {
        "permanence": "stable",
        "decay_rate": 0.002,
        "last_seen": NOW - 61 * DAY,
    }
    async with world() as w:
        put(
            w.facts,
            make("fact_00000001", "Decayed", last_confirmed_at=NOW - 400 * DAY),
            make("fact_00000002", "Fading", last_confirmed_at=NOW - 200 * DAY),
            make("fact_00000003", "Unseen project", category="project", **unseen),
            make("fact_00000004", "Unseen knowledge", **unseen),
            make("fact_00000005", "Theirs", user_id="u2", last_confirmed_at=NOW - 400 * DAY),
        )
        changes = await w.keeper.sweep("u1")
    assert [(f.content, f.validity, f.status, f.updated_at) for f in changes.updated] == [
        ("Decayed", "expired", None, NOW),
        ("Fading", "active", "fading", NOW),
        ("Unseen project", "expired", None, NOW),
    ]
    assert [w.facts.facts[("u1", f.id)] for f in changes.updated] == [
        Stored(f, EMBED.embed_one(f.content)) for f in changes.updated
    ]
    assert w.facts.writes == [("put", "Decayed", "Fading", "Unseen project")]
