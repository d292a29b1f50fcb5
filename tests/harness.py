"""Running the real server for end-to-end tests: uvicorn on a free loopback port, or
``mnemo serve`` in its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import uvicorn
from starlette.applications import Starlette
from websockets.asyncio.client import ClientConnection, connect

from memory.hashing import HashEmbedder
from schemas.settings import Settings
from server.app import create_app
from server.main import build_llm, build_store
from server.protocols import RefusingWebSockets, timed_http
from testing.fake_ollama import FakeOllama
from testing.ports import free_port

__all__ = [
    "ADMIN",
    "KEYS",
    "Client",
    "chat_bodies",
    "get_json",
    "http",
    "make_app",
    "one_turn",
    "serve",
    "serve_process",
    "settings_for",
]


def settings_for(data_dir: Path, llm_url: str, **changes: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": str(data_dir),
        "llm_url": llm_url,
        "embedder": "hash",
        "llm_timeout": 2.0,
        "optimize_interval": 3600.0,
        **changes,
    }
    return Settings(**values)


def make_app(settings: Settings) -> Starlette:
    """The production wiring with the hash embedder: real LanceDB, real model clients."""
    embedder = HashEmbedder()
    store = build_store(settings, embedder)
    llm = build_llm(settings)
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


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


@contextmanager
def serve_process(data: Path, **env: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``mnemo serve`` on ``data``, in its own process (killed at the end if still running);
    on ``MNEMO_PORT`` if ``env`` names one."""
    port = int(env.get("MNEMO_PORT", 0)) or free_port()
    child_env = {
        **os.environ,
        "MNEMO_DATA_DIR": str(data),
        "MNEMO_PORT": str(port),
        "MNEMO_LLM_URL": f"http://127.0.0.1:{free_port()}",
        "MNEMO_LLM_TIMEOUT": "2",
    }
    child_env.pop("MNEMO_EMBEDDER", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve"],
        env={**child_env, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                    break
            except OSError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "mnemo serve did not start in 60 s"
                time.sleep(0.1)
        yield f"127.0.0.1:{port}", process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        if process.stdout:
            process.stdout.close()


#: Two users' API keys, and an admin key (``admin_keys``).
KEYS = {"key-alice": "alice", "key-bob": "bob"}
ADMIN = "admin-secret"


async def one_turn(server: str, session: str, key: str, *, end: bool = True) -> None:
    """One turn in ``session`` as ``key``, acked; then ``end`` and the socket closed unless
    ``end`` is False."""
    async with Client.connect(server, session, key) as client:
        await client.receive()
        await client.send(type="turn", id="t1", user="I live in Lyon", assistant="Nice")
        await client.until("ack")
        if end:
            await client.send(type="end")
            with anyio.fail_after(10):
                await client.connection.wait_closed()
