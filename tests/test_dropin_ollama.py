"""Ollama's API served by mnemo, driven by the official ``ollama`` client: in front of a
fake Ollama (relayed as is) and of a fake OpenAI-compatible server (translated)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import ollama
import pytest

from testing.fake_ollama import Reply
from tests.dropin_world import (
    KEY,
    OTHER_KEY,
    World,
    chat_requests,
    running,
    system_text,
    turns_of,
    wait_for,
)

pytestmark = pytest.mark.anyio

MODEL = "llama3.2"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(params=["ollama", "openai"], ids=["ollama-upstream", "openai-upstream"])
async def world(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[World]:
    async with running(tmp_path, request.param) as found:
        yield found


def client(world: World, key: str = KEY, **headers: str) -> ollama.AsyncClient:
    """The official client, pointed at mnemo with ``key``."""
    found = ollama.AsyncClient(
        host=world.url, headers={"Authorization": f"Bearer {key}", **headers}, timeout=10
    )
    return world.keep(found, found.close)


async def say(world: World, messages: list[dict[str, Any]], **headers: str) -> str:
    """Stream one chat; the reply's text."""
    parts = []
    async for part in await client(world, **headers).chat(
        model=MODEL, messages=messages, stream=True
    ):
        parts.append(part.message.content or "")
    return "".join(parts)


async def test_a_streamed_chat_comes_back_line_by_line_and_ends_with_the_token_counts(
    world: World,
) -> None:
    world.fake.script("Hello there, Ada!")
    parts = [
        part
        async for part in await client(world).chat(
            model=MODEL, messages=[{"role": "user", "content": "Hi"}], stream=True
        )
    ]
    assert "".join(p.message.content or "" for p in parts) == "Hello there, Ada!"
    assert [p.done for p in parts].count(True) == 1
    assert parts[-1].done
    assert parts[-1].done_reason == "stop"
    assert parts[-1].eval_count
    assert parts[-1].prompt_eval_count


async def test_a_whole_chat_answers_one_object(world: World) -> None:
    world.fake.script("Whole answer.")
    reply = await client(world).chat(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    assert reply.message.content == "Whole answer."
    assert reply.done
    assert reply.message.role == "assistant"


async def test_a_fact_said_in_one_conversation_is_in_the_memory_of_a_later_one(
    world: World,
) -> None:
    world.fake.script("Nice to meet you.")
    await say(world, [{"role": "user", "content": "I live in Lisbon and I keep bees."}])
    await wait_for(lambda: turns_of(world))  # archived
    world.fake.script("You live in Lisbon.")
    await say(world, [{"role": "user", "content": "Where do I live?"}])
    later = chat_requests(world.fake)[-1]
    assert "Lisbon" in system_text(later)
    assert later["messages"][-1]["content"] == "Where do I live?"


async def test_a_resent_history_is_archived_once(world: World) -> None:
    first = [{"role": "user", "content": "My cat is called Miso."}]
    world.fake.script("What a name!")
    answered = await say(world, first)
    world.fake.script("Tuna, mostly.")
    await say(
        world,
        [
            *first,
            {"role": "assistant", "content": answered},
            {"role": "user", "content": "What does Miso eat?"},
        ],
    )
    turns = await wait_for(lambda: _when_four(world))
    assert [(t["role"], t["text"]) for t in turns] == [
        ("user", "My cat is called Miso."),
        ("assistant", "What a name!"),
        ("user", "What does Miso eat?"),
        ("assistant", "Tuna, mostly."),
    ]
    assert len({t["session_id"] for t in turns}) == 1
    assert [t["turn"] for t in turns] == [1, 1, 2, 2]


async def _when_four(world: World) -> list[dict[str, Any]] | None:
    turns = await turns_of(world)
    return turns if len(turns) >= 4 else None


async def test_a_tool_call_passes_through_untouched(world: World) -> None:
    if world.api == "ollama":
        call: dict[str, Any] = {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    else:
        arguments = '{"city": "Oslo"}'
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": arguments},
        }
    world.fake.script(Reply(content="", tool_calls=[call]))
    messages = [{"role": "user", "content": "Weather in Oslo?"}]
    reply = await client(world).chat(model=MODEL, messages=messages, tools=[WEATHER_TOOL])
    [made] = reply.message.tool_calls or []
    assert (made.function.name, dict(made.function.arguments)) == ("get_weather", {"city": "Oslo"})
    assert chat_requests(world.fake)[-1]["tools"] == [WEATHER_TOOL]
    world.fake.script("It is sunny in Oslo.")
    answered: list[dict[str, Any]] = [
        *messages,
        {"role": "assistant", "content": "", "tool_calls": [made.model_dump()]},
        {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
    ]
    final = await client(world).chat(model=MODEL, messages=answered, tools=[WEATHER_TOOL])
    assert final.message.content == "It is sunny in Oslo."
    sent = chat_requests(world.fake)[-1]["messages"]
    assert sent[-1]["role"] == "tool"
    assert sent[-1]["content"] == "sunny"
    assert "get_weather" in str(sent[-2]["tool_calls"])


async def test_images_options_and_format_reach_the_model_server(world: World) -> None:
    png = (  # one red pixel
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5E"
        "rkJggg=="
    )
    world.fake.script('{"colour": "red"}')
    await client(world).chat(
        model=MODEL,
        messages=[{"role": "user", "content": "What colour?", "images": [png]}],
        format={"type": "object", "properties": {"colour": {"type": "string"}}},
        options={"temperature": 0.2, "num_predict": 50},
    )
    [sent] = [b for b in chat_requests_with_format(world) if "What colour?" in str(b["messages"])]
    if world.api == "ollama":
        assert sent["messages"][-1]["images"] == [png]
        assert sent["options"] == {"temperature": 0.2, "num_predict": 50}
        assert sent["format"]["properties"] == {"colour": {"type": "string"}}
    else:
        image = sent["messages"][-1]["content"][1]
        assert image == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}
        assert (sent["temperature"], sent["max_tokens"]) == (0.2, 50)
        assert sent["response_format"]["json_schema"]["schema"]["properties"] == {
            "colour": {"type": "string"}
        }


def chat_requests_with_format(world: World) -> list[dict[str, Any]]:
    paths = ("/api/chat", "/v1/chat/completions")
    return [b for _, path, b in world.fake.requests if path in paths]


async def test_generate_streams_with_the_memory_as_its_system_prompt(world: World) -> None:
    world.fake.script("Noted.")
    await say(world, [{"role": "user", "content": "I live in Lisbon."}])
    await wait_for(lambda: turns_of(world))
    world.fake.script("In Lisbon.")
    parts = [
        p.response or ""
        async for p in await client(world).generate(
            model=MODEL, prompt="Where do I live?", stream=True
        )
    ]
    assert "".join(parts) == "In Lisbon."
    assert "Lisbon" in system_text(chat_requests(world.fake)[-1])


async def test_models_version_and_show_answer_as_ollama_does(world: World) -> None:
    listed = await client(world).list()
    assert [m.model for m in listed.models] in (["llama3.2"], ["llama3.2:latest"])
    shown = await client(world).show(MODEL)
    assert shown.capabilities
    async with world.rest() as rest:
        assert (await rest.get("/api/version")).json()["version"]


async def test_opting_out_by_header_sends_no_memory_and_by_suffix_learns_nothing(
    world: World,
) -> None:
    world.fake.script("Hi.")
    await say(world, [{"role": "user", "content": "I live in Lisbon."}])
    await wait_for(lambda: turns_of(world))
    world.fake.script("Somewhere.")
    await say(
        world, [{"role": "user", "content": "Where do I live?"}], **{"X-Mnemo-Opt-Out": "inject"}
    )
    assert "Lisbon" not in system_text(chat_requests(world.fake)[-1])
    world.fake.script("Sure.")
    async for _ in await client(world).chat(
        model=f"{MODEL}+nolearn",
        messages=[{"role": "user", "content": "Secret: 1234"}],
        stream=True,
    ):
        pass
    assert chat_requests(world.fake)[-1]["model"] == MODEL
    await anyio.sleep(0.3)
    assert "Secret: 1234" not in [t["text"] for t in await turns_of(world)]


async def test_another_key_sees_nothing_of_the_first_users_memory(world: World) -> None:
    world.fake.script("Hi.")
    await say(world, [{"role": "user", "content": "I live in Lisbon."}])
    await wait_for(lambda: turns_of(world))
    world.fake.script("No idea.")
    async for _ in await client(world, OTHER_KEY).chat(
        model=MODEL, messages=[{"role": "user", "content": "Where do I live?"}], stream=True
    ):
        pass
    assert "Lisbon" not in system_text(chat_requests(world.fake)[-1])


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"messages": [{"role": "user", "content": "Hi"}]}, 400, "model is required"),
        ({"model": MODEL, "messages": "Hi"}, 400, "messages must be a list"),
        ({"model": "nope", "messages": [{"role": "user", "content": "Hi"}]}, 404, "nope"),
    ],
    ids=["no-model", "messages-not-a-list", "unknown-model"],
)
async def test_a_bad_request_gets_ollamas_error_shape(
    world: World, body: dict[str, Any], status: int, message: str
) -> None:
    async with world.rest() as rest:
        answer = await rest.post("/api/chat", json=body)
    assert answer.status_code == status
    assert set(answer.json()) == {"error"}
    assert message in answer.json()["error"]


