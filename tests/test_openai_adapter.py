"""The OpenAI-compatible ``Llm`` adapter end to end, against the fake OpenAI-compatible
server; and mnemo's own chat and extraction through it (``MNEMO_LLM_API=openai``)."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.errors import LlmError, LlmInvalidOutput, LlmTimeout, LlmUnavailable
from schemas.llm import ChatChunk, PromptMessage
from server.adapters.openai_compat import OpenAiLlm
from testing.fake_ollama import Reply
from testing.fake_openai import FakeOpenAi
from tests.dropin_world import chat_requests, running, turns_of, wait_for
from tests.harness import Client

pytestmark = pytest.mark.anyio

MODEL = "llama3.2"
HELLO = [PromptMessage("system", "Be brief."), PromptMessage("user", "Say hello.")]
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"facts": {"type": "array"}}}


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAi]:
    async with FakeOpenAi(models=[MODEL]) as server:
        yield server


@pytest.fixture
async def llm(fake: FakeOpenAi) -> AsyncIterator[OpenAiLlm]:
    adapter = OpenAiLlm(f"{fake.url}/v1", timeout=2.0)
    yield adapter
    await adapter.aclose()


async def chunks(llm: OpenAiLlm) -> list[ChatChunk]:
    return [chunk async for chunk in llm.stream_chat(HELLO, model=MODEL)]


async def test_a_streamed_reply_yields_text_pieces_then_done_with_token_counts(
    fake: FakeOpenAi, llm: OpenAiLlm
) -> None:
    fake.script("Hello there!")
    got = await chunks(llm)
    assert "".join(c.text for c in got) == "Hello there!"
    assert got[-1].done
    assert got[-1].prompt_tokens > 0
    assert got[-1].completion_tokens == 2
    [(_, path, body)] = fake.requests
    assert path == "/v1/chat/completions"
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello."},
    ]


async def test_generate_json_asks_for_the_schema_at_temperature_zero(
    fake: FakeOpenAi, llm: OpenAiLlm
) -> None:
    fake.script({"facts": []})
    answer = await llm.generate_json("Extract.", model=MODEL, schema=SCHEMA, system="Be exact.")
    assert json.loads(answer) == {"facts": []}
    [(_, _, body)] = fake.requests
    assert body["temperature"] == 0
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert body["messages"][0] == {"role": "system", "content": "Be exact."}


async def test_a_truncated_json_answer_is_invalid_output(fake: FakeOpenAi, llm: OpenAiLlm) -> None:
    fake.script(Reply(content='{"facts": [', done_reason="length"))
    with pytest.raises(LlmInvalidOutput, match="truncated"):
        await llm.generate_json("Extract.", model=MODEL, schema=SCHEMA)


async def test_an_error_status_becomes_llm_error_with_the_servers_message(
    fake: FakeOpenAi, llm: OpenAiLlm
) -> None:
    fake.fault(status=500, error="out of memory")
    with pytest.raises(LlmError, match="HTTP 500: out of memory"):
        await chunks(llm)
    with pytest.raises(LlmError, match="does not exist"):
        [c async for c in llm.stream_chat(HELLO, model="nope")]


async def test_an_error_event_mid_stream_becomes_llm_error(
    fake: FakeOpenAi, llm: OpenAiLlm
) -> None:
    fake.script("one two three")
    fake.fault(stream_error_after=2, error="the GPU fell over")
    with pytest.raises(LlmError, match="the GPU fell over"):
        await chunks(llm)


async def test_an_unreachable_server_is_unavailable_and_a_slow_one_a_timeout(
    fake: FakeOpenAi, llm: OpenAiLlm
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    unreachable = OpenAiLlm(closed, timeout=2.0)
    with pytest.raises(LlmUnavailable, match="cannot reach the OpenAI-compatible server"):
        [c async for c in unreachable.stream_chat(HELLO, model=MODEL)]
    await unreachable.aclose()
    fake.fault(delay=3.0)
    with anyio.fail_after(10), pytest.raises(LlmTimeout, match="did not answer within 2 s"):
        await llm.generate_json("Extract.", model=MODEL, schema=SCHEMA)


async def test_mnemos_own_chat_and_extraction_use_the_openai_compatible_server(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, "openai") as world:
        world.fake.script("Hi Ada.")
        async with Client.connect(world.address, "s1", "key-alice") as ws:
            await ws.send(type="chat", id="c1", content="I live in Lisbon.")
            done, before = await ws.until("done")
        assert "".join(f["text"] for f in before if f["type"] == "delta") == "Hi Ada."
        assert done["usage"]["completion_tokens"] == 2
        assert chat_requests(world.fake)[-1]["model"] == "llama3.2"
        await wait_for(lambda: turns_of(world))

        async def extracted() -> bool:
            return any(
                "response_format" in body and body["temperature"] == 0
                for _, _, body in world.fake.requests
            )

        await wait_for(extracted)
