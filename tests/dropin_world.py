"""The world of the drop-in tests: mnemo (real uvicorn, LanceDB in a temporary directory)
in front of a fake model server of either API, and the official clients pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx

from testing.fake_ollama import FakeOllama
from testing.fake_openai import FakeOpenAi
from tests.harness import EMPTY_EXTRACTION, make_app, serve, settings_for

__all__ = [
    "KEY",
    "OTHER_KEY",
    "Mnemo",
    "World",
    "chat_requests",
    "running",
    "system_text",
    "turns_of",
    "wait_for",
]

KEY, OTHER_KEY = "key-alice", "key-bob"
_C = TypeVar("_C")
MODEL = "llama3.2"


class Mnemo:
    """mnemo at ``address``, and the clients of it to close when done (``keep``)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.closing: list[Callable[[], Awaitable[Any]]] = []

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def rest(self, key: str = KEY) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {key}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=10)

    def keep(self, client: _C, close: Callable[[], Awaitable[Any]]) -> _C:
        """``client``, closed by ``close`` when the world ends (``close_clients``)."""
        self.closing.append(close)
        return client

    async def close_clients(self) -> None:
        for close in self.closing:
            await close()


class World(Mnemo):
    """mnemo at ``address`` in front of ``fake``, whose API is ``api``."""

    def __init__(self, api: str, fake: FakeOllama, address: str) -> None:
        super().__init__(address)
        self.api, self.fake = api, fake


@asynccontextmanager
async def running(tmp_path: Path, api: str, **changes: Any) -> AsyncIterator[World]:
    """mnemo in front of a fake of ``api`` (``ollama`` or ``openai``): its chats answer
    from ``fake.script``, its structured calls with an empty extraction."""
    fake: FakeOllama = (FakeOllama if api == "ollama" else FakeOpenAi)(
        models=[MODEL], json_default=EMPTY_EXTRACTION
    )
    async with fake:
        settings = settings_for(
            tmp_path, fake.url, llm_api=api, api_keys={KEY: "alice", OTHER_KEY: "bob"}, **changes
        )
        async with serve(make_app(settings)) as address:
            world = World(api, fake, address)
            try:
                yield world
            finally:
                await world.close_clients()


def chat_requests(fake: FakeOllama) -> list[dict[str, Any]]:
    """The chat requests the fake received that were no structured call (extraction, notes)."""
    paths = ("/api/chat", "/api/generate", "/v1/chat/completions")
    return [
        body
        for _, path, body in fake.requests
        if path in paths and "format" not in body and "response_format" not in body
    ]


def system_text(body: dict[str, Any]) -> str:
    """The system messages of a request as the model server received it."""
    if "system" in body:
        return str(body["system"])
    return "\n".join(
        str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system"
    )


async def turns_of(world: Mnemo, key: str = KEY) -> list[dict[str, Any]]:
    """The user's archived turns, oldest first."""
    async with world.rest(key) as client:
        answer = await client.get("/memory/long-term", params={"kind": "turns", "limit": 200})
    answer.raise_for_status()
    items: list[dict[str, Any]] = answer.json()["items"]
    return sorted(items, key=lambda t: (t["at"], t["turn"], t["role"] != "user"))


async def wait_for(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll the async ``check`` until it returns something true; that value."""
    with anyio.fail_after(timeout):
        while not (found := await check()):
            await anyio.sleep(0.05)
    return found
