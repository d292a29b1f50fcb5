"""Where a key may travel: ``Authorization`` everywhere; on a WebSocket also a
``mnemo.bearer.<base64url>`` subprotocol entry (what a browser can send) or, for old
clients, ``?token=``; never a query on HTTP routes. And no key in any log line of a real
``mnemo serve``, whichever form carried it."""

from __future__ import annotations

import base64
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Subprotocol

from server.auth import protocol_entry
from server.logs import redact
from testing.fake_ollama import FakeOllama
from tests.harness import Client, make_app, serve, serve_process, settings_for
from tests.mcp_client import call, mcp_session

pytestmark = pytest.mark.anyio

USER_KEY = "sk-user-7Qp2/x+Lw=="  # not made of token characters: base64url carries it
OTHER_KEY = "sk-other-Vb81JdKq"
ADMIN_KEY = "sk-admin-Zr40MmTe"
WRONG_KEY = "sk-wrong-Hd93PqLs"
KEYS = {USER_KEY: "alice", OTHER_KEY: "bob"}


def _offered(key: str) -> list[Subprotocol]:
    """The subprotocols a browser offers with ``key``: ``mnemo`` and the key's entry."""
    return [Subprotocol("mnemo"), Subprotocol(protocol_entry(key))]


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    settings = settings_for(tmp_path, fake.url, api_keys=KEYS, admin_keys=[ADMIN_KEY])
    async with serve(make_app(settings)) as address:
        yield address


def test_the_subprotocol_entry_is_the_key_in_unpadded_base64url() -> None:
    entry = protocol_entry(USER_KEY)
    encoded = entry.removeprefix("mnemo.bearer.")
    assert entry.startswith("mnemo.bearer.")
    assert "=" not in encoded
    assert base64.urlsafe_b64decode(encoded + "==").decode() == USER_KEY
    assert all(c.isalnum() or c in "-_." for c in entry)  # header token characters only


async def test_a_chat_socket_takes_the_key_from_a_header_a_subprotocol_or_an_old_query(
    server: str,
) -> None:
    url = f"ws://{server}/ws/s1"
    forms: list[dict[str, Any]] = [
        {"additional_headers": {"Authorization": f"Bearer {USER_KEY}"}},
        {"subprotocols": ["mnemo", protocol_entry(USER_KEY)]},
        {"uri": f"{url}?token={USER_KEY.replace('+', '%2B').replace('/', '%2F')}"},
    ]
    for form in forms:
        target = str(form.pop("uri", url))
        async with connect(target, **form) as ws:
            ready = await ws.recv()
            assert '"type":"ready"' in str(ready).replace(" ", ""), ready
            assert ws.subprotocol == ("mnemo" if "subprotocols" in form else None)


@pytest.mark.parametrize(
    "form",
    [
        {"additional_headers": {"Authorization": f"Bearer {WRONG_KEY}"}},
        {"subprotocols": ["mnemo", protocol_entry(WRONG_KEY)]},
        {"subprotocols": ["mnemo", "mnemo.bearer.%%%"]},
        {"subprotocols": ["mnemo"]},
        {"query": f"?token={WRONG_KEY}"},
    ],
    ids=["header", "subprotocol", "bad base64", "no key", "query"],
)
async def test_a_socket_without_a_valid_key_in_any_form_is_refused_401(
    server: str, form: dict[str, Any]
) -> None:
    query = str(form.pop("query", ""))
    for path in ("/ws/s1", "/ws/tail"):
        with pytest.raises(InvalidStatus) as refused:
            async with connect(f"ws://{server}{path}{query}", **form):
                pass
        assert refused.value.response.status_code == 401


async def test_http_routes_take_keys_from_authorization_only(server: str) -> None:
    async with httpx.AsyncClient(base_url=f"http://{server}") as client:
        for path, key in [
            ("/memory/long-term", USER_KEY),
            ("/actors", USER_KEY),
            ("/actors", ADMIN_KEY),
            ("/metrics", ADMIN_KEY),
            ("/memory/export", USER_KEY),
        ]:
            assert (await client.get(path, params={"token": key})).status_code == 401, path
            answer = await client.get(path, headers={"Authorization": f"Bearer {key}"})
            assert answer.status_code == 200, path


