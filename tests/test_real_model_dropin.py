"""The drop-in endpoints with a real model: the official ``ollama`` and ``openai`` clients
through mnemo (real uvicorn, LanceDB in a temporary directory) to SmolLM2-135M behind
Ollama's API (testing/llama), so the OpenAI side is translated both ways.

The model's words are its own: the tests check what mnemo adds around them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import ollama
import openai
import pytest

from testing.downloads import SMOLLM2
from testing.real_model import serve_models
from tests.dropin_world import KEY, Mnemo, turns_of, wait_for
from tests.harness import make_app, serve, settings_for

pytestmark = pytest.mark.anyio

MODEL = SMOLLM2.name
#: Short answers: the tests are about what goes around them.
NUM_PREDICT = 40


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    with serve_models(SMOLLM2, parameters={"num_predict": NUM_PREDICT}) as url:
        yield url


@pytest.fixture
async def world(tmp_path: Path, model_url: str) -> AsyncIterator[Mnemo]:
    settings = settings_for(
        tmp_path,
        model_url,
        chat_model=MODEL,
        extract_model=MODEL,
        llm_timeout=120.0,
        api_keys={KEY: "alice"},
    )
    async with serve(make_app(settings)) as address:
        found = Mnemo(address)
        try:
            yield found
        finally:
            await found.close_clients()


def ollama_client(world: Mnemo, **headers: str) -> ollama.AsyncClient:
    found = ollama.AsyncClient(
        host=world.url, headers={"Authorization": f"Bearer {KEY}", **headers}, timeout=240
    )
    return world.keep(found, found.close)


def openai_client(world: Mnemo) -> openai.AsyncOpenAI:
    found = openai.AsyncOpenAI(base_url=f"{world.url}/v1", api_key=KEY, max_retries=0, timeout=240)
    return world.keep(found, found.close)


async def test_the_ollama_client_streams_the_real_reply_and_the_exchange_is_archived(
    world: Mnemo,
) -> None:
    parts = [
        part
        async for part in await ollama_client(world).chat(
            model=MODEL, messages=[{"role": "user", "content": "Hi! I'm Ada."}], stream=True
        )
    ]
    text = "".join(p.message.content or "" for p in parts)
    assert text.strip()
    assert parts[-1].done
    assert 1 <= (parts[-1].eval_count or 0) <= NUM_PREDICT
    turns = await wait_for(lambda: _two(world), timeout=60)
    assert [(t["role"], t["text"]) for t in turns] == [
        ("user", "Hi! I'm Ada."),
        ("assistant", text),
    ]


async def _two(world: Mnemo) -> list[dict[str, Any]] | None:
    turns = await turns_of(world)
    return turns if len(turns) >= 2 else None


async def test_the_openai_sdk_gets_the_real_reply_translated_with_its_usage(world: Mnemo) -> None:
    stream = await openai_client(world).chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Say hello."}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert "".join(c.delta.content or "" for ch in chunks for c in ch.choices).strip()
    finishes = [c.finish_reason for ch in chunks for c in ch.choices if c.finish_reason]
    assert finishes in (["stop"], ["length"])
    usage = chunks[-1].usage
    assert usage is not None
    assert 1 <= usage.completion_tokens <= NUM_PREDICT
    assert usage.prompt_tokens > 0


async def test_a_later_conversations_prompt_carries_the_memory_block_unless_opted_out(
    world: Mnemo,
) -> None:
    """The block's words are checked with the fake model (tests/test_dropin_*.py); here,
    that the real model's prompt grows by it (the earlier turn recalled, and what was
    learned or the welcome prompt) and does not without it."""
    said = [{"role": "user", "content": "My name is Ada and I live in Lisbon."}]
    await ollama_client(world).chat(model=MODEL, messages=said)
    await wait_for(lambda: _two(world), timeout=60)
    later = [{"role": "user", "content": "Where do I live?"}]
    bare = await ollama_client(world, **{"X-Mnemo-Opt-Out": "inject,learn"}).chat(
        model=MODEL, messages=later
    )
    remembered = await ollama_client(world).chat(model=MODEL, messages=later)
    assert (remembered.prompt_eval_count or 0) > (bare.prompt_eval_count or 0) + 10


async def test_a_resent_history_is_archived_once_with_the_real_model(world: Mnemo) -> None:
    client = openai_client(world)
    first: list[Any] = [{"role": "user", "content": "My cat is called Miso."}]
    reply = await client.chat.completions.create(model=MODEL, messages=first)
    answered = reply.choices[0].message.content or ""
    history = [
        *first,
        {"role": "assistant", "content": answered},
        {"role": "user", "content": "What is my cat called?"},
    ]
    second = await client.chat.completions.create(model=MODEL, messages=history)

    async def four() -> list[dict[str, Any]] | None:
        turns = await turns_of(world)
        return turns if len(turns) >= 4 else None

    turns = await wait_for(four, timeout=60)
    assert [(t["role"], t["text"]) for t in turns] == [
        ("user", "My cat is called Miso."),
        ("assistant", answered),
        ("user", "What is my cat called?"),
        ("assistant", second.choices[0].message.content),
    ]
    assert len({t["session_id"] for t in turns}) == 1
