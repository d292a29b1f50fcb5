"""Between Ollama's chat API and OpenAI's chat completions: requests, both ways, and the
pieces answers share (``server.dropin_answers``). Pure functions on decoded JSON.

What one API has and the other lacks is left out (Ollama's ``keep_alive``, OpenAI's
``n``); what both have is carried over: messages with images and tool calls, tools,
structured output (``format`` / ``response_format``), sampling options.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "Json",
    "Translation",
    "now_rfc3339",
    "ollama_calls",
    "ollama_chat_to_openai",
    "ollama_generate_to_openai",
    "openai_calls",
    "openai_chat_to_ollama",
    "text_of",
]

Json = dict[str, Any]

#: Ollama's ``options`` that OpenAI's request has at its top level, and their names there.
_OPTIONS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "seed": "seed",
    "stop": "stop",
    "num_predict": "max_tokens",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
}
#: The first bytes of an image in base64, and its media type (for a ``data:`` URL).
_IMAGE_KINDS = {
    "iVBOR": "image/png",
    "/9j/": "image/jpeg",
    "R0lG": "image/gif",
    "UklG": "image/webp",
}


class Translation(ValueError):
    """The request cannot be said in the other API (the message says why)."""


def now_rfc3339() -> str:
    """Now, as Ollama's ``created_at`` says it."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def text_of(content: Any) -> str:
    """The text of a message's ``content``: a string, or OpenAI's list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def ollama_calls(calls: list[Json]) -> list[Json]:
    """OpenAI's tool calls (arguments as JSON text) as Ollama's (arguments as an object)."""
    out = []
    for call in calls:
        function = call.get("function") or {}
        arguments = function.get("arguments") or "{}"
        try:
            parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
        except json.JSONDecodeError:
            parsed = {"arguments": arguments}  # the model's broken JSON, kept as said
        out.append({"function": {"name": function.get("name", ""), "arguments": parsed}})
    return out


def openai_calls(calls: list[Json], first: int) -> list[Json]:
    """Ollama's tool calls as OpenAI's, numbered (``index``, and in the id) from ``first``."""
    out = []
    for i, call in enumerate(calls, first):
        function = call.get("function") or {}
        arguments = function.get("arguments", {})
        out.append(
            {
                "index": i,
                "id": f"call_{i}_{function.get('name', '')}",
                "type": "function",
                "function": {
                    "name": function.get("name", ""),
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
        )
    return out


# -- requests: Ollama -> OpenAI ----------------------------------------------------------


def _data_url(image: str) -> str:
    kind = next((k for p, k in _IMAGE_KINDS.items() if image.startswith(p)), "image/png")
    return f"data:{kind};base64,{image}"


def _message_to_openai(message: Json, calls: list[tuple[str, str, bool]]) -> Json:
    """One Ollama message as OpenAI's; ``calls`` holds the (id, name, answered) of the
    conversation's tool calls so far: a ``tool`` message answers the first one of its name
    not yet answered (Ollama's tool messages name the function, OpenAI's the call)."""
    role, content = message.get("role"), message.get("content") or ""
    out: Json = {"role": role, "content": content}
    images = message.get("images") or []
    if images:
        parts: list[Json] = [{"type": "text", "text": content}] if content else []
        parts += [{"type": "image_url", "image_url": {"url": _data_url(i)}} for i in images]
        out["content"] = parts
    if message.get("tool_calls"):
        made = openai_calls(message["tool_calls"], len(calls))
        calls += [(c["id"], c["function"]["name"], False) for c in made]
        out["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in made]
    if role == "tool":
        name = message.get("tool_name") or message.get("name")
        found = next((i for i, c in enumerate(calls) if not c[2] and name in (None, c[1])), None)
        if found is not None:
            calls[found] = (*calls[found][:2], True)
            out["tool_call_id"] = calls[found][0]
        else:
            out["tool_call_id"] = f"call_{name or 'unknown'}"
    return out


def _format_to_openai(format_: Any) -> Json | None:
    if format_ == "json":
        return {"type": "json_object"}
    if isinstance(format_, dict):
        return {"type": "json_schema", "json_schema": {"name": "format", "schema": format_}}
    return None


def _common_to_openai(body: Json, messages: list[Json]) -> Json:
    stream = body.get("stream", True) is not False  # Ollama streams unless told not to
    out: Json = {"model": body.get("model"), "messages": messages, "stream": stream}
    if stream:
        out["stream_options"] = {"include_usage": True}
    options = body.get("options") or {}
    for name, openai_name in _OPTIONS.items():
        if name in options:
            out[openai_name] = options[name]
    response_format = _format_to_openai(body.get("format"))
    if response_format is not None:
        out["response_format"] = response_format
    return out


def ollama_chat_to_openai(body: Json) -> Json:
    """An Ollama ``/api/chat`` request as a ``/v1/chat/completions`` one."""
    calls: list[tuple[str, str, bool]] = []
    out = _common_to_openai(body, [_message_to_openai(m, calls) for m in body["messages"]])
    if body.get("tools"):
        out["tools"] = body["tools"]
    return out


def ollama_generate_to_openai(body: Json) -> Json:
    """An Ollama ``/api/generate`` request as a ``/v1/chat/completions`` one: its
    ``system`` and ``prompt`` (with its images) become two messages."""
    messages: list[Json] = []
    if body.get("system"):
        messages.append({"role": "system", "content": body["system"]})
    prompt = {"role": "user", "content": body.get("prompt") or "", "images": body.get("images")}
    messages.append(_message_to_openai(prompt, []))
    return _common_to_openai(body, messages)


# -- requests: OpenAI -> Ollama ----------------------------------------------------------


def _image_of(part: Json) -> str:
    url = str((part.get("image_url") or {}).get("url", ""))
    head, comma, data = url.partition(",")
    if not (url.startswith("data:") and head.endswith(";base64") and comma):
        raise Translation("images must be base64 data: URLs when the model server is Ollama")
    return data


def _message_to_ollama(message: Json, names: dict[str, str]) -> Json:
    """One OpenAI message as Ollama's; ``names`` maps tool call ids to function names."""
    content = message.get("content")
    out: Json = {"role": message.get("role"), "content": text_of(content)}
    if isinstance(content, list):
        images = [
            _image_of(p) for p in content if isinstance(p, dict) and p.get("type") == "image_url"
        ]
        if images:
            out["images"] = images
    if message.get("tool_calls"):
        for call in message["tool_calls"]:
            names[str(call.get("id"))] = str((call.get("function") or {}).get("name", ""))
        out["tool_calls"] = ollama_calls(message["tool_calls"])
    if message.get("role") == "tool":
        name = names.get(str(message.get("tool_call_id"))) or message.get("name")
        if name:
            out["tool_name"] = name
    return out


def openai_chat_to_ollama(body: Json) -> Json:
    """A ``/v1/chat/completions`` request as an Ollama ``/api/chat`` one."""
    names: dict[str, str] = {}
    out: Json = {
        "model": body.get("model"),
        "messages": [_message_to_ollama(m, names) for m in body["messages"]],
        "stream": bool(body.get("stream")),
    }
    if body.get("tools"):
        out["tools"] = body["tools"]
    options: Json = {}
    for name, openai_name in _OPTIONS.items():
        if body.get(openai_name) is not None:
            options[name] = body[openai_name]
    if body.get("max_completion_tokens") is not None:
        options["num_predict"] = body["max_completion_tokens"]
    if options:
        out["options"] = options
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_object":
        out["format"] = "json"
    elif response_format.get("type") == "json_schema":
        out["format"] = (response_format.get("json_schema") or {}).get("schema") or "json"
    return out