async def test_the_tail_takes_an_admin_key_as_a_subprotocol_entry(server: str) -> None:
    protocols = _offered(ADMIN_KEY)
    async with (
        connect(f"ws://{server}/ws/tail?kind=actor", subprotocols=protocols) as tail,
        Client.connect(server, "s9", token=OTHER_KEY) as bob,
    ):
        await bob.receive()
        assert '"actor.spawned"' in str(await tail.recv())


def test_redact_hides_every_form_of_a_key_in_a_line() -> None:
    line = (
        f'127.0.0.1:1 - "WebSocket /ws/s1?app=x&token={USER_KEY}" [accepted] '
        f"{protocol_entry(USER_KEY)} Authorization: Bearer {ADMIN_KEY} /x?%74oken={OTHER_KEY}"
    )
    hidden = redact(line)
    for secret in (USER_KEY, ADMIN_KEY, OTHER_KEY, protocol_entry(USER_KEY)):
        assert secret not in hidden
    assert "?app=x&token=[redacted]" in hidden


async def test_no_key_reaches_the_log_of_a_real_server_in_any_form(
    tmp_path: Path, fake: FakeOllama
) -> None:
    fake.script("Hello Alice!")
    env = {
        "MNEMO_EMBEDDER": "hash",
        "MNEMO_LLM_URL": fake.url,
        "MNEMO_API_KEYS": f"{USER_KEY}:alice,{OTHER_KEY}:bob",
        "MNEMO_ADMIN_KEYS": ADMIN_KEY,
    }
    with serve_process(tmp_path / "data", **env) as (address, process):
        await _whole_session(address)
        process.send_signal(signal.SIGTERM)
        log = _log_of(process)
    assert "Application shutdown complete." in log, log
    assert "token=[redacted]" in log  # the old query form was logged, and hidden
    secrets = [USER_KEY, OTHER_KEY, ADMIN_KEY, WRONG_KEY]
    encoded = [protocol_entry(k).removeprefix("mnemo.bearer.") for k in secrets]
    escaped = [k.replace("+", "%2B").replace("/", "%2F") for k in secrets]
    for secret in {*secrets, *encoded, *escaped}:
        assert secret not in log, secret


async def _whole_session(address: str) -> None:
    """Every credential form, accepted and refused, over REST, both sockets and MCP."""
    quoted = USER_KEY.replace("+", "%2B").replace("/", "%2F")
    async with httpx.AsyncClient(base_url=f"http://{address}") as client:
        auth = {"Authorization": f"Bearer {USER_KEY}"}
        assert (
            await client.post("/memory/long-term", json={"content": "I like tea"}, headers=auth)
        ).status_code == 201
        assert (
            await client.get("/memory/long-term", params={"token": USER_KEY})
        ).status_code == 401
        assert (await client.get("/metrics", params={"token": ADMIN_KEY})).status_code == 401
        assert (
            await client.get("/actors", headers={"Authorization": f"Bearer {WRONG_KEY}"})
        ).status_code == 401
    async with (
        connect(f"ws://{address}/ws/tail?token={ADMIN_KEY}", open_timeout=30) as tail,
        connect(
            f"ws://{address}/ws/s1",
            subprotocols=_offered(USER_KEY),
        ) as chat,
    ):
        await chat.recv()
        await chat.send('{"type": "chat", "id": "c1", "content": "hi"}')
        while '"done"' not in str(await chat.recv()):
            pass
        await tail.recv()
    async with connect(f"ws://{address}/ws/s2?token={quoted}&app=notes") as old:
        await old.recv()
    async with Client.connect(address, "s3", token=OTHER_KEY) as bob:
        await bob.receive()
    for refused in (f"/ws/s4?token={WRONG_KEY}", f"/ws/tail?token={WRONG_KEY}"):
        with pytest.raises(InvalidStatus):
            async with connect(f"ws://{address}{refused}"):
                pass
    with pytest.raises(InvalidStatus):
        async with connect(
            f"ws://{address}/ws/s5",
            subprotocols=_offered(WRONG_KEY),
        ):
            pass
    async with mcp_session(address, USER_KEY) as mcp:
        await call(mcp, "memory_stats")


def _log_of(process: subprocess.Popen[bytes]) -> str:
    process.wait(30)
    assert process.stdout is not None
    return process.stdout.read().decode()
