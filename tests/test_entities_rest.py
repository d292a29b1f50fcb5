"""Entities through the real server: create, get, update, resolve, and what each refuses."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from testing.fake_ollama import FakeOllama
from tests.harness import http, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

KEYS = {"key-alice": "alice", "key-bob": "bob"}
ENTITY_ID = re.compile(r"^ent_[0-9a-f]{8}$")
ENTITIES = "/memory/entities"


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, fake.url, api_keys=KEYS))) as address:
        yield address


@pytest.fixture
async def alice(server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with http(server, "key-alice") as client:
        yield client


async def create(client: httpx.AsyncClient, name: str, kind: str, **more: Any) -> dict[str, Any]:
    response = await client.post(
        ENTITIES, json={"canonical_name": name, "entity_type": kind, **more}
    )
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()
    return made


async def resolve(client: httpx.AsyncClient, name: str, **more: Any) -> list[dict[str, Any]]:
    response = await client.post(f"{ENTITIES}/resolve", json={"name": name, **more})
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["candidates"]
    return found


async def test_a_created_entity_has_seed_002s_fields_and_is_read_back(
    alice: httpx.AsyncClient,
) -> None:
    ana = await create(alice, "Ana Souza", "person", aliases=["Ana"], metadata={"city": "Porto"})
    assert ENTITY_ID.match(ana["id"])
    assert sorted(ana) == [
        "aliases",
        "canonical_name",
        "created_at",
        "entity_type",
        "id",
        "metadata",
        "updated_at",
    ]
    assert (ana["aliases"], ana["metadata"]) == (["Ana"], {"city": "Porto"})
    assert (await alice.get(f"{ENTITIES}/{ana['id']}")).json() == ana
    assert [e["id"] for e in (await alice.get(ENTITIES)).json()["entities"]] == [ana["id"]]


async def test_a_name_taken_for_its_type_is_a_409_and_another_type_may_share_it(
    alice: httpx.AsyncClient,
) -> None:
    await create(alice, "Jordan", "person")
    again = await alice.post(ENTITIES, json={"canonical_name": "jordan", "entity_type": "person"})
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "conflict"
    await create(alice, "Jordan", "place")


async def test_an_update_replaces_name_and_aliases_and_merges_metadata(
    alice: httpx.AsyncClient,
) -> None:
    bob = await create(alice, "Bob", "person", aliases=["Bobby"], metadata={"a": 1, "b": 2})
    response = await alice.patch(
        f"{ENTITIES}/{bob['id']}", json={"aliases": ["Rob"], "metadata": {"b": 3}}
    )
    changed = response.json()
    assert (changed["canonical_name"], changed["aliases"]) == ("Bob", ["Rob"])
    assert changed["metadata"] == {"a": 1, "b": 3}
    assert changed["updated_at"] >= bob["updated_at"]
    assert changed["created_at"] == bob["created_at"]
    await create(alice, "Robert", "person")
    clash = await alice.patch(f"{ENTITIES}/{bob['id']}", json={"canonical_name": "ROBERT"})
    assert clash.status_code == 409


async def test_resolution_ranks_the_tiers_and_never_creates_an_entity(
    alice: httpx.AsyncClient,
) -> None:
    ana = await create(alice, "Ana Souza", "person", aliases=["my sister"])
    anna = await create(alice, "Anna Berg", "person")
    acme = await create(alice, "Acme", "organization")
    assert [
        (c["entity_id"], c["name_match"], c["score"]) for c in await resolve(alice, "ana souza")
    ] == [(ana["id"], "exact", 100.0)]
    assert [c["name_match"] for c in await resolve(alice, "My Sister")] == ["alias"]
    assert [(c["entity_id"], c["score"]) for c in await resolve(alice, "Ann")] == [
        (anna["id"], 50.0)
    ]
    assert await resolve(alice, "Anna Berk") == []
    fuzzy = await resolve(alice, "Anna Berk", enable_fuzzy=True)
    assert [(c["entity_id"], c["name_match"]) for c in fuzzy] == [(anna["id"], "fuzzy")]
    typed = await resolve(alice, "a", entity_type="organization")
    assert [c["entity_id"] for c in typed] == [acme["id"]]
    boosted = await resolve(alice, "an", context_hints={"domain_scores": {anna["id"]: 60}})
    assert [(c["entity_id"], c["score"]) for c in boosted] == [
        (anna["id"], 110.0),
        (ana["id"], 50.0),
    ]
    assert await resolve(alice, "Zed") == []
    assert len((await alice.get(ENTITIES)).json()["entities"]) == 3


async def test_another_users_entities_do_not_exist_for_them(
    alice: httpx.AsyncClient, server: str
) -> None:
    ana = await create(alice, "Ana", "person")
    async with http(server, "key-bob") as bob:
        assert (await bob.get(f"{ENTITIES}/{ana['id']}")).status_code == 404
        assert (await bob.patch(f"{ENTITIES}/{ana['id']}", json={"aliases": []})).status_code == 404
        assert await resolve(bob, "Ana") == []
        await create(bob, "Ana", "person")  # bob's own Ana: no clash with alice's
    await alice.delete("/memory/long-term")
    assert (await alice.get(ENTITIES)).json()["entities"] == []


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (ENTITIES, {"canonical_name": "X", "entity_type": "animal"}, "valid types: person"),
        (ENTITIES, {"canonical_name": "  ", "entity_type": "person"}, "blank"),
        (ENTITIES, {"canonical_name": "", "entity_type": "person"}, "length >= 1"),
        (
            ENTITIES,
            {"canonical_name": "X", "entity_type": "person", "tenant_id": "t"},
            "unknown field",
        ),
        (f"{ENTITIES}/resolve", {"name": "X", "entity_type": "ghost"}, "valid types"),
        (f"{ENTITIES}/resolve", {"name": "X", "enable_fuzzy": "yes"}, "Expected `bool`"),
    ],
)
async def test_bad_entity_requests_get_a_400_naming_the_problem(
    alice: httpx.AsyncClient, path: str, body: dict[str, Any], message: str
) -> None:
    response = await alice.post(path, json=body)
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]["message"]


async def fact(client: httpx.AsyncClient, content: str, **stated: Any) -> dict[str, Any]:
    response = await client.post("/memory/long-term", json={"content": content, **stated})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_facts_about_an_entity_share_its_key_and_steer_its_resolution(
    alice: httpx.AsyncClient,
) -> None:
    cho = await create(alice, "Sam Cho", "person")
    lee = await create(alice, "Sam Lee", "person")
    porto = await fact(alice, "Sam Lee lives in Porto", predicate="lives_in", entity_id=lee["id"])
    [stored] = porto["added"]
    assert (stored["entity_id"], stored["predicate"]) == (lee["id"], "lives_in")
    await fact(alice, "Sam Cho lives in Oslo", predicate="lives_in", entity_id=cho["id"])
    moved = await fact(alice, "Sam Lee moved to Lisbon", predicate="lives_in", entity_id=lee["id"])
    assert [f["id"] for f in moved["superseded"]] == [stored["id"]]
    await fact(alice, "Sam Lee plays cello in an orchestra", predicate="hobby", entity_id=lee["id"])
    plain = await resolve(alice, "sam")
    assert [c["canonical_name"] for c in plain] == ["Sam Cho", "Sam Lee"]
    hinted = await resolve(alice, "sam", context_hints={"topic": "cello orchestra concert"})
    assert [c["canonical_name"] for c in hinted] == ["Sam Lee", "Sam Cho"]
    assert 50.0 < hinted[0]["score"] <= 70.0
    missing = await alice.post(
        "/memory/long-term", json={"content": "x y z", "entity_id": "ent_00000000"}
    )
    assert missing.status_code == 400
    assert "entity ent_00000000 does not exist" in missing.json()["error"]["message"]


async def test_merging_moves_the_facts_tombstones_the_source_and_is_logged(
    alice: httpx.AsyncClient,
) -> None:
    ana = await create(alice, "Ana", "person", aliases=["my sister"])
    souza = await create(alice, "Ana Souza", "person")
    lives = await fact(alice, "Ana lives in Porto", predicate="lives_in", entity_id=ana["id"])
    [moved] = lives["added"]
    body = {"source_entity_id": ana["id"], "target_entity_id": souza["id"]}
    response = await alice.post(f"{ENTITIES}/merge", json=body)
    assert response.status_code == 200, response.text
    merged = response.json()
    assert merged["target"]["aliases"] == ["Ana", "my sister"]
    assert (merged["facts_repointed"], merged["facts_superseded"]) == (1, 0)
    assert [c["entity_id"] for c in await resolve(alice, "my sister")] == [souza["id"]]
    assert [c["name_match"] for c in await resolve(alice, "ana")] == ["alias"]
    source = (await alice.get(f"{ENTITIES}/{ana['id']}")).json()
    assert source["metadata"] == {"merged_into": souza["id"]}
    stored = (await alice.get(f"/memory/long-term/{moved['id']}")).json()
    assert stored["entity_id"] == souza["id"]
    log = (await alice.get("/memory/events", params={"type": "entity_merge"})).json()
    assert [e["payload"] for e in log["events"]] == [
        {
            "source_entity_id": ana["id"],
            "target_entity_id": souza["id"],
            "facts_repointed": 1,
            "facts_superseded": 0,
            "aliases_added": ["Ana", "my sister"],
        }
    ]
    again = await alice.post(f"{ENTITIES}/merge", json=body)
    assert again.status_code == 400
    assert "was merged into" in again.json()["error"]["message"]
    itself = {"source_entity_id": souza["id"], "target_entity_id": souza["id"]}
    assert (await alice.post(f"{ENTITIES}/merge", json=itself)).status_code == 400
    unknown = {"source_entity_id": "ent_00000000", "target_entity_id": souza["id"]}
    assert (await alice.post(f"{ENTITIES}/merge", json=unknown)).status_code == 404
