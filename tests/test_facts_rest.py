"""Facts over REST and the ``remember`` frame, end to end: seed 000's CRUD and dedup."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from schemas.taxonomy import DEFAULT_CATEGORIES, CategorySpec
from testing.fake_ollama import FakeOllama
from tests.harness import Client, http, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

KEYS = {"key-alice": "alice", "key-bob": "bob"}
FACT_ID = re.compile(r"^fact_[0-9a-f]{8}$")
FACTS = "/memory/long-term"


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, fake.url, api_keys=KEYS))) as address:
        yield address


@pytest.fixture
async def alice(server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with http(server, "key-alice") as client:
        yield client


async def add_fact(client: httpx.AsyncClient, content: str, **fields: Any) -> dict[str, Any]:
    response = await client.post(FACTS, json={"content": content, **fields})
    assert response.status_code == 201, response.text
    added: list[dict[str, Any]] = response.json()["added"]
    [fact] = added
    return fact


def parse_utc(text: str) -> datetime:
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert when.utcoffset() == timedelta(0)
    return when


# -- create ------------------------------------------------------------------


async def test_post_creates_a_manual_fact_with_a_fact_id_and_utc_timestamps(
    alice: httpx.AsyncClient,
) -> None:
    response = await alice.post(FACTS, json={"content": "I love jazz music"})
    assert response.status_code == 201
    body = response.json()
    assert (body["updated"], body["superseded"], body["removed"]) == ([], [], [])
    [fact] = body["added"]
    assert FACT_ID.match(fact["id"])
    assert fact["content"] == "I love jazz music"
    assert fact["confidence"] == pytest.approx(0.6)
    assert fact["extractor"] == "manual"
    assert fact["source"] == "user_stated"
    assert (fact["kind"], fact["validity"], fact["mention_count"]) == ("fact", "active", 1)
    assert (fact["scope"], fact["pinned"]) == ("global", False)
    created = parse_utc(fact["created_at"])
    assert abs(datetime.now(created.tzinfo) - created) < timedelta(minutes=1)


async def test_post_without_category_guesses_one_and_keeps_an_explicit_one(
    alice: httpx.AsyncClient,
) -> None:
    guessed = await add_fact(alice, "I prefer tea over coffee")
    plain = await add_fact(alice, "The office wifi password changes monthly")
    explicit = await add_fact(alice, "I prefer window seats", category="goal")
    aliased = await add_fact(alice, "Water boils at 100 degrees", category="Fact")
    assert guessed["category"] == "preference"
    assert plain["category"] == "knowledge"
    assert explicit["category"] == "goal"
    assert aliased["category"] == "knowledge"  # seed 001's alias of the taxonomy's name


@pytest.mark.parametrize(
    "body",
    [
        b'{"content": "I like owls", "category": "hobby"}',
        b'{"content": "   "}',
        b'{"content": ""}',
        b'{"content": "I like owls"',
        b"[]",
        b'{"text": "I like owls"}',
        b'{"content": "I like owls", "colour": "blue"}',
        b'{"content": 42}',
        b'{"content": "I like owls", "scope": "no spaces allowed"}',
    ],
    ids=[
        "unknown-category",
        "blank-content",
        "empty-content",
        "bad-json",
        "not-an-object",
        "missing-content",
        "unknown-field",
        "mistyped-content",
        "bad-scope",
    ],
)
async def test_post_rejects_a_bad_fact_with_a_json_400_and_stores_nothing(
    alice: httpx.AsyncClient, body: bytes
) -> None:
    response = await alice.post(FACTS, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"
    listed = (await alice.get(FACTS, params={"kind": "facts"})).json()
    assert listed["total"] == 0


async def test_unknown_category_error_names_the_known_categories(
    alice: httpx.AsyncClient,
) -> None:
    response = await alice.post(FACTS, json={"content": "I like owls", "category": "hobby"})
    message = response.json()["error"]["message"]
    assert "hobby" in message
    assert "preference" in message


async def test_categories_lists_the_taxonomy_in_context_order_and_the_post_accepts_them(
    alice: httpx.AsyncClient,
) -> None:
    response = await alice.get("/memory/categories")
    categories = response.json()["categories"]
    assert response.status_code == 200
    assert categories[:3] == [
        {"name": "project", "heading": "Current work:", "priority": 1},
        {"name": "preference", "heading": "Preferences:", "priority": 2},
        {"name": "identity", "heading": "About user:", "priority": 3},
    ]
    assert [c["name"] for c in categories] == [c.name for c in DEFAULT_CATEGORIES]
    for name in (c["name"] for c in categories):
        fact = await add_fact(alice, f"A note on {name}", category=name)
        assert fact["category"] == name


async def test_categories_are_the_configured_ones(tmp_path: Path, fake: FakeOllama) -> None:
    taxonomy = [
        CategorySpec(name="hobby", heading="Hobbies:", priority=2),
        CategorySpec(name="work", heading="Work:", priority=1),
    ]
    settings = settings_for(tmp_path, fake.url, categories=taxonomy)
    async with serve(make_app(settings)) as address, http(address, None) as client:
        listed = (await client.get("/memory/categories")).json()
    assert listed == {
        "categories": [
            {"name": "work", "heading": "Work:", "priority": 1},
            {"name": "hobby", "heading": "Hobbies:", "priority": 2},
        ]
    }


# -- dedup -------------------------------------------------------------------


@pytest.mark.parametrize(
    "again",
    ["I love jazz music", "i LOVE Jazz MUSIC", "  I love jazz music  "],
    ids=["same-text", "other-casing", "padded"],
)
async def test_duplicate_post_reinforces_the_existing_fact_instead_of_adding_one(
    alice: httpx.AsyncClient, again: str
) -> None:
    first = await add_fact(alice, "I love jazz music")
    response = await alice.post(FACTS, json={"content": again})
    assert response.status_code == 201
    body = response.json()
    assert body["added"] == []
    [updated] = body["updated"]
    assert updated["id"] == first["id"]
    assert updated["content"] == "I love jazz music"
    assert updated["mention_count"] == 2
    # A manual fact starts at 0.6, below an extracted one's 0.75, and gains 0.25 where an
    # extracted one gains 0.15 (MNEMO_MANUAL_REINFORCE_STEP, MNEMO_REINFORCE_STEP).
    assert updated["confidence"] == pytest.approx(0.85)
    assert updated["created_at"] == first["created_at"]
    listed = (await alice.get(FACTS, params={"kind": "facts"})).json()
    assert listed["total"] == 1
    assert listed["items"][0]["mention_count"] == 2


# -- read ----------------------------------------------------------------------


async def test_get_by_id_returns_the_fact_and_unknown_ids_are_404(
    alice: httpx.AsyncClient,
) -> None:
    fact = await add_fact(alice, "My name is Ada")
    got = await alice.get(f"{FACTS}/{fact['id']}")
    missing = await alice.get(f"{FACTS}/fact_00000000")
    malformed = await alice.get(f"{FACTS}/fact_XYZ")
    assert got.status_code == 200
    assert got.json() == fact
    for response in (missing, malformed):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("facts", {"fact"}),
        ("turns", {"turn"}),
        ("messages", {"turn"}),
        ("all", {"fact", "turn"}),
        (None, {"fact", "turn"}),
    ],
    ids=["facts", "turns", "messages-the-deprecated-alias-of-turns", "all", "default-all"],
)
async def test_list_filters_by_kind(
    server: str, alice: httpx.AsyncClient, kind: str | None, expected: set[str]
) -> None:
    async with Client.connect(server, "s1", token="key-alice") as ws:
        await ws.receive()
        await ws.send(type="turn", id="t1", user="hello there", assistant="hi")
        await ws.until("ack")
    await add_fact(alice, "I love jazz music")
    await add_fact(alice, "My name is Ada")
    params = {"kind": kind} if kind else {}
    listed = (await alice.get(FACTS, params=params)).json()
    counts = {"fact": 2, "turn": 2}
    assert {item["kind"] for item in listed["items"]} == expected
    assert listed["total"] == sum(counts[k] for k in expected)
    assert len(listed["items"]) == listed["total"]


async def test_unknown_kind_is_400(alice: httpx.AsyncClient) -> None:
    response = await alice.get(FACTS, params={"kind": "rules"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"


async def test_facts_page_newest_first_with_total_limit_and_offset(
    alice: httpx.AsyncClient,
) -> None:
    added = [
        await add_fact(alice, text)
        for text in ("I love jazz music", "My name is Ada", "I prefer window seats")
    ]
    first = (await alice.get(FACTS, params={"kind": "facts", "limit": 2})).json()
    rest = (await alice.get(FACTS, params={"kind": "facts", "limit": 2, "offset": 2})).json()
    assert (first["total"], first["limit"], first["offset"]) == (3, 2, 0)
    assert (rest["total"], rest["offset"]) == (3, 2)
    paged = [item["id"] for item in first["items"] + rest["items"]]
    assert paged == [fact["id"] for fact in reversed(added)]


# -- update ------------------------------------------------------------------


async def test_patch_changes_only_the_given_fields_and_keeps_created_at(
    alice: httpx.AsyncClient,
) -> None:
    fact = await add_fact(alice, "I love jazz music")
    response = await alice.patch(f"{FACTS}/{fact['id']}", json={"confidence": 0.9})
    assert response.status_code == 200
    patched = response.json()
    assert patched["confidence"] == pytest.approx(0.9)
    unchanged = ("id", "content", "category", "created_at", "pinned", "mention_count")
    assert {k: patched[k] for k in unchanged} == {k: fact[k] for k in unchanged}
    assert parse_utc(patched["updated_at"]) >= parse_utc(fact["updated_at"])

    response = await alice.patch(
        f"{FACTS}/{fact['id']}", json={"content": "I love modal jazz", "category": "Goal"}
    )
    edited = response.json()
    assert (edited["content"], edited["category"]) == ("I love modal jazz", "goal")
    assert edited["confidence"] == pytest.approx(0.9)
    assert edited["created_at"] == fact["created_at"]
    assert (await alice.get(f"{FACTS}/{fact['id']}")).json() == edited


@pytest.mark.parametrize(
    "patch",
    [
        {"confidence": 1.5},
        {"confidence": -0.1},
        {"category": "hobby"},
        {"content": "  "},
        {"colour": "blue"},
        {"confidence": "high"},
    ],
    ids=[
        "confidence-above-1",
        "confidence-below-0",
        "unknown-category",
        "blank-content",
        "unknown-field",
        "mistyped-confidence",
    ],
)
async def test_patch_rejects_bad_values_with_400_and_leaves_the_fact_alone(
    alice: httpx.AsyncClient, patch: dict[str, Any]
) -> None:
    fact = await add_fact(alice, "I love jazz music")
    response = await alice.patch(f"{FACTS}/{fact['id']}", json=patch)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"
    assert (await alice.get(f"{FACTS}/{fact['id']}")).json() == fact


@pytest.mark.parametrize(
    "fact_id", ["fact_00000000", "msg_0000000000000000", "nope"], ids=["fact", "message", "junk"]
)
async def test_patch_of_an_unknown_id_is_404(alice: httpx.AsyncClient, fact_id: str) -> None:
    response = await alice.patch(f"{FACTS}/{fact_id}", json={"confidence": 0.9})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


PANTRY = "apples bread cheese dates eggs figs grapes honey ice jam kale".split()


async def pin_ten(alice: httpx.AsyncClient) -> list[dict[str, Any]]:
    """Eleven distinct facts, the first ten pinned through PATCH."""
    facts = [await add_fact(alice, f"Pantry holds {word}") for word in PANTRY]
    for fact in facts[:10]:
        response = await alice.patch(f"{FACTS}/{fact['id']}", json={"pinned": True})
        assert response.status_code == 200
        assert response.json()["pinned"] is True
    return facts


async def test_ten_facts_can_be_pinned_and_unpinning_frees_a_slot(
    alice: httpx.AsyncClient,
) -> None:
    facts = await pin_ten(alice)
    unpinned = await alice.patch(f"{FACTS}/{facts[0]['id']}", json={"pinned": False})
    assert unpinned.status_code == 200
    assert unpinned.json()["pinned"] is False
    again = await alice.patch(f"{FACTS}/{facts[10]['id']}", json={"pinned": True})
    assert again.status_code == 200
    assert again.json()["pinned"] is True
    listed = (await alice.get(FACTS, params={"kind": "facts"})).json()
    assert sum(item["pinned"] for item in listed["items"]) == 10


async def test_pinning_an_eleventh_fact_is_a_400_and_leaves_it_unpinned(
    alice: httpx.AsyncClient,
) -> None:
    facts = await pin_ten(alice)
    eleventh = await alice.patch(f"{FACTS}/{facts[10]['id']}", json={"pinned": True})
    assert (await alice.get(f"{FACTS}/{facts[10]['id']}")).json()["pinned"] is False
    assert eleventh.status_code == 400
    assert eleventh.json()["error"]["code"] == "bad_request"
    assert "10" in eleventh.json()["error"]["message"]


async def test_adding_an_eleventh_pinned_fact_is_a_400_and_stores_nothing(
    alice: httpx.AsyncClient,
) -> None:
    await pin_ten(alice)
    refused = await alice.post(FACTS, json={"content": "My name is Ada", "pinned": True})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "at most 10 pinned facts"
    listed = (await alice.get(FACTS, params={"kind": "facts"})).json()["items"]
    assert "My name is Ada" not in [item["content"] for item in listed]
    again = await alice.post(FACTS, json={"content": "Pantry holds apples", "pinned": True})
    assert again.status_code == 201  # stating a pinned fact again is no new pin


async def test_post_with_pinned_true_pins_the_new_fact(alice: httpx.AsyncClient) -> None:
    fact = await add_fact(alice, "My name is Ada", pinned=True)
    assert fact["pinned"] is True
    assert (await alice.get(f"{FACTS}/{fact['id']}")).json()["pinned"] is True


# -- delete ------------------------------------------------------------------


async def test_delete_removes_the_fact_and_a_second_delete_is_404(
    alice: httpx.AsyncClient,
) -> None:
    fact = await add_fact(alice, "I love jazz music")
    kept = await add_fact(alice, "My name is Ada")
    deleted = await alice.delete(f"{FACTS}/{fact['id']}")
    assert deleted.status_code == 200
    assert deleted.json() == {"deleted": fact["id"]}
    assert (await alice.get(f"{FACTS}/{fact['id']}")).status_code == 404
    again = await alice.delete(f"{FACTS}/{fact['id']}")
    assert again.status_code == 404
    assert again.json()["error"]["code"] == "not_found"
    listed = (await alice.get(FACTS, params={"kind": "facts"})).json()
    assert [item["id"] for item in listed["items"]] == [kept["id"]]


async def test_deleting_an_unknown_fact_is_404(alice: httpx.AsyncClient) -> None:
    response = await alice.delete(f"{FACTS}/fact_00000000")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


async def test_deleted_content_can_be_added_again_as_a_new_fact(
    alice: httpx.AsyncClient,
) -> None:
    fact = await add_fact(alice, "I love jazz music")
    await alice.delete(f"{FACTS}/{fact['id']}")
    again = await add_fact(alice, "I love jazz music")
    assert again["id"] != fact["id"]
    assert again["mention_count"] == 1
    assert again["confidence"] == pytest.approx(0.6)


async def test_clearing_long_term_memory_deletes_facts_too(
    server: str, alice: httpx.AsyncClient
) -> None:
    async with Client.connect(server, "s1", token="key-alice") as ws:
        await ws.receive()
        await ws.send(type="turn", id="t1", user="hello there", assistant="hi")
        await ws.until("ack")
    fact = await add_fact(alice, "I love jazz music")
    await add_fact(alice, "My name is Ada")
    cleared = await alice.delete(FACTS)
    assert cleared.json() == {"deleted": 4}
    assert (await alice.get(FACTS)).json()["total"] == 0
    assert (await alice.get(f"{FACTS}/{fact['id']}")).status_code == 404


# -- the remember frame --------------------------------------------------------


async def test_remember_frame_answers_a_memory_frame_and_the_fact_shows_in_rest(
    server: str, alice: httpx.AsyncClient
) -> None:
    async with Client.connect(server, "s1", token="key-alice") as ws:
        await ws.receive()
        await ws.send(type="remember", id="r1", content="I prefer aisle seats")
        frame, _ = await ws.until("memory")
        await ws.send(type="remember", id="r2", content="I PREFER AISLE SEATS")
        again, _ = await ws.until("memory")
        await ws.send(type="remember", id="r3", content="I like owls", category="hobby")
        refused, _ = await ws.until("error")
    assert frame["id"] == "r1"
    [fact] = frame["added"]
    assert FACT_ID.match(fact["id"])
    assert (fact["content"], fact["category"]) == ("I prefer aisle seats", "preference")
    assert fact["confidence"] == pytest.approx(0.6)
    assert (again["id"], again["added"]) == ("r2", [])
    assert [f["id"] for f in again["updated"]] == [fact["id"]]
    assert (refused["id"], refused["code"]) == ("r3", "bad_request")
    got = (await alice.get(f"{FACTS}/{fact['id']}")).json()
    assert got["content"] == "I prefer aisle seats"
    assert got["mention_count"] == 2
    listed = (await alice.get(FACTS, params={"kind": "facts"})).json()
    assert [item["id"] for item in listed["items"]] == [fact["id"]]


# -- isolation -----------------------------------------------------------------


async def test_another_user_can_neither_see_nor_change_nor_delete_a_fact(
    server: str, alice: httpx.AsyncClient
) -> None:
    fact = await add_fact(alice, "I love jazz music")
    async with http(server, "key-bob") as bob:
        listed = (await bob.get(FACTS)).json()
        got = await bob.get(f"{FACTS}/{fact['id']}")
        patched = await bob.patch(f"{FACTS}/{fact['id']}", json={"content": "hacked"})
        deleted = await bob.delete(f"{FACTS}/{fact['id']}")
        cleared = (await bob.delete(FACTS)).json()
        mine = await add_fact(bob, "I love jazz music")
    assert listed["total"] == 0
    for response in (got, patched, deleted):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
    assert cleared == {"deleted": 0}
    # Bob's equal text is his own new fact, not a reinforcement of Alice's.
    assert mine["id"] != fact["id"]
    assert mine["mention_count"] == 1
    assert (await alice.get(f"{FACTS}/{fact['id']}")).json() == fact


async def test_forgetting_a_fact_retracts_it_out_of_recall_and_confirming_one_is_logged(
    alice: httpx.AsyncClient,
) -> None:
    jazz = await add_fact(alice, "I love jazz music")
    tea = await add_fact(alice, "I drink green tea")
    forgotten = await alice.post(f"{FACTS}/{jazz['id']}/forget")
    assert forgotten.status_code == 200
    assert forgotten.json()["validity"] == "retracted"
    active = (await alice.get(FACTS, params={"kind": "facts"})).json()["items"]
    assert [f["id"] for f in active] == [tea["id"]]
    history = await alice.get(FACTS, params={"kind": "facts", "validity": "retracted"})
    assert [f["id"] for f in history.json()["items"]] == [jazz["id"]]
    hits = (await alice.get("/memory/search", params={"q": "jazz music", "kind": "facts"})).json()
    assert jazz["id"] not in [h["id"] for h in hits["hits"]]
    confirmed = await alice.post(f"{FACTS}/{tea['id']}/confirm")
    assert (confirmed.status_code, confirmed.json()["validity"]) == (200, "active")
    log = await alice.get("/memory/events", params={"type": "fact_retracted,fact_confirmed"})
    assert [(e["event_type"], e["payload"]["fact_id"]) for e in log.json()["events"]] == [
        ("fact_confirmed", tea["id"]),
        ("fact_retracted", jazz["id"]),
    ]
    turn = await alice.post(f"{FACTS}/msg_0123456789abcdef/confirm")
    assert (turn.status_code, turn.json()["error"]["code"]) == (400, "bad_request")
    for how in ("forget", "confirm"):
        missing = await alice.post(f"{FACTS}/fact_00000000/{how}")
        assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")


async def test_a_fact_stored_with_seed_002s_fields_keeps_them_and_its_key_supersedes(
    alice: httpx.AsyncClient,
) -> None:
    stated = {"subject": "user", "predicate": "lives_in", "importance": 8, "tags": ["home"]}
    lyon = await add_fact(alice, "Flat by the Saône", permanence="stable", **stated)
    assert (lyon["importance"], lyon["permanence"], lyon["tags"]) == (8.0, "stable", ["home"])
    assert (lyon["subject"], lyon["predicate"], lyon["entity_id"]) == ("user", "lives_in", None)
    assert lyon["last_confirmed_at"] == lyon["updated_at"]
    assert (lyon["validity"], lyon["confidence"]) == ("active", 1.0)
    response = await alice.post(FACTS, json={"content": "House near the Seine", **stated})
    assert [f["id"] for f in response.json()["superseded"]] == [lyon["id"]]
    refusals: list[tuple[dict[str, Any], str]] = [
        ({"permanence": "forever"}, "valid levels: permanent, stable, standard, volatile"),
        ({"importance": 11}, "Expected `float` <= 10"),
        ({"tags": [""]}, "length >= 1"),
    ]
    for bad, message in refusals:
        refused = await alice.post(FACTS, json={"content": "Likes tea", **bad})
        assert refused.status_code == 400, refused.text
        assert message in refused.json()["error"]["message"]