async def test_the_ollama_client_sees_a_refusal_as_its_response_error(world: World) -> None:
    with pytest.raises(ollama.ResponseError) as refused:
        await client(world).chat(model="nope", messages=[{"role": "user", "content": "Hi"}])
    assert refused.value.status_code == 404
    with pytest.raises(ollama.ResponseError) as unauthorized:
        await client(world, "wrong-key").chat(model=MODEL, messages=[])
    assert unauthorized.value.status_code == 401


async def test_a_failing_model_server_is_a_502_in_ollamas_shape(world: World) -> None:
    world.fake.fault(status=500, error="out of memory")
    with pytest.raises(ollama.ResponseError) as failed:
        await client(world).chat(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    assert failed.value.status_code == 502
    assert "out of memory" in failed.value.error


async def test_a_client_that_leaves_mid_stream_cancels_the_model_servers_answer(
    world: World,
) -> None:
    world.fake.script(Reply(content="word " * 200, chunk_delay=0.05))
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Talk a lot"}]}
    async with (
        world.rest() as rest,
        rest.stream("POST", "/api/chat", json=body) as answer,
    ):
        async for _ in answer.aiter_lines():
            break  # read one line, then hang up
    await wait_for(_disconnected(world))
    turns = await wait_for(lambda: turns_of(world))
    replies = [t for t in turns if t["role"] == "assistant"]
    assert replies
    assert replies[0]["meta"]["interrupted"] is True
    assert len(replies[0]["text"].split()) < 200


def _disconnected(world: World) -> Any:
    async def check() -> bool:
        return world.fake.client_disconnects > 0

    return check


async def test_no_key_is_a_401_and_a_foreign_origin_a_403(world: World) -> None:
    async with httpx.AsyncClient(base_url=world.url) as bare:
        assert (await bare.get("/api/tags")).status_code == 401
        foreign = await bare.get(
            "/api/tags",
            headers={"Authorization": f"Bearer {KEY}", "Origin": "https://evil.example"},
        )
        assert foreign.status_code == 403
