"""Running the real server for end-to-end tests: uvicorn on a free loopback port."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import uvicorn
from starlette.applications import Starlette
from websockets.asyncio.client import ClientConnection, connect

from memory.hashing import HashEmbedder
from schemas.settings import Settings
from server.adapters.ollama import OllamaLlm
from server.app import create_app
from server.main import build_store
from server.protocols import RefusingWebSockets, timed_http
from tests.fake_ollama import FakeOllama

__all__ = ["Client", "chat_bodies", "http", "make_app", "serve", "settings_for"]


def settings_for(data_dir: Path, ollama_url: str, **changes: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": str(data_dir),
        "ollama_url": ollama_url,
        "embedder": "hash",
        "llm_timeout": 2.0,
        "optimize_interval": 3600.0,
        **changes,
    }
    return Settings(**values)


def make_app(settings: Settings) -> Starlette:
    """The production wiring with the hash embedder: real LanceDB, real Ollama client."""
    embedder = HashEmbedder()
    store = build_store(settings, embedder)
    llm = OllamaLlm(settings.ollama_url, timeout=settings.llm_timeout)
    return create_app(settings, llm=llm, store=store, embedder=embedder)


@asynccontextmanager
async def serve(
    app: Starlette, port: int = 0, *, handshake_timeout: float = 10.0
) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn on 127.0.0.1 (``port`` 0: any free one) with the
    protocols ``mnemo serve`` uses and yield ``host:port``; stop it on exit."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        http=timed_http(handshake_timeout),
        ws=RefusingWebSockets,
        lifespan="on",
        log_level="warning",
    )
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(20):
            while not server.started:
                await anyio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"127.0.0.1:{port}"
        finally:
            server.should_exit = True


def http(server: str, key: str | None, *, timeout: float = 5.0) -> httpx.AsyncClient:
    """An HTTP client of the server at ``server`` (``host:port``), with ``key`` as its
    bearer key (None: no ``Authorization``)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(base_url=f"http://{server}", headers=headers, timeout=timeout)


class Client:
    """A websockets client speaking protocol v1, with helpers that wait for frame types."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection

    @classmethod
    @asynccontextmanager
    async def connect(
        cls, address: str, session_id: str, token: str | None = None
    ) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with connect(f"ws://{address}/ws/{session_id}", additional_headers=headers) as ws:
            yield cls(ws)

    async def send(self, **frame: Any) -> None:
        await self.connection.send(json.dumps(frame))

    async def receive(self, timeout: float = 10.0) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            raw = await self.connection.recv()
        frame: dict[str, Any] = json.loads(raw)
        return frame

    async def until(
        self, kind: str, timeout: float = 10.0
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Frames up to and including the first of type ``kind``: (that frame, those before)."""
        before: list[dict[str, Any]] = []
        with anyio.fail_after(timeout):
            while True:
                frame = await self.receive(timeout)
                if frame["type"] == kind:
                    return frame, before
                before.append(frame)


#: A valid, empty extraction: what the fake answers structured-output calls by default.
EMPTY_EXTRACTION = {"facts": [], "memory_update": {"should_store": False}, "analysis": {}}


def chat_bodies(fake: FakeOllama) -> list[dict[str, Any]]:
    """Bodies of the streamed chat calls the server made (not extraction or note calls)."""
    return [b for _, path, b in fake.requests if path == "/api/chat" and "format" not in b]
