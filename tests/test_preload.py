"""The embedder's model loads right after start (``MNEMO_PRELOAD_EMBEDDER``, the default),
or, with it off, when the first user shows up: an idle server that has seen no user then
holds none."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from memory.hashing import HashEmbedder
from schemas.settings import Settings
from server.adapters.ollama import OllamaLlm
from server.app import create_app
from server.main import build_store
from testing.fake_ollama import FakeOllama
from tests.harness import Client, serve, settings_for

pytestmark = pytest.mark.anyio


class _PreloadCounting(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.preloads = 0

    async def preload(self) -> None:
        self.preloads += 1


def create_app_for(settings: Settings, embedder: HashEmbedder) -> Starlette:
    store = build_store(settings, embedder)
    llm = OllamaLlm(settings.llm_url, timeout=settings.llm_timeout)
    return create_app(settings, llm=llm, store=store, embedder=embedder)


async def test_without_preload_the_model_loads_once_when_the_first_user_shows_up(
    tmp_path: Path, fake: FakeOllama
) -> None:
    embedder = _PreloadCounting()
    settings = settings_for(
        tmp_path, fake.url, api_keys={"ka": "alice", "kb": "bob"}, preload_embedder=False
    )
    async with serve(create_app_for(settings, embedder)) as address:
        async with httpx.AsyncClient(base_url=f"http://{address}") as client:
            assert (await client.get("/healthz")).status_code == 200
            assert (await client.get("/memory/long-term")).status_code == 401
            at_start = embedder.preloads
            headers = {"Authorization": "Bearer ka"}
            assert (await client.get("/memory/long-term", headers=headers)).status_code == 200
            after_rest = embedder.preloads
        async with Client.connect(address, "s1", token="kb") as session:
            await session.until("ready")
    assert (at_start, after_rest, embedder.preloads) == (0, 1, 1)


async def test_by_default_the_model_loads_right_after_start(
    tmp_path: Path, fake: FakeOllama
) -> None:
    embedder = _PreloadCounting()
    settings = settings_for(tmp_path, fake.url)
    async with serve(create_app_for(settings, embedder)) as address:
        async with httpx.AsyncClient(base_url=f"http://{address}") as client:
            assert (await client.get("/healthz")).status_code == 200
        assert embedder.preloads == 1
