"""The trust boundary (``server.boundary``) through the real server: ``Host`` and ``Origin``
on every route (REST, the chat socket, the tail, the page, ``/mcp``), CORS for listed
origins, ``nosniff`` on every answer; with and without keys."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from server.boundary import Boundary, host_name, origin_key
from testing.fake_ollama import FakeOllama
from tests.harness import make_app, serve, settings_for

pytestmark = pytest.mark.anyio

PAGE = "http://127.0.0.1:5173"  # a frontend served elsewhere, listed by the deployer
EVIL = "http://evil.example"
MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(params=[{}, {"api_keys": {"key-a": "alice"}}], ids=["no keys", "keys"])
async def server(
    request: pytest.FixtureRequest, tmp_path: Path, fake: FakeOllama
) -> AsyncIterator[tuple[str, dict[str, str]]]:
    """(address, the headers a legitimate client adds): without keys and with them."""
    changes: dict[str, Any] = request.param
    settings = settings_for(tmp_path, fake.url, allowed_origins=[PAGE], **changes)
    auth = {"Authorization": "Bearer key-a"} if changes else {}
    async with serve(make_app(settings)) as address:
        yield address, auth


def _requests(auth: dict[str, str]) -> list[tuple[str, str, dict[str, Any]]]:
    """One request per kind of route: (method, path, httpx keyword arguments)."""
    return [
        ("GET", "/memory/export", {"headers": auth}),
        ("GET", "/memory/long-term", {"headers": auth}),
        # What a page's "simple" cross-origin POST looks like: no preflight.
        (
            "POST",
            "/memory/long-term",
            {"headers": {**auth, "Content-Type": "text/plain"}, "content": '{"content": "x"}'},
        ),
        (
            "POST",
            "/memory/rules",
            {"headers": {**auth, "Content-Type": "text/plain"}, "content": '{"content": "y"}'},
        ),
        ("GET", "/", {}),
        ("GET", "/web/app.js", {}),
        ("GET", "/healthz", {}),
        ("GET", "/actors", {"headers": auth}),
        ("POST", "/mcp", {"headers": {**auth, **MCP_HEADERS}, "json": MCP_LIST}),
    ]


async def _call(
    client: httpx.AsyncClient, method: str, path: str, extra: dict[str, str], **kwargs: Any
) -> httpx.Response:
    headers = {**kwargs.pop("headers", {}), **extra}
    return await client.request(method, path, headers=headers, **kwargs)


async def test_a_foreign_host_is_answered_421_on_every_http_route(
    server: tuple[str, dict[str, str]],
) -> None:
    address, auth = server
    async with httpx.AsyncClient(base_url=f"http://{address}") as client:
        for method, path, kwargs in _requests(auth):
            answer = await _call(client, method, path, {"Host": "evil.example"}, **kwargs)
            assert answer.status_code == 421, (method, path, answer.text)
            assert answer.json()["error"]["code"] == "unknown_host"
            assert answer.headers["x-content-type-options"] == "nosniff"
        # Nothing was stored by the refused writes.
        stored = await client.get("/memory/long-term", headers=auth)
    assert stored.json()["total"] == 0


async def test_a_foreign_origin_is_answered_403_on_every_http_route_and_writes_nothing(
    server: tuple[str, dict[str, str]],
) -> None:
    address, auth = server
    async with httpx.AsyncClient(base_url=f"http://{address}") as client:
        for origin in (EVIL, "null", "http://127.0.0.1:1", f"https://{address}x"):
            for method, path, kwargs in _requests(auth):
                answer = await _call(client, method, path, {"Origin": origin}, **kwargs)
                assert answer.status_code == 403, (origin, method, path, answer.text)
                assert answer.json()["error"]["code"] == "forbidden_origin"
        assert (await client.get("/memory/long-term", headers=auth)).json()["total"] == 0
        assert (await client.get("/memory/rules", headers=auth)).json()["rules"] == []


async def test_loopback_names_with_any_port_and_the_same_origin_are_served(
    server: tuple[str, dict[str, str]],
) -> None:
    address, auth = server
    port = address.rsplit(":", 1)[1]
    hosts = [address, f"localhost:{port}", "localhost", "127.0.0.2:80", "[::1]:9", "app.localhost"]
    async with httpx.AsyncClient(base_url=f"http://{address}") as client:
        for host in hosts:
            answer = await client.get("/memory/long-term", headers={**auth, "Host": host})
            assert answer.status_code == 200, host
        same = await client.post(
            "/memory/long-term",
            json={"content": "I live in Lisbon"},
            headers={**auth, "Origin": f"http://{address}"},
        )
        assert same.status_code == 201, same.text
        aliased = await client.get(
            "/memory/long-term",
            headers={**auth, "Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"},
        )
        assert aliased.status_code == 200


async def test_a_listed_origin_gets_cors_answers_and_its_preflight_passes(
    server: tuple[str, dict[str, str]],
) -> None:
    address, auth = server
    async with httpx.AsyncClient(base_url=f"http://{address}") as client:
        preflight = await client.options(
            "/memory/long-term",
            headers={
                "Origin": PAGE,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )
        assert preflight.status_code == 200, preflight.text
        assert preflight.headers["access-control-allow-origin"] == PAGE
        assert "POST" in preflight.headers["access-control-allow-methods"]
        assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
        written = await client.post(
            "/memory/long-term",
            json={"content": "I like tea"},
            headers={**auth, "Origin": PAGE},
        )
        assert written.status_code == 201
        assert written.headers["access-control-allow-origin"] == PAGE
        assert written.headers["x-content-type-options"] == "nosniff"
        foreign = await client.options(
            "/memory/long-term",
            headers={"Origin": EVIL, "Access-Control-Request-Method": "POST"},
        )
        assert foreign.status_code == 403
        assert "access-control-allow-origin" not in foreign.headers


async def _refusal(url: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, **kwargs):
            pass
    response = refused.value.response
    return response.status_code, json.loads(response.body or b"{}")


async def test_websockets_are_refused_at_the_handshake_for_a_foreign_host_or_origin(
    server: tuple[str, dict[str, str]],
) -> None:
    address, auth = server
    host, port = address.rsplit(":", 1)
    for path in ("/ws/s1", "/ws/tail"):
        status, body = await _refusal(
            f"ws://evil.example:{port}{path}", host=host, port=int(port), additional_headers=auth
        )
        assert (status, body["error"]["code"]) == (421, "unknown_host")
        status, body = await _refusal(f"ws://{address}{path}", origin=EVIL, additional_headers=auth)
        assert (status, body["error"]["code"]) == (403, "forbidden_origin")
        for origin in (f"http://{address}", PAGE):
            async with connect(
                f"ws://{address}{path}", origin=Origin(origin), additional_headers=auth
            ) as ws:
                if path == "/ws/s1":
                    assert json.loads(await ws.recv())["type"] == "ready"


def test_host_and_origin_values_are_read_as_browsers_send_them() -> None:
    assert host_name("LocalHost.:8000") == "localhost"
    assert host_name("[::1]:80") == "::1"
    assert host_name("example.com") == "example.com"
    assert origin_key("HTTPS://App.Example.com:443") == "https://app.example.com"
    assert origin_key("http://127.0.0.1:5173/") == "http://127.0.0.1:5173"
    assert origin_key("http://[::1]:8000") == "http://[::1]:8000"
    for bad in ("null", "", "example.com", "http://x/path", "http://u@x", "http://x:99999"):
        assert origin_key(bad) is None, bad


async def test_a_server_on_another_address_answers_the_hosts_it_lists_or_any_without_a_list(
    tmp_path: Path, fake: FakeOllama
) -> None:
    keys = {"api_keys": {"key-a": "alice"}}
    listed = settings_for(
        tmp_path / "a",
        fake.url,
        host="0.0.0.0",
        allowed_hosts=["mnemo.example.com", "*.example.org"],
        **keys,
    )
    async with serve(make_app(listed)) as address:
        async with httpx.AsyncClient(base_url=f"http://{address}") as client:
            for host, status in [
                ("mnemo.example.com:8443", 200),
                ("eu.example.org", 200),
                ("example.org", 421),
                ("evil.example", 421),
                ("localhost", 200),
            ]:
                answer = await client.get("/healthz", headers={"Host": host})
                assert answer.status_code == status, host
    unlisted = settings_for(tmp_path / "b", fake.url, host="0.0.0.0", **keys)
    assert Boundary(make_app(unlisted), unlisted).host_allowed("anything.example")
    loopback = settings_for(tmp_path / "c", fake.url, allowed_hosts=["mnemo.internal"])
    boundary = Boundary(make_app(loopback), loopback)
    assert boundary.host_allowed("mnemo.internal:8000")
    assert not boundary.host_allowed("evil.example")
    assert boundary.host_allowed(None)  # no browser sends no Host


async def test_every_http_answer_says_nosniff(server: tuple[str, dict[str, str]]) -> None:
    address, auth = server
    async with httpx.AsyncClient(base_url=f"http://{address}") as client:
        answers = [
            await client.get("/healthz"),
            await client.get("/"),
            await client.get("/web/app.js"),
            await client.get("/memory/long-term", headers=auth),
            await client.get("/memory/long-term/fact_00000000", headers=auth),
            await client.delete("/healthz"),
            await client.get("/nowhere"),
            await client.post("/mcp", json=MCP_LIST, headers={**auth, **MCP_HEADERS}),
        ]
    for answer in answers:
        assert answer.headers.get_list("x-content-type-options") == ["nosniff"], answer.url
