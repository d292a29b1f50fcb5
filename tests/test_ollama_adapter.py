"""The Ollama adapters end to end: the real ``ollama.AsyncClient`` against FakeOllama."""

from __future__ import annotations

import gc
import json
import math
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import pytest

from actors.errors import LlmError, LlmFailure, LlmTimeout, LlmUnavailable
from schemas.llm import ChatChunk, PromptMessage
from server.adapters.ollama import OllamaEmbedder, OllamaLlm
from testing.fake_ollama import FakeOllama, Reply, hash_embed

pytestmark = pytest.mark.anyio

MODEL = "llama3.2"
EMBED_MODEL = "nomic-embed-text"
DIM = 32
HELLO = [PromptMessage("system", "Be brief."), PromptMessage("user", "Say hello.")]
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
}

Call = Callable[[str, float], Awaitable[object]]


@pytest.fixture
async def fake() -> AsyncIterator[FakeOllama]:
    async with FakeOllama(models=[MODEL, EMBED_MODEL], embed_dim=DIM) as server:
        yield server


@pytest.fixture
async def llm(fake: FakeOllama) -> AsyncIterator[OllamaLlm]:
    adapter = OllamaLlm(fake.url, timeout=5.0)
    yield adapter
    await adapter.aclose()


@pytest.fixture
async def embedder(fake: FakeOllama) -> AsyncIterator[OllamaEmbedder]:
    adapter = OllamaEmbedder(fake.url, EMBED_MODEL, timeout=5.0)
    yield adapter
    await adapter.aclose()


