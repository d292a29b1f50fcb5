"""`GET /memory/search` end to end: scored hits over facts and archived turns, per user."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.fake_ollama import FakeOllama
from tests.harness import Client, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

KEYS = {"ka": "alice", "kb": "bob"}


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, fake.url, api_keys=KEYS))) as address:
        yield address


async def seed(server: str) -> None:
    async with Client.connect(server, "s1", token="ka") as client:
        await client.receive()
        await client.send(type="remember", id="r", content="User drinks green tea every morning")
        await client.until("memory")
        await client.send(
            type="turn",
            id="t",
            user="Green tea is my favourite",
            assistant="Nice",
            meta={"dia_id": "D1:3"},
        )
        await client.until("ack")


def http(server: str, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=f"http://{server}", headers={"Authorization": f"Bearer {key}"}
    )


async def test_search_returns_facts_and_turns_best_first_with_meta(server: str) -> None:
    await seed(server)
    async with http(server, "ka") as client:
        hits = (await client.get("/memory/search", params={"q": "green tea", "k": 5})).json()[
            "hits"
        ]
    kinds = {h["kind"] for h in hits}
    assert kinds == {"fact", "turn"}
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    turn = next(h for h in hits if h["kind"] == "turn" and h["role"] == "user")
    assert turn["text"] == "Green tea is my favourite"
    assert turn["meta"] == {"dia_id": "D1:3"}
    fact = next(h for h in hits if h["kind"] == "fact")
    assert fact["text"] == "User drinks green tea every morning"
    assert all(0.0 <= h["score"] <= 1.5 for h in hits)
    assert all("vector" not in h and "user_id" not in h for h in hits)


@pytest.mark.parametrize(("kind", "expected"), [("facts", {"fact"}), ("turns", {"turn"})])
async def test_search_kind_selects_facts_or_turns(
    server: str, kind: str, expected: set[str]
) -> None:
    await seed(server)
    async with http(server, "ka") as client:
        hits = (await client.get("/memory/search", params={"q": "tea", "kind": kind})).json()[
            "hits"
        ]
    assert hits
    assert {h["kind"] for h in hits} == expected


async def test_search_never_returns_another_users_memories(server: str) -> None:
    await seed(server)
    async with http(server, "kb") as client:
        hits = (await client.get("/memory/search", params={"q": "green tea"})).json()["hits"]
    assert hits == []


@pytest.mark.parametrize(
    "params",
    [{}, {"q": " "}, {"q": "x", "k": "0"}, {"q": "x", "kind": "rules"}, {"q": "x", "scope": "a b"}],
    ids=["no-query", "blank-query", "zero-k", "unknown-kind", "bad-scope"],
)
async def test_bad_search_parameters_are_400(server: str, params: dict[str, str]) -> None:
    async with http(server, "ka") as client:
        response = await client.get("/memory/search", params=params)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"
