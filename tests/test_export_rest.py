"""`GET /memory/export`: a user's memories as JSON lines, and nobody else's."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.fake_ollama import FakeOllama
from tests.harness import Client, make_app, serve, settings_for

pytestmark = pytest.mark.anyio


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    settings = settings_for(tmp_path, fake.url, api_keys={"ka": "alice", "kb": "bob"})
    async with serve(make_app(settings)) as address:
        yield address


async def export(server: str, key: str) -> list[dict[str, object]]:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=f"http://{server}", headers=headers) as client:
        response = await client.get("/memory/export")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


async def test_export_has_every_fact_and_turn_of_the_user_as_json_lines(server: str) -> None:
    async with Client.connect(server, "s1", token="ka") as client:
        await client.receive()
        await client.send(type="remember", id="r", content="User plays the cello", pinned=True)
        await client.until("memory")
        await client.send(
            type="turn",
            id="t1",
            user="Bach tonight",
            assistant="Enjoy",
            meta={"source": "import-test"},
        )
        await client.until("ack")
    lines = await export(server, "ka")
    facts = [line for line in lines if line["kind"] == "fact"]
    turns = [line for line in lines if line["kind"] == "turn"]
    assert [(f["content"], f["pinned"], f["validity"]) for f in facts] == [
        ("User plays the cello", True, "active")
    ]
    assert sorted((t["role"], t["text"]) for t in turns) == [
        ("assistant", "Enjoy"),
        ("user", "Bach tonight"),
    ]
    assert all(t["session_id"] == "s1" and t["meta"] == {"source": "import-test"} for t in turns)
    assert await export(server, "kb") == []
