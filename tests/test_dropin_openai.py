"""OpenAI's chat completions served by mnemo, driven by the official ``openai`` SDK: in
front of a fake OpenAI-compatible server (relayed as is) and of a fake Ollama
(translated)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import openai
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
WEATHER_TOOL: Any = {
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


@pytest.fixture(params=["openai", "ollama"], ids=["openai-upstream", "ollama-upstream"])
async def world(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[World]:
    async with running(tmp_path, request.param) as found:
        yield found


def client(world: World, key: str = KEY, **headers: str) -> openai.AsyncOpenAI:
    """The official SDK, pointed at mnemo with ``key``; no retries (a 502 is the answer)."""
    found = openai.AsyncOpenAI(
        base_url=f"{world.url}/v1",
        api_key=key,
        default_headers=headers or None,
        max_retries=0,
        timeout=10,
    )
    return world.keep(found, found.close)


async def say(world: World, messages: list[Any], **headers: str) -> str:
    """Stream one completion; its text."""
    stream = await client(world, **headers).chat.completions.create(
        model=MODEL, messages=messages, stream=True
    )
    parts = []
    async for chunk in stream:
        parts += [c.delta.content or "" for c in chunk.choices]
    return "".join(parts)


async def test_a_streamed_completion_comes_back_as_chunks_then_its_usage(world: World) -> None:
    world.fake.script("Hello there, Ada!")
    stream = await client(world).chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    text = "".join(c.delta.content or "" for chunk in chunks for c in chunk.choices)
    assert text == "Hello there, Ada!"
    assert chunks[0].choices[0].delta.role == "assistant"
    finishes = [c.finish_reason for chunk in chunks for c in chunk.choices if c.finish_reason]
    assert finishes == ["stop"]
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0
    assert all(chunk.usage is None for chunk in chunks[:-1])


async def test_a_whole_completion_answers_one_object_with_its_usage(world: World) -> None:
    world.fake.script("Whole answer.")
    reply = await client(world).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Hi"}]
    )
    assert reply.choices[0].message.content == "Whole answer."
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None
    assert reply.usage.total_tokens > 0


async def test_a_fact_said_in_one_conversation_is_in_the_memory_of_a_later_one(
    world: World,
) -> None:
    world.fake.script("Nice to meet you.")
    await say(world, [{"role": "user", "content": "I live in Lisbon and I keep bees."}])
    await wait_for(lambda: turns_of(world))
    world.fake.script("You live in Lisbon.")
    await say(
        world,
        [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Where do I live?"},
        ],
    )
    later = chat_requests(world.fake)[-1]
    assert system_text(later).startswith("You are terse.\n\n")
    assert "Lisbon" in system_text(later)
    assert [m["role"] for m in later["messages"]] == ["system", "user"]


async def test_a_resent_history_is_archived_once(world: World) -> None:
    first = [{"role": "user", "content": "My cat is called Miso."}]
    world.fake.script("What a name!")
    answered = await say(world, first)
    world.fake.script("Tuna, mostly.")
    history = [
        *first,
        {"role": "assistant", "content": answered},
        {"role": "user", "content": "What does Miso eat?"},
    ]
    await say(world, history)
    turns = await wait_for(lambda: _when_four(world))
    assert [(t["role"], t["text"]) for t in turns] == [
        ("user", "My cat is called Miso."),
        ("assistant", "What a name!"),
        ("user", "What does Miso eat?"),
        ("assistant", "Tuna, mostly."),
    ]
    assert len({t["session_id"] for t in turns}) == 1


async def _when_four(world: World) -> list[dict[str, Any]] | None:
    turns = await turns_of(world)
    return turns if len(turns) >= 4 else None


async def test_the_session_header_names_the_conversation(world: World) -> None:
    world.fake.script("Hi.")
    await say(world, [{"role": "user", "content": "Hello"}], **{"X-Mnemo-Session": "desk-1"})
    turns = await wait_for(lambda: turns_of(world))
    assert {t["session_id"] for t in turns} == {"desk-1"}


async def test_a_tool_call_passes_through_untouched(world: World) -> None:
    if world.api == "openai":
        call: dict[str, Any] = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        }
    else:
        call = {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    for stream in (False, True):
        world.fake.script(Reply(content="", tool_calls=[call]))
        messages: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
        if stream:
            chunks = [
                chunk
                async for chunk in await client(world).chat.completions.create(
                    model=MODEL, messages=messages, tools=[WEATHER_TOOL], stream=True
                )
            ]
            deltas = [
                t for c in chunks for choice in c.choices for t in choice.delta.tool_calls or []
            ]
            name = next(t.function.name for t in deltas if t.function and t.function.name)
            arguments = "".join(t.function.arguments or "" for t in deltas if t.function)
            ident = next(t.id for t in deltas if t.id)
            finish = [choice.finish_reason for c in chunks for choice in c.choices]
            assert "tool_calls" in finish
        else:
            reply = await client(world).chat.completions.create(
                model=MODEL, messages=messages, tools=[WEATHER_TOOL]
            )
            [made] = reply.choices[0].message.tool_calls or []
            assert made.type == "function"
            name, arguments, ident = made.function.name, made.function.arguments, made.id
            assert reply.choices[0].finish_reason == "tool_calls"
        assert (name, json.loads(arguments)) == ("get_weather", {"city": "Oslo"})
        assert chat_requests(world.fake)[-1]["tools"] == [WEATHER_TOOL]
    world.fake.script("It is sunny in Oslo.")
    answered = [
        *messages,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": ident,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": ident, "content": "sunny"},
    ]
    final = await client(world).chat.completions.create(
        model=MODEL, messages=answered, tools=[WEATHER_TOOL]
    )
    assert final.choices[0].message.content == "It is sunny in Oslo."
    sent = chat_requests(world.fake)[-1]["messages"]
    assert sent[-1]["content"] == "sunny"
    if world.api == "ollama":
        assert sent[-1]["tool_name"] == "get_weather"
        assert sent[-2]["tool_calls"] == [
            {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
        ]
    else:
        assert sent[-1]["tool_call_id"] == ident


async def test_response_format_and_sampling_options_reach_the_model_server(world: World) -> None:
    world.fake.script('{"colour": "red"}')
    schema = {"type": "object", "properties": {"colour": {"type": "string"}}}
    response_format: Any = {"type": "json_schema", "json_schema": {"name": "c", "schema": schema}}
    await client(world).chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "What colour?"}],
        response_format=response_format,
        temperature=0.2,
        max_tokens=50,
    )
    paths = ("/api/chat", "/v1/chat/completions")
    [sent] = [
        b for _, p, b in world.fake.requests if p in paths and "What colour?" in str(b["messages"])
    ]
    if world.api == "openai":
        assert sent["response_format"]["json_schema"]["schema"] == schema
        assert (sent["temperature"], sent["max_tokens"]) == (0.2, 50)
    else:
        assert sent["format"] == schema
        assert sent["options"] == {"temperature": 0.2, "num_predict": 50}


async def test_models_are_listed_as_openai_lists_them(world: World) -> None:
    models = [m.id async for m in client(world).models.list()]
    assert models in (["llama3.2"], ["llama3.2:latest"])


async def test_opting_out_by_suffix_sends_no_memory_and_by_header_learns_nothing(
    world: World,
) -> None:
    world.fake.script("Hi.")
    await say(world, [{"role": "user", "content": "I live in Lisbon."}])
    await wait_for(lambda: turns_of(world))
    world.fake.script("Somewhere.")
    await client(world).chat.completions.create(
        model=f"{MODEL}+noinject", messages=[{"role": "user", "content": "Where do I live?"}]
    )
    sent = chat_requests(world.fake)[-1]
    assert sent["model"] == MODEL
    assert "Lisbon" not in system_text(sent)
    world.fake.script("Sure.")
    await say(world, [{"role": "user", "content": "Secret: 1234"}], **{"X-Mnemo-Opt-Out": "learn"})
    await anyio.sleep(0.3)
    assert "Secret: 1234" not in [t["text"] for t in await turns_of(world)]


async def test_a_bad_request_gets_openais_error_shape(world: World) -> None:
    with pytest.raises(openai.BadRequestError) as bad:
        await client(world).chat.completions.create(
            model="", messages=[{"role": "user", "content": "Hi"}]
        )
    assert bad.value.status_code == 400
    assert bad.value.body == {
        "message": "model is required",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    with pytest.raises(openai.NotFoundError) as unknown:
        await client(world).chat.completions.create(
            model="nope", messages=[{"role": "user", "content": "Hi"}]
        )
    assert "nope" in unknown.value.message
    with pytest.raises(openai.AuthenticationError):
        await client(world, "wrong-key").models.list()


async def test_a_failing_model_server_is_a_502_in_openais_shape(world: World) -> None:
    world.fake.fault(status=500, error="out of memory")
    with pytest.raises(openai.InternalServerError) as failed:
        await client(world).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Hi"}]
        )
    assert failed.value.status_code == 502
    assert isinstance(failed.value.body, dict)
    assert failed.value.body["type"] == "server_error"
    assert "out of memory" in failed.value.body["message"]


async def test_a_failure_mid_stream_is_an_error_event(world: World) -> None:
    world.fake.script(Reply(content="one two three four"))
    world.fake.fault(stream_error_after=2, error="the GPU fell over")
    with pytest.raises(openai.APIError) as failed:
        await say(world, [{"role": "user", "content": "Count"}])
    assert "the GPU fell over" in str(failed.value)


async def test_a_client_that_leaves_mid_stream_cancels_the_model_servers_answer(
    world: World,
) -> None:
    world.fake.script(Reply(content="word " * 200, chunk_delay=0.05))
    stream = await client(world).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Talk a lot"}], stream=True
    )
    async for chunk in stream:
        if any(c.delta.content for c in chunk.choices):
            break  # the first words came: hang up
    await stream.close()

    async def disconnected() -> bool:
        return world.fake.client_disconnects > 0

    await wait_for(disconnected)
    turns = await wait_for(lambda: turns_of(world))
    [reply] = [t for t in turns if t["role"] == "assistant"]
    assert reply["meta"]["interrupted"] is True
    assert len(reply["text"].split()) < 200


async def test_another_key_sees_nothing_of_the_first_users_memory(world: World) -> None:
    world.fake.script("Hi.")
    await say(world, [{"role": "user", "content": "I live in Lisbon."}])
    await wait_for(lambda: turns_of(world))
    world.fake.script("No idea.")
    await client(world, OTHER_KEY).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Where do I live?"}]
    )
    assert "Lisbon" not in system_text(chat_requests(world.fake)[-1])
