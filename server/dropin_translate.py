"""Between Ollama's chat API and OpenAI's chat completions, both ways: requests, answers
(whole or streamed), model lists. Pure functions on decoded JSON.

What one API has and the other lacks is left out (Ollama's ``keep_alive``, OpenAI's
``n``); what both have is carried over: messages with images and tool calls, tools,
structured output (``format`` / ``response_format``), sampling options, token counts.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "OllamaToOpenAi",
    "OpenAiToOllama",
    "Translation",
    "completion_to_ollama",
    "now_rfc3339",
    "ollama_chat_to_openai",
    "ollama_generate_to_openai",
    "ollama_to_completion",
    "openai_chat_to_ollama",
    "openai_models_to_tags",
    "tags_to_openai_models",
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


# -- requests: Ollama -> OpenAI ----------------------------------------------------------


def _data_url(image: str) -> str:
    kind = next((k for p, k in _IMAGE_KINDS.items() if image.startswith(p)), "image/png")
    return f"data:{kind};base64,{image}"


def _message_to_openai(message: Json, calls: list[tuple[str, str]]) -> Json:
    """One Ollama message as OpenAI's; ``calls`` holds the (id, name) of tool calls not yet
    answered, which a ``tool`` message answers by name."""
    role, content = message.get("role"), message.get("content") or ""
    out: Json = {"role": role, "content": content}
    images = message.get("images") or []
    if images:
        parts: list[Json] = [{"type": "text", "text": content}] if content else []
        parts += [{"type": "image_url", "image_url": {"url": _data_url(i)}} for i in images]
        out["content"] = parts
    if message.get("tool_calls"):
        out["tool_calls"] = []
        for call in message["tool_calls"]:
            function = call.get("function") or {}
            ident = f"call_{len(calls)}_{function.get('name', '')}"
            calls.append((ident, str(function.get("name", ""))))
            arguments = function.get("arguments", {})
            out["tool_calls"].append(
                {
                    "id": ident,
                    "type": "function",
                    "function": {
                        "name": function.get("name", ""),
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments),
                    },
                }
            )
    if role == "tool":
        name = message.get("tool_name") or message.get("name")
        found = next((c for c in calls if name in (None, c[1])), None)
        if found is not None:
            calls.remove(found)
            out["tool_call_id"] = found[0]
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
    calls: list[tuple[str, str]] = []
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
        out["tool_calls"] = []
        for call in message["tool_calls"]:
            function = call.get("function") or {}
            names[str(call.get("id"))] = str(function.get("name", ""))
            arguments = function.get("arguments") or "{}"
            try:
                parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
            except json.JSONDecodeError as exc:
                raise Translation(f"tool call arguments are not JSON: {exc}") from None
            out["tool_calls"].append(
                {"function": {"name": function.get("name", ""), "arguments": parsed}}
            )
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


# -- answers: OpenAI -> Ollama -----------------------------------------------------------


def _done_reason(finish_reason: str | None) -> str:
    return "length" if finish_reason == "length" else "stop"


def _usage_counts(usage: Json | None) -> Json:
    usage = usage or {}
    return {
        "prompt_eval_count": usage.get("prompt_tokens", 0),
        "eval_count": usage.get("completion_tokens", 0),
    }


def _ollama_calls(calls: list[Json]) -> list[Json]:
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


def completion_to_ollama(completion: Json, *, generate: bool, took_ns: int) -> Json:
    """A whole chat completion as Ollama's whole answer (of ``/api/generate`` with
    ``generate``, else of ``/api/chat``)."""
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    out: Json = {"model": completion.get("model", ""), "created_at": now_rfc3339()}
    if generate:
        out["response"] = message.get("content") or ""
    else:
        reply: Json = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            reply["tool_calls"] = _ollama_calls(message["tool_calls"])
        out["message"] = reply
    out |= {"done": True, "done_reason": _done_reason(choice.get("finish_reason"))}
    return out | {"total_duration": took_ns} | _usage_counts(completion.get("usage"))


class OpenAiToOllama:
    """A streamed chat completion's chunks as Ollama's NDJSON lines: text as it comes, tool
    calls (whose arguments OpenAI streams in pieces) whole at the end, then the ``done``
    line with the token counts."""

    def __init__(self, model: str, *, generate: bool) -> None:
        self._model, self._generate = model, generate
        self._calls: dict[int, Json] = {}
        self._finish: str | None = None
        self._usage: Json | None = None
        self._started = time.monotonic_ns()

    def _line(self, text: str, *, done: bool = False, calls: list[Json] | None = None) -> Json:
        out: Json = {"model": self._model, "created_at": now_rfc3339()}
        if self._generate:
            out["response"] = text
        else:
            out["message"] = {"role": "assistant", "content": text}
            if calls:
                out["message"]["tool_calls"] = calls
        out["done"] = done
        return out

    def feed(self, chunk: Json) -> list[Json]:
        """The lines for one chunk (often one; none for a chunk without text)."""
        self._usage = chunk.get("usage") or self._usage
        lines = []
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                lines.append(self._line(delta["content"]))
            for call in delta.get("tool_calls") or []:
                held = self._calls.setdefault(int(call.get("index", 0)), {"function": {}})
                function = call.get("function") or {}
                if function.get("name"):
                    held["function"]["name"] = function["name"]
                pieces = held["function"].get("arguments", "") + (function.get("arguments") or "")
                held["function"]["arguments"] = pieces
            self._finish = choice.get("finish_reason") or self._finish
        return lines

    def finish(self) -> list[Json]:
        """The last lines: held tool calls, then ``done``."""
        lines = []
        if self._calls:
            calls = _ollama_calls([self._calls[i] for i in sorted(self._calls)])
            lines.append(self._line("", calls=calls))
        done = self._line("", done=True)
        done["done_reason"] = _done_reason(self._finish)
        done["total_duration"] = time.monotonic_ns() - self._started
        lines.append(done | _usage_counts(self._usage))
        return lines


# -- answers: Ollama -> OpenAI -----------------------------------------------------------


def _finish_reason(answer: Json, calls: bool) -> str:
    if calls:
        return "tool_calls"
    return "length" if answer.get("done_reason") == "length" else "stop"


def _usage(answer: Json) -> Json:
    prompt, completion = answer.get("prompt_eval_count") or 0, answer.get("eval_count") or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _openai_calls(calls: list[Json], first: int) -> list[Json]:
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


def ollama_to_completion(answer: Json, *, ident: str, model: str) -> Json:
    """Ollama's whole ``/api/chat`` answer as a chat completion."""
    message = answer.get("message") or {}
    reply: Json = {"role": "assistant", "content": message.get("content") or ""}
    calls = message.get("tool_calls") or []
    if calls:
        reply["tool_calls"] = [
            {k: v for k, v in c.items() if k != "index"} for c in _openai_calls(calls, 0)
        ]
    choice = {
        "index": 0,
        "message": reply,
        "logprobs": None,
        "finish_reason": _finish_reason(answer, bool(calls)),
    }
    return {
        "id": ident,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": _usage(answer),
    }