@pytest.fixture
def closed_url() -> str:
    """A loopback URL where nothing listens: connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


async def _collect(llm: OllamaLlm, chunks: list[ChatChunk], *, model: str = MODEL) -> None:
    """Append every streamed chunk to ``chunks`` (so a test sees what came before an error)."""
    with anyio.fail_after(5):
        async for chunk in llm.stream_chat(HELLO, model=model):
            chunks.append(chunk)


async def _stream(url: str, client_timeout: float) -> object:
    llm = OllamaLlm(url, timeout=client_timeout)
    try:
        chunks: list[ChatChunk] = []
        await _collect(llm, chunks)
        return chunks
    finally:
        await llm.aclose()


async def _json(url: str, client_timeout: float) -> object:
    llm = OllamaLlm(url, timeout=client_timeout)
    try:
        with anyio.fail_after(5):
            return await llm.generate_json("Any facts?", model=MODEL, schema=SCHEMA)
    finally:
        await llm.aclose()


async def _embed(url: str, client_timeout: float) -> object:
    embedder = OllamaEmbedder(url, EMBED_MODEL, timeout=client_timeout)
    try:
        with anyio.fail_after(5):
            return await embedder.embed(["hello"])
    finally:
        await embedder.aclose()


CALLS = pytest.mark.parametrize(
    "call", [_stream, _json, _embed], ids=["stream_chat", "generate_json", "embed"]
)


async def test_streamed_reply_yields_text_pieces_then_done_with_token_counts(
    fake: FakeOllama, llm: OllamaLlm
) -> None:
    fake.script("Hello there, friend!")
    chunks: list[ChatChunk] = []
    await _collect(llm, chunks)

    assert [c.text for c in chunks[:-1]] == ["Hello", " there,", " friend!"]
    assert not any(c.done for c in chunks[:-1])
    done = chunks[-1]
    assert done.done
    assert done.text == ""
    assert done.prompt_tokens > 0
    assert done.completion_tokens == 3
    method, path, body = fake.requests[-1]
    assert (method, path) == ("POST", "/api/chat")
    assert body["stream"] is True
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello."},
    ]
    assert "options" not in body  # temperature etc. left to the model's defaults
    assert "format" not in body


async def test_a_fake_that_records_nothing_answers_the_same_and_keeps_no_request(
    fake: FakeOllama, llm: OllamaLlm
) -> None:
    fake.record = False  # as the load bench runs it
    fake.script("Hello there, friend!")
    chunks: list[ChatChunk] = []
    await _collect(llm, chunks)
    assert "".join(c.text for c in chunks) == "Hello there, friend!"
    assert fake.requests == []


async def test_length_limited_chat_reply_ends_normally(fake: FakeOllama, llm: OllamaLlm) -> None:
    fake.script(Reply(content="cut short", done_reason="length"))
    chunks: list[ChatChunk] = []
    await _collect(llm, chunks)

    assert "".join(c.text for c in chunks) == "cut short"
    assert chunks[-1].done


async def test_closing_the_stream_early_is_safe_and_the_client_stays_usable(
    fake: FakeOllama, llm: OllamaLlm
) -> None:
    fake.script(Reply(content="one two three four", chunk_delay=0.05), "again")
    stream = llm.stream_chat(HELLO, model=MODEL)
    assert isinstance(stream, AsyncGenerator)
    with anyio.fail_after(5):
        first = await anext(stream)
        await stream.aclose()
    assert first.text == "one"

    chunks: list[ChatChunk] = []
    await _collect(llm, chunks)
    assert "".join(c.text for c in chunks) == "again"


@CALLS
async def test_unreachable_ollama_becomes_llm_unavailable(closed_url: str, call: Call) -> None:
    with pytest.raises(LlmUnavailable, match="cannot reach Ollama"):
        await call(closed_url, 1.0)


@CALLS
async def test_answer_slower_than_the_timeout_becomes_llm_timeout(
    fake: FakeOllama, call: Call
) -> None:
    fake.fault(delay=5.0)
    started = time.monotonic()
    with pytest.raises(LlmTimeout, match=r"0\.3 s"):
        await call(fake.url, 0.3)
    assert time.monotonic() - started < 2.0


@CALLS
async def test_http_500_becomes_llm_error_with_status_and_ollamas_text(
    fake: FakeOllama, call: Call
) -> None:
    fake.fault(status=500, error="CUDA out of memory")
    with pytest.raises(LlmError, match="HTTP 500: CUDA out of memory"):
        await call(fake.url, 5.0)


async def test_unknown_model_becomes_llm_error_naming_it(fake: FakeOllama, llm: OllamaLlm) -> None:
    chunks: list[ChatChunk] = []
    with pytest.raises(LlmError, match="HTTP 404: model 'nope' not found"):
        await _collect(llm, chunks, model="nope")
    assert chunks == []


async def test_error_line_mid_stream_becomes_llm_error_after_the_pieces_before_it(
    fake: FakeOllama, llm: OllamaLlm
) -> None:
    fake.script("one two three four")
    fake.fault(path="/api/chat", stream_error_after=2, error="model runner crashed")
    chunks: list[ChatChunk] = []
    with pytest.raises(LlmError, match="mid-answer: model runner crashed"):
        await _collect(llm, chunks)
    assert [c.text for c in chunks] == ["one", " two"]


async def test_mid_stream_drop_becomes_llm_error(fake: FakeOllama, llm: OllamaLlm) -> None:
    fake.script("one two three four")
    fake.fault(path="/api/chat", drop_after=2)
    chunks: list[ChatChunk] = []
    with pytest.raises(LlmError, match="connection failed"):
        await _collect(llm, chunks)
    assert [c.text for c in chunks] == ["one", " two"]


async def test_junk_line_mid_stream_becomes_llm_error(fake: FakeOllama, llm: OllamaLlm) -> None:
    fake.script("one two three four")
    fake.fault(path="/api/chat", garbage_after=1)
    chunks: list[ChatChunk] = []
    with pytest.raises(LlmError, match="not JSON"):
        await _collect(llm, chunks)
    assert [c.text for c in chunks] == ["one"]


async def test_stream_ending_without_done_becomes_llm_error(
    fake: FakeOllama, llm: OllamaLlm
) -> None:
    fake.script("one two three four")
    fake.fault(path="/api/chat", end_after=3)
    chunks: list[ChatChunk] = []
    with pytest.raises(LlmError, match="ended before its done line"):
        await _collect(llm, chunks)
    assert not any(c.done for c in chunks)


async def test_failures_are_only_mnemo_errors_with_stable_codes(
    fake: FakeOllama, llm: OllamaLlm, closed_url: str
) -> None:
    fake.fault(path="/api/chat", status=503, error="server busy")
    with pytest.raises(LlmFailure) as caught:
        await _collect(llm, [])
    assert caught.value.code == "llm_error"
    with pytest.raises(LlmFailure) as caught:
        await _stream(closed_url, 1.0)
    assert caught.value.code == "llm_unavailable"


async def test_generate_json_returns_the_content_and_sends_the_schema_at_temperature_zero(
    fake: FakeOllama, llm: OllamaLlm
) -> None:
    fake.script({"facts": ["likes tea"]})
    with anyio.fail_after(5):
        text = await llm.generate_json(
            "Any facts?", model=MODEL, schema=SCHEMA, system="Extract facts."
        )

    assert json.loads(text) == {"facts": ["likes tea"]}
    _, path, body = fake.requests[-1]
    assert path == "/api/chat"
    assert body["stream"] is True  # streamed, so that only silence times it out
    assert body["format"] == SCHEMA
    assert body["options"] == {"temperature": 0}
    assert body["messages"] == [
        {"role": "system", "content": "Extract facts."},
        {"role": "user", "content": "Any facts?"},
    ]


async def test_generate_json_without_system_sends_only_the_prompt(
    fake: FakeOllama, llm: OllamaLlm
) -> None:
    fake.script({"facts": []})
    with anyio.fail_after(5):
        await llm.generate_json("Any facts?", model=MODEL, schema=SCHEMA)
    assert fake.requests[-1][2]["messages"] == [{"role": "user", "content": "Any facts?"}]


async def test_model_calls_leave_no_reference_cycles_for_the_garbage_collector(
    fake: FakeOllama,
) -> None:
    # httpx's response and its stream point at each other: without the adapter's hook
    # every call left ~40 objects that only a (loop-stopping) collection frees. (Streamed
    # answers keep cycles of the ollama client's own generator.)
    calls = 30
    embedder = OllamaEmbedder(fake.url, EMBED_MODEL, timeout=5.0)
    try:
        await embedder.embed(["warm up"])
        gc.collect()
        gc.disable()
        try:
            for _ in range(calls):
                await embedder.embed(["hello"])
            cyclic = gc.collect()
        finally:
            gc.enable()
    finally:
        await embedder.aclose()
    assert cyclic < calls


async def test_generate_json_caps_the_answer_with_num_predict(
    fake: FakeOllama, llm: OllamaLlm
) -> None:
    fake.script({"facts": []})
    with anyio.fail_after(5):
        await llm.generate_json("Any facts?", model=MODEL, schema=SCHEMA, max_tokens=280)
    assert fake.requests[-1][2]["options"] == {"temperature": 0, "num_predict": 280}


async def test_a_slow_answer_that_keeps_streaming_is_not_timed_out(fake: FakeOllama) -> None:
    # 0.3 s of silence at most, but the whole answer takes well over a second.
    words = " ".join(f"word{i}" for i in range(12))
    fake.fault(delay=0.8)
    fake.script(Reply(content={"facts": [words]}, chunk_delay=0.1))
    llm = OllamaLlm(fake.url, timeout=0.3, first_token_timeout=2.0)
    try:
        started = time.monotonic()
        with anyio.fail_after(10):
            text = await llm.generate_json("Any facts?", model=MODEL, schema=SCHEMA)
    finally:
        await llm.aclose()
    assert json.loads(text) == {"facts": [words]}
    assert time.monotonic() - started > 1.0


async def test_a_model_that_goes_silent_mid_answer_times_out_and_says_so(
    fake: FakeOllama,
) -> None:
    fake.script(Reply(content={"facts": ["a b c d e f"]}, chunk_delay=1.0))
    llm = OllamaLlm(fake.url, timeout=0.3, first_token_timeout=2.0)
    try:
        with anyio.fail_after(10), pytest.raises(LlmTimeout, match=r"silent for 0\.3 s after"):
            await llm.generate_json("Any facts?", model=MODEL, schema=SCHEMA)
    finally:
        await llm.aclose()


async def test_truncated_json_answer_becomes_llm_error(fake: FakeOllama, llm: OllamaLlm) -> None:
    fake.script(Reply(content='{"facts": ["lik', done_reason="length"))
    with pytest.raises(LlmError, match="truncated"):
        await llm.generate_json("Any facts?", model=MODEL, schema=SCHEMA)


async def test_embedder_returns_unit_vectors_of_the_models_dimension(
    fake: FakeOllama, embedder: OllamaEmbedder
) -> None:
    texts = ["I like green tea", "the cat sat"]
    with anyio.fail_after(5):
        vectors = await embedder.embed(texts)

    assert embedder.name == "ollama:nomic-embed-text"
    assert embedder.dim == DIM
    assert [len(v) for v in vectors] == [DIM, DIM]
    for v in vectors:
        assert math.isclose(math.hypot(*v), 1.0, rel_tol=1e-9)
    assert vectors == [pytest.approx(hash_embed(t, DIM)) for t in texts]
    assert fake.requests[-1][2]["input"] == texts


async def test_embedder_sends_an_empty_text_as_a_single_space(
    fake: FakeOllama, embedder: OllamaEmbedder
) -> None:
    # seed 002: None or empty strings are normalized to a single space before encoding.
    with anyio.fail_after(5):
        vectors = await embedder.embed(["", "tea"])
    assert fake.requests[-1][2]["input"] == [" ", "tea"]
    assert [len(v) for v in vectors] == [DIM, DIM]


async def test_embedder_dimension_comes_from_probe(
    fake: FakeOllama, embedder: OllamaEmbedder
) -> None:
    with pytest.raises(RuntimeError, match="dimension unknown"):
        _ = embedder.dim
    with anyio.fail_after(5):
        assert await embedder.probe() == DIM
    assert embedder.dim == DIM
    assert fake.requests[-1][2]["input"] == ["dim probe"]


async def test_embedder_with_no_texts_makes_no_call(
    fake: FakeOllama, embedder: OllamaEmbedder
) -> None:
    assert await embedder.embed([]) == []
    assert fake.requests == []


async def test_embedder_rejects_vectors_of_another_dimension(fake: FakeOllama) -> None:
    embedder = OllamaEmbedder(fake.url, EMBED_MODEL, timeout=5.0, dim=DIM * 2)
    try:
        with pytest.raises(LlmError, match=f"dimensions \\[{DIM}\\], expected dimension {DIM * 2}"):
            await embedder.probe()
    finally:
        await embedder.aclose()


async def test_embedder_unknown_model_becomes_llm_error(fake: FakeOllama) -> None:
    embedder = OllamaEmbedder(fake.url, "nope", timeout=5.0)
    try:
        with pytest.raises(LlmError, match="HTTP 404: model 'nope' not found"):
            await embedder.embed(["hello"])
    finally:
        await embedder.aclose()
