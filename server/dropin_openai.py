"""OpenAI's chat completions, served with memory: ``/v1/chat/completions`` (server-sent
events or one JSON object, ``stream_options.include_usage``) and ``/v1/models`` (see
``docs/drop-in.md``).

With an OpenAI-compatible upstream a request goes on as the client sent it, with the
memory block added and the opt-out suffix taken off the model name, and its events come
back one for one; with Ollama both are translated (``server.dropin_translate``).
"""

from __future__ import annotations

import secrets
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.adapters.upstream import Upstream, sse_data
from server.dropin import (
    Step,
    caller_of,
    decoded,
    endpoint,
    inject,
    json_body,
    last_user_text,
    learn,
    messages_of,
    relay,
    relayed,
    streamed,
)
from server.dropin_answers import OllamaToOpenAi, ollama_to_completion, tags_to_openai_models
from server.dropin_translate import openai_chat_to_ollama, text_of

__all__ = ["routes"]

_SSE = "text/event-stream"
_DONE = b"data: [DONE]\n\n"
_encode = msgspec.json.encode


def _event(obj: Any) -> bytes:
    return b"data: " + _encode(obj) + b"\n\n"


def _failure(message: str) -> bytes:
    error = {"message": message, "type": "server_error", "param": None, "code": None}
    return _event({"error": error})


def _text(event: dict[str, Any]) -> str:
    """The text of a chunk's deltas, or of a whole completion's message."""
    texts = []
    for choice in event.get("choices") or []:
        part = choice.get("delta") or choice.get("message") or {}
        texts.append(text_of(part.get("content")))
    return "".join(texts)


async def _completions(request: Request, user_id: str) -> Response:
    body = await json_body(request)
    messages = messages_of(body)
    caller = caller_of(request, user_id, body.get("model"), messages)
    said = last_user_text(messages)
    meta = {"via": "openai", "model": caller.model}
    stream = bool(body.get("stream"))
    sent = {**body, "model": caller.model, "messages": await inject(request, caller, messages)}
    upstream: Upstream = request.state.upstream
    if upstream.api == "openai":
        path, payload = "/v1/chat/completions", sent
    else:
        path, payload = "/api/chat", openai_chat_to_ollama(sent)
    response, stack = await relay(request, "POST", path, _encode(payload))
    if not stream:
        async with stack:
            raw = await upstream.read(response)
        answer = msgspec.json.decode(raw)
        if upstream.api == "ollama":
            ident = "chatcmpl-" + secrets.token_hex(12)
            answer = ollama_to_completion(answer, ident=ident, model=caller.model)
            raw = _encode(answer)
        await learn(request, caller, said, _text(answer), meta)
        return Response(raw, 200, media_type="application/json")
    step: Step
    if upstream.api == "openai":
        events = decoded(upstream, sse_data(upstream.lines(response)))
        step = _same
    else:
        events = decoded(upstream, upstream.lines(response))
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        ident = "chatcmpl-" + secrets.token_hex(12)
        step = _from_ollama(OllamaToOpenAi(ident=ident, model=caller.model, include_usage=usage))
    parts = relayed(request, caller, said, meta, events, step, _failure)
    return streamed(parts, stack, _SSE)


def _same(event: Any) -> tuple[list[bytes], str, bool]:
    """An event of an OpenAI-compatible server, relayed as it came."""
    if event == "[DONE]":
        return [_DONE], "", True
    if not isinstance(event, dict):
        return [_failure("the model server sent what is not OpenAI's protocol")], "", True
    return [_event(event)], _text(event), "error" in event


def _from_ollama(translation: OllamaToOpenAi) -> Step:
    started = False

    def step(line: Any) -> tuple[list[bytes], str, bool]:
        nonlocal started
        if not isinstance(line, dict) or "error" in line:
            error = line.get("error") if isinstance(line, dict) else line
            return [_failure(f"the model server failed: {error}")], "", True
        chunks = [] if started else [translation.start()]
        started = True
        chunks += translation.feed(line)
        out = [_event(chunk) for chunk in chunks]
        done = bool(line.get("done"))
        if done:
            out.append(_DONE)
        return out, "".join(_text(chunk) for chunk in chunks), done

    return step


async def _models(request: Request, user_id: str) -> Response:
    upstream: Upstream = request.state.upstream
    path = "/v1/models" if upstream.api == "openai" else "/api/tags"
    response, stack = await relay(request, "GET", path, None)
    async with stack:
        raw = await upstream.read(response)
    if upstream.api == "ollama":
        raw = _encode(tags_to_openai_models(msgspec.json.decode(raw)))
    return Response(raw, 200, media_type="application/json")


routes = [
    Route("/v1/chat/completions", endpoint("openai", _completions), methods=["POST"]),
    Route("/v1/models", endpoint("openai", _models), methods=["GET"]),
]
