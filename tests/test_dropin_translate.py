"""The translations between Ollama's chat API and OpenAI's chat completions, on the cases
the client tests do not reach: tool calls over several rounds, arguments streamed in
pieces or broken, images that cannot cross."""

from __future__ import annotations

from typing import Any

import pytest

from server.dropin_answers import OpenAiToOllama
from server.dropin_translate import Translation, ollama_chat_to_openai, openai_chat_to_ollama


def _call(name: str, arguments: dict[str, str]) -> dict[str, object]:
    return {"function": {"name": name, "arguments": arguments}}


def test_each_tool_answer_names_the_call_it_answers_over_several_rounds() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "Weather in Oslo and Rome?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    _call("weather", {"city": "Oslo"}),
                    _call("weather", {"city": "Rome"}),
                ],
            },
            {"role": "tool", "content": "sunny", "tool_name": "weather"},
            {"role": "tool", "content": "rainy", "tool_name": "weather"},
            {"role": "assistant", "content": "", "tool_calls": [_call("time", {"city": "Oslo"})]},
            {"role": "tool", "content": "noon", "tool_name": "time"},
        ],
    }
    messages = ollama_chat_to_openai(body)["messages"]
    ids = [c["id"] for m in messages for c in m.get("tool_calls", [])]
    answers = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert answers == ids
    assert len(set(ids)) == 3
    assert messages[1]["tool_calls"][1]["function"]["arguments"] == '{"city": "Rome"}'


def test_an_image_by_url_cannot_reach_ollama() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    body = {"model": "m", "messages": [{"role": "user", "content": [image]}]}
    with pytest.raises(Translation, match="base64 data: URLs"):
        openai_chat_to_ollama(body)


def test_streamed_tool_call_arguments_arrive_at_ollama_whole() -> None:
    translation = OpenAiToOllama("m", generate=False)
    pieces = ['{"ci', 'ty": "Os', 'lo"}']
    first = {"index": 0, "id": "c1", "type": "function", "function": {"name": "weather"}}
    chunks: list[dict[str, Any]] = [{"choices": [{"delta": {"tool_calls": [first]}}]}]
    chunks += [
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}}]}
        for p in pieces
    ]
    chunks.append({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})
    assert [line for chunk in chunks for line in translation.feed(chunk)] == []
    calls, done = translation.finish()
    assert calls["message"]["tool_calls"] == [_call("weather", {"city": "Oslo"})]
    assert done["done"]
    assert done["done_reason"] == "stop"


def test_tool_arguments_that_are_not_json_are_kept_as_the_model_said_them() -> None:
    body = {
        "model": "m",
        "messages": [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{oops"},
                    }
                ],
            }
        ],
    }
    [message] = openai_chat_to_ollama(body)["messages"]
    assert message["tool_calls"] == [
        {"function": {"name": "f", "arguments": {"arguments": "{oops"}}}
    ]
