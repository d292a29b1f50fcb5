"""MCP sessions belong to a user: another key cannot use, watch or end one; each user has a
cap of open sessions; idle sessions close; one user never makes another's ``initialize``
fail. Through the real server and the MCP SDK's own client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from testing.fake_ollama import FakeOllama
from tests.harness import make_app, serve, settings_for
from tests.mcp_client import call, mcp_session

pytestmark = pytest.mark.anyio

KEYS = {"key-alice": "alice", "key-alice-2": "alice", "key-bob": "bob"}
ACCEPT = {"Accept": "application/json, text/event-stream"}
VERSION = "2025-06-18"


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    settings = settings_for(
        tmp_path, fake.url, api_keys=KEYS, max_mcp_sessions_per_user=3, mcp_idle_timeout=1.5
    )
    async with serve(make_app(settings)) as address:
        yield address


def _client(address: str, key: str) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {key}", **ACCEPT}
    return httpx.AsyncClient(base_url=f"http://{address}", headers=headers, timeout=10)


async def _initialize(client: httpx.AsyncClient) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    return await client.post("/mcp", json=body)


async def _open(client: httpx.AsyncClient) -> str:
    """A session opened by hand (initialize, then initialized); its id."""
    answer = await _initialize(client)
    assert answer.status_code == 200, answer.text
    session = answer.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = _session_headers(session)
    assert (await client.post("/mcp", json=note, headers=headers)).status_code == 202
    return session


def _session_headers(session: str) -> dict[str, str]:
    return {"Mcp-Session-Id": session, "Mcp-Protocol-Version": VERSION}


async def _tools(client: httpx.AsyncClient, session: str) -> httpx.Response:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    return await client.post("/mcp", json=body, headers=_session_headers(session))


async def test_another_users_key_gets_404_for_a_session_on_post_get_and_delete(
    server: str,
) -> None:
    async with _client(server, "key-alice") as alice, _client(server, "key-bob") as bob:
        session = await _open(alice)
        headers = _session_headers(session)
        assert (await _tools(bob, session)).status_code == 404
        assert (await bob.get("/mcp", headers=headers)).status_code == 404
        assert (await bob.delete("/mcp", headers=headers)).status_code == 404
        # The session is alice's, untouched: her other key is the same user.
        async with _client(server, "key-alice-2") as same_user:
            assert (await _tools(same_user, session)).status_code == 200
        assert (await _tools(alice, session)).status_code == 200
        assert (await alice.delete("/mcp", headers=headers)).status_code == 200
        assert (await _tools(alice, session)).status_code == 404


async def test_a_user_at_the_cap_gets_429_and_never_stops_another_users_initialize(
    server: str,
) -> None:
    async with _client(server, "key-alice") as alice:
        held = [await _open(alice) for _ in range(3)]
        # A storm of openings: every one past the cap is refused, none is kept.
        answers = []

        async def attempt() -> None:
            answers.append(await _initialize(alice))

        async with anyio.create_task_group() as tg:
            for _ in range(30):
                tg.start_soon(attempt)
        assert {a.status_code for a in answers} == {429}
        assert answers[0].json()["error"]["code"] == "too_many_sessions"
        # Bob, through the SDK's client, is served as if alice were not there.
        async with mcp_session(server, "key-bob") as mcp:
            rule = await call(mcp, "memory_store_rule", content="Be brief")
        assert rule["content"] == "Be brief"
        # Ending one of hers makes room for one more of hers.
        assert (await alice.delete("/mcp", headers=_session_headers(held[0]))).status_code == 200
        await _open(alice)
        assert (await _initialize(alice)).status_code == 429


async def test_an_idle_session_closes_and_frees_its_place(server: str) -> None:
    async with _client(server, "key-alice") as alice:
        sessions = [await _open(alice) for _ in range(3)]
        assert (await _initialize(alice)).status_code == 429
        await anyio.sleep(1.0)
        assert (await _tools(alice, sessions[0])).status_code == 200  # in use: kept
        await anyio.sleep(1.2)
        assert (await _tools(alice, sessions[1])).status_code == 404  # idle 2.2 s: closed
        assert (await _tools(alice, sessions[0])).status_code == 200
        await _open(alice)
