"""Provenance links: validation, the links a change of facts makes, and links over REST."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from memory.facts import Changes, Conflict
from memory.links import change_links, item_type, relation, supersession_links
from testing.fake_ollama import FakeOllama
from testing.records import a_fact
from tests.harness import http, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LINKS = "/memory/links"


def test_types_and_relations_outside_the_seeds_are_refused_naming_the_valid_ones() -> None:
    assert (item_type("episode"), relation("derived_from")) == ("episode", "derived_from")
    with pytest.raises(ValueError, match="episode, fact, rule"):
        item_type("note")
    with pytest.raises(ValueError, match="derived_from, supports, contradicts, supersedes"):
        relation("causes")


def test_a_conflict_is_a_stored_link_and_a_supersession_is_read_from_the_facts() -> None:
    old = a_fact(category="identity")
    changes = Changes(
        superseded=[
            msgspec.structs.replace(old, validity="superseded", superseded_by="fact_00000002"),
        ],
        conflicts=[Conflict("fact_00000003", "fact_00000004", "pinned")],
    )
    made = [(k.source_id, k.relation, k.target_id) for k in change_links("u1", changes, T0)]
    assert made == [("fact_00000003", "contradicts", "fact_00000004")]
    new = msgspec.structs.replace(old, id="fact_00000002", updated_at=T0)
    gone = msgspec.structs.replace(old, validity="superseded", superseded_by=new.id)
    orphan = msgspec.structs.replace(old, id="fact_00000009", superseded_by="fact_00000077")
    facts = [gone, new, orphan]

    def found(fact_id: str, direction: str) -> list[tuple[str, str, str]]:
        links = supersession_links("u1", facts, fact_id, direction)
        return [(k.source_id, k.relation, k.target_id) for k in links]

    link = ("fact_00000002", "supersedes", old.id)
    assert found(new.id, "outgoing") == found(new.id, "both") == [link]
    assert found(old.id, "incoming") == found(old.id, "both") == [link]
    assert found(old.id, "outgoing") == found(new.id, "incoming") == []
    assert found(orphan.id, "both") == []  # its successor is gone: no link to nowhere
    assert found("fact_00000042", "both") == []
    [made_link] = supersession_links("u1", facts, old.id, "incoming")
    assert (made_link.user_id, made_link.created_at) == ("u1", gone.updated_at)


# -- through the server --------------------------------------------------------------------

KEYS = {"key-alice": "alice", "key-bob": "bob"}


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, fake.url, api_keys=KEYS))) as address:
        yield address


async def fact(client: httpx.AsyncClient, content: str) -> dict[str, Any]:
    response = await client.post("/memory/long-term", json={"content": content})
    added: list[dict[str, Any]] = response.json()["added"]
    return added[0]


async def links(client: httpx.AsyncClient, kind: str, item: str, **more: str) -> list[Any]:
    response = await client.get(LINKS, params={"type": kind, "id": item, **more})
    assert response.status_code == 200, response.text
    found: list[Any] = response.json()["links"]
    return found


async def test_a_fact_that_supersedes_another_is_linked_to_it(server: str) -> None:
    async with http(server, "key-alice") as alice:
        lyon = await fact(alice, "I live in Lyon")
        paris = await fact(alice, "I live in Paris")
        [link] = await links(alice, "fact", lyon["id"], direction="incoming")
        assert link == {
            "source_type": "fact",
            "source_id": paris["id"],
            "target_type": "fact",
            "target_id": lyon["id"],
            "relation": "supersedes",
            "created_at": link["created_at"],
        }
        assert await links(alice, "fact", lyon["id"], direction="outgoing") == []
        assert await links(alice, "fact", paris["id"]) == [link]
        await alice.delete(f"/memory/long-term/{paris['id']}")
        assert await links(alice, "fact", lyon["id"]) == []


async def test_a_link_is_made_once_between_memories_that_exist(server: str) -> None:
    async with http(server, "key-alice") as alice:
        tea = await fact(alice, "I drink green tea every morning")
        rule = (await alice.post("/memory/rules", json={"content": "Suggest tea"})).json()
        body = {
            "source_type": "rule",
            "source_id": rule["id"],
            "target_type": "fact",
            "target_id": tea["id"],
            "relation": "derived_from",
        }
        first = await alice.post(LINKS, json=body)
        assert (first.status_code, first.json()["created"]) == (201, True)
        again = await alice.post(LINKS, json=body | {"relation": "supports"})
        assert (again.status_code, again.json()["created"]) == (200, False)
        assert again.json()["link"]["relation"] == "derived_from"
        assert len(await links(alice, "rule", rule["id"])) == 1
        missing = await alice.post(LINKS, json=body | {"target_id": "fact_00000000"})
        assert missing.status_code == 404
        async with http(server, "key-bob") as bob:
            assert (await bob.post(LINKS, json=body)).status_code == 404
            assert await links(bob, "rule", rule["id"]) == []
        await alice.delete(f"/memory/rules/{rule['id']}")
        assert await links(alice, "fact", tea["id"]) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"relation": "causes"}, "valid relations"),
        ({"source_type": "note"}, "valid types"),
        ({"source_id": "fact_00000001"}, "cannot link to itself"),
        ({"target_id": "x' OR 1=1"}, "Expected `str` matching regex"),
    ],
)
async def test_a_bad_link_is_a_400_naming_the_problem(
    server: str, change: dict[str, str], message: str
) -> None:
    body = {
        "source_type": "fact",
        "source_id": "fact_00000002",
        "target_type": "fact",
        "target_id": "fact_00000001",
        "relation": "supports",
    }
    async with http(server, "key-alice") as alice:
        response = await alice.post(LINKS, json=body | change)
        assert response.status_code == 400, response.text
        assert message in response.json()["error"]["message"]
        params = {"type": "fact", "id": "fact_00000001", "direction": "up"}
        bad = await alice.get(LINKS, params=params)
        assert "direction must be one of outgoing, incoming, both" in bad.text
        odd = await alice.get(LINKS, params=params | {"id": "fact_1' OR 1=1"})
        assert "id must be a fact_, rule_, msg_ or ep_ id" in odd.text
