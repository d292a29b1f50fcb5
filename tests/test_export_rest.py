"""`GET /memory/export`: a user's memories as JSON lines, and nobody else's."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from testing.fake_ollama import FakeOllama
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


async def test_a_client_leaving_mid_export_leaves_no_socket_send_warnings_in_the_log(
    server: str, caplog: pytest.LogCaptureFixture
) -> None:
    turns = [
        {"kind": "turn", "id": f"t{n}", "session_id": "s1", "speaker": "user", "role": "user"}
        | {"text": f"line {n} " + "x" * 200, "at": "2024-06-02T12:00:00Z"}
        for n in range(3000)
    ]
    body = "".join(json.dumps(t) + "\n" for t in turns)
    headers = {"Authorization": "Bearer ka", "Content-Type": "application/x-ndjson"}
    async with httpx.AsyncClient(base_url=f"http://{server}", headers=headers) as client:
        imported = await client.post("/memory/import", content=body, timeout=60)
    assert imported.json()["imported"] == 3000
    export_and_leave = f"{sys.executable} -m server.cli export --url http://{server} --key ka"
    with caplog.at_level(logging.WARNING):
        for _ in range(3):  # as a person does: the first lines, then the reader leaves
            done = await anyio.run_process(f"{export_and_leave} | head -1", check=False)
            assert json.loads(done.stdout)["kind"] == "turn"
        await anyio.sleep(1.0)
        still = await export(server, "ka")
    assert len(still) == 3000  # the server still answers
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [w for w in warnings if "socket.send()" in w], warnings
