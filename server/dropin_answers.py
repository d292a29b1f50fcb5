"""Between Ollama's chat API and OpenAI's chat completions: answers, whole or streamed,
both ways, and model lists. Pure functions on decoded JSON (``server.dropin_translate``
has the requests)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from server.dropin_translate import Json, now_rfc3339, ollama_calls, openai_calls

__all__ = [
    "OllamaToOpenAi",
    "OpenAiToOllama",
    "completion_to_ollama",
    "ollama_to_completion",
    "openai_models_to_tags",
    "tags_to_openai_models",
]


# -- answers: OpenAI -> Ollama -----------------------------------------------------------


def _done_reason(finish_reason: str | None) -> str:
    return "length" if finish_reason == "length" else "stop"


def _usage_counts(usage: Json | None) -> Json:
    usage = usage or {}
    return {
        "prompt_eval_count": usage.get("prompt_tokens", 0),
        "eval_count": usage.get("completion_tokens", 0),
    }


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
            reply["tool_calls"] = ollama_calls(message["tool_calls"])
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
            calls = ollama_calls([self._calls[i] for i in sorted(self._calls)])
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


def ollama_to_completion(answer: Json, *, ident: str, model: str) -> Json:
    """Ollama's whole ``/api/chat`` answer as a chat completion."""
    message = answer.get("message") or {}
    reply: Json = {"role": "assistant", "content": message.get("content") or ""}
    calls = message.get("tool_calls") or []
    if calls:
        reply["tool_calls"] = [
            {k: v for k, v in c.items() if k != "index"} for c in openai_calls(calls, 0)
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
            chunks.append(self._chunk({"tool_calls": openai_calls(calls, self._calls)}))
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
