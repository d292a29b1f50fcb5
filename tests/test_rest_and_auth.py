"""REST endpoints and identity over the real server: paging, errors, keys, user isolation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from testing.fake_ollama import FakeOllama
from tests.harness import Client, http, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

KEYS = {"key-alice": "alice", "key-bob": "bob"}


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, fake.url, api_keys=KEYS))) as address:
        yield address


async def archive(server: str, key: str, session: str, *pairs: tuple[str, str]) -> None:
    async with Client.connect(server, session, token=key) as client:
        await client.receive()
        for i, (user, assistant) in enumerate(pairs):
            await client.send(type="turn", id=f"t{i}", user=user, assistant=assistant)
            await client.until("ack")


async def test_healthz_answers_without_credentials(server: str) -> None:
    async with http(server, None) as client:
        response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response.json()["extraction"] == {
        "succeeded": 0,
        "invalid": 0,
        "failed": 0,
        "by_rules": 0,
        "rejected": {},
    }


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/memory/long-term"),
        ("DELETE", "/memory/long-term"),
        ("GET", "/memory/long-term/msg_0000000000000000"),
        ("DELETE", "/memory/long-term/msg_0000000000000000"),
        ("GET", "/memory/working/s1"),
        ("GET", "/memory/categories"),
    ],
    ids=["list", "clear", "get", "delete", "working", "categories"],
)
@pytest.mark.parametrize("key", [None, "wrong-key"], ids=["no-key", "bad-key"])
async def test_every_memory_endpoint_needs_a_valid_key(
    server: str, method: str, path: str, key: str | None
) -> None:
    async with http(server, key) as client:
        response = await client.request(method, path)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("token", [None, "wrong-key"], ids=["no-token", "bad-token"])
async def test_websocket_without_a_valid_token_is_refused_with_401(
    server: str, token: str | None
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with Client.connect(server, "s1", token=token):
            pass
    assert refused.value.response.status_code == 401


async def test_paging_returns_items_total_limit_and_offset(server: str) -> None:
    await archive(server, "key-alice", "s1", *((f"u{i}", f"a{i}") for i in range(3)))
    async with http(server, "key-alice") as client:
        page = (await client.get("/memory/long-term", params={"limit": 4, "offset": 1})).json()
        rest = (await client.get("/memory/long-term", params={"limit": 4, "offset": 5})).json()
    assert (page["total"], page["limit"], page["offset"], len(page["items"])) == (6, 4, 1, 4)
    assert len(rest["items"]) == 1
    ids = {i["id"] for i in page["items"]} | {i["id"] for i in rest["items"]}
    assert len(ids) == 5


@pytest.mark.parametrize(
    "params", [{"limit": "0"}, {"limit": "x"}, {"offset": "-1"}, {"limit": "100000"}]
)
async def test_bad_paging_parameters_are_400_with_a_json_error(
    server: str, params: dict[str, Any]
) -> None:
    async with http(server, "key-alice") as client:
        response = await client.get("/memory/long-term", params=params)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"


async def test_get_and_delete_one_memory(server: str) -> None:
    await archive(server, "key-alice", "s1", ("I like jazz", "Nice"))
    async with http(server, "key-alice") as client:
        items = (await client.get("/memory/long-term")).json()["items"]
        # The turns, and the fact the rule-based reader found in them.
        target = next(i for i in items if i.get("text") == "I like jazz")
        got = (await client.get(f"/memory/long-term/{target['id']}")).json()
        deleted = await client.delete(f"/memory/long-term/{target['id']}")
        again = await client.get(f"/memory/long-term/{target['id']}")
        remaining = (await client.get("/memory/long-term")).json()
    assert got == target
    assert got["kind"] == "turn"
    assert deleted.json() == {"deleted": target["id"]}
    assert again.status_code == 404
    assert again.json()["error"]["code"] == "not_found"
    assert [i["text"] for i in remaining["items"] if i["kind"] == "turn"] == ["Nice"]


async def test_clear_deletes_long_term_memory_but_keeps_working_memory(server: str) -> None:
    async with Client.connect(server, "live", token="key-alice") as client:
        await client.receive()
        await client.send(type="turn", id="t1", user="a", assistant="b")
        await client.until("ack")
        async with http(server, "key-alice") as http_client:
            cleared = (await http_client.delete("/memory/long-term")).json()
            listed = (await http_client.get("/memory/long-term")).json()
            working = await http_client.get("/memory/working/live")
    assert cleared == {"deleted": 2}
    assert listed["total"] == 0
    assert working.status_code == 200
    assert working.json()["turn_count"] == 1


async def test_unknown_ids_and_routes_are_json_404s(server: str) -> None:
    async with http(server, "key-alice") as client:
        missing = await client.get("/memory/long-term/msg_ffffffffffffffff")
        malformed = await client.delete("/memory/long-term/not-an-id")
        working = await client.get("/memory/working/nope")
        route = await client.get("/no/such/route")
    for response in (missing, malformed, working, route):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


async def test_two_users_never_see_each_others_rows_through_any_endpoint(server: str) -> None:
    await archive(server, "key-alice", "shared", ("alice secret: tulips", "ok"))
    await archive(server, "key-bob", "shared", ("bob secret: cactus", "ok"))
    async with http(server, "key-alice") as alice, http(server, "key-bob") as bob:
        alice_items = (await alice.get("/memory/long-term")).json()["items"]
        bob_items = (await bob.get("/memory/long-term")).json()["items"]
        alice_id = next(i["id"] for i in alice_items if "tulips" in i["text"])
        assert all("cactus" not in i["text"] for i in alice_items)
        assert all("tulips" not in i["text"] for i in bob_items)
        assert (await bob.get(f"/memory/long-term/{alice_id}")).status_code == 404
        assert (await bob.delete(f"/memory/long-term/{alice_id}")).status_code == 404
        assert (await alice.get("/memory/working/shared")).json()["turn_count"] == 1
        assert (await bob.delete("/memory/long-term")).json() == {"deleted": 2}
        assert (await alice.get(f"/memory/long-term/{alice_id}")).status_code == 200
    async with Client.connect(server, "shared", token="key-bob") as client:
        await client.receive()
        await client.send(type="context", id="q", query="secret tulips", format="conversation")
        block = await client.receive()
    assert "tulips" not in block["text"]