class OllamaToOpenAi:
    """Ollama's streamed ``/api/chat`` lines as chat completion chunks: the first carries
    the role, then text and tool calls, then the ``finish_reason``, then (with
    ``include_usage``) the usage chunk, whose ``choices`` is empty."""

    def __init__(self, *, ident: str, model: str, include_usage: bool) -> None:
        self._head: Json = {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        self._include_usage = include_usage
        self._calls = 0

    def _chunk(self, delta: Json, finish: str | None = None) -> Json:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        chunk = self._head | {"choices": [choice]}
        if self._include_usage:
            chunk["usage"] = None
        return chunk

    def start(self) -> Json:
        """The first chunk: the assistant's role."""
        return self._chunk({"role": "assistant", "content": ""})

    def feed(self, line: Json) -> list[Json]:
        """The chunks for one line (the ``done`` line ends with the last ones)."""
        message = line.get("message") or {}
        chunks = []
        if message.get("content"):
            chunks.append(self._chunk({"content": message["content"]}))
        calls = message.get("tool_calls") or []
        if calls:
            chunks.append(self._chunk({"tool_calls": _openai_calls(calls, self._calls)}))
            self._calls += len(calls)
        if line.get("done"):
            chunks.append(self._chunk({}, _finish_reason(line, self._calls > 0)))
            if self._include_usage:
                chunks.append(self._head | {"choices": [], "usage": _usage(line)})
        return chunks


# -- model lists -------------------------------------------------------------------------


def openai_models_to_tags(models: Json) -> Json:
    """``/v1/models`` as Ollama's ``/api/tags``."""
    entries = []
    for model in models.get("data") or []:
        created = datetime.fromtimestamp(int(model.get("created") or 0), UTC)
        entries.append(
            {
                "name": model.get("id", ""),
                "model": model.get("id", ""),
                "modified_at": created.isoformat().replace("+00:00", "Z"),
                "size": 0,
                "digest": "",
                "details": {
                    "format": "",
                    "family": "",
                    "parameter_size": "",
                    "quantization_level": "",
                },
            }
        )
    return {"models": entries}


def tags_to_openai_models(tags: Json) -> Json:
    """Ollama's ``/api/tags`` as ``/v1/models``."""
    data = []
    for model in tags.get("models") or []:
        try:
            stamp = datetime.fromisoformat(str(model.get("modified_at")).replace("Z", "+00:00"))
            created = int(stamp.timestamp())
        except ValueError:
            created = 0
        data.append(
            {
                "id": model.get("name", ""),
                "object": "model",
                "created": created,
                "owned_by": "library",
            }
        )
    return {"object": "list", "data": data}
