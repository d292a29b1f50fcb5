"""Ollama's API, served with memory: ``/api/chat``, ``/api/generate``, ``/api/tags``,
``/api/show``, ``/api/version`` (see ``docs/drop-in.md``).

With an Ollama upstream a request goes on as the client sent it, with the memory block
added and the opt-out suffix taken off the model name, and its answer comes back line for
line; with an OpenAI-compatible one both are translated (``server.dropin_translate``).
"""

from __future__ import annotations

import time
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.adapters.upstream import Upstream, sse_data
from server.dropin import (
    ApiError,
    Caller,
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
from server.dropin_answers import OpenAiToOllama, completion_to_ollama, openai_models_to_tags
from server.dropin_translate import (
    now_rfc3339,
    ollama_chat_to_openai,
    ollama_generate_to_openai,
)

__all__ = ["OLLAMA_VERSION", "routes"]

#: The Ollama API version mnemo says it speaks when its upstream is not Ollama.
OLLAMA_VERSION = "0.12.0"
_NDJSON = "application/x-ndjson"
_encode = msgspec.json.encode


def _json(body: Any, status: int = 200) -> Response:
    return Response(_encode(body), status, media_type="application/json")


def _line(obj: Any) -> bytes:
    return _encode(obj) + b"\n"


def _failure(message: str) -> bytes:
    return _line({"error": message})


def _text(line: dict[str, Any]) -> str:
    message = line.get("message") or {}
    return str(message.get("content") or line.get("response") or "")


async def _answer(
    request: Request, body: dict[str, Any], messages: list[dict[str, Any]], *, generate: bool
) -> Response:
    """Relay one chat (``messages``) or generate request with memory put in."""
    user_id: str = request.state.user_id
    # One session per user and app for generate, whose requests are each a conversation.
    caller = caller_of(request, user_id, body.get("model"), [] if generate else messages)
    said = last_user_text(messages)
    meta = {"via": "ollama", "model": caller.model}
    stream = body.get("stream", True) is not False
    sent = {**body, "model": caller.model}
    with_memory = await inject(request, caller, messages)
    if generate:
        system = with_memory[0]["content"] if with_memory is not messages else None
        if system is not None:
            sent["system"] = system
    else:
        sent["messages"] = with_memory
    upstream: Upstream = request.state.upstream
    path = "/api/generate" if generate else "/api/chat"
    if upstream.api == "ollama":
        response, stack = await relay(request, "POST", path, _encode(sent))
        if not stream:
            async with stack:
                raw = await upstream.read(response)
            await _learn_whole(request, caller, said, meta, raw)
            return Response(raw, 200, media_type="application/json")
        events = decoded(upstream, upstream.lines(response))
        step: Step = _same
    else:
        started = time.monotonic_ns()
        translated = ollama_generate_to_openai(sent) if generate else ollama_chat_to_openai(sent)
        response, stack = await relay(request, "POST", "/v1/chat/completions", _encode(translated))
        if not stream:
            async with stack:
                raw = await upstream.read(response)
            completion = msgspec.json.decode(raw)
            took = time.monotonic_ns() - started
            answer = completion_to_ollama(completion, generate=generate, took_ns=took)
            await _learn_whole(request, caller, said, meta, _encode(answer))
            return _json(answer)
        events = decoded(upstream, sse_data(upstream.lines(response)))
        step = _from_openai(OpenAiToOllama(caller.model, generate=generate))
    parts = relayed(request, caller, said, meta, events, step, _failure)
    return streamed(parts, stack, _NDJSON)


async def _learn_whole(
    request: Request, caller: Caller, said: str, meta: dict[str, Any], raw: bytes
) -> None:
    """Hand a whole answer's exchange to the session."""
    try:
        answer = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return
    if isinstance(answer, dict):
        await learn(request, caller, said, _text(answer), meta)


def _same(line: Any) -> tuple[list[bytes], str, bool]:
    """An Ollama line, relayed as it came."""
    if not isinstance(line, dict):
        return [_failure("the model server sent what is not Ollama's protocol")], "", True
    return [_line(line)], _text(line), bool(line.get("done")) or "error" in line


def _from_openai(translation: OpenAiToOllama) -> Step:
    def step(event: Any) -> tuple[list[bytes], str, bool]:
        if event == "[DONE]":
            return [_line(line) for line in translation.finish()], "", True
        if not isinstance(event, dict) or "error" in event:
            error = event.get("error") if isinstance(event, dict) else None
            message = error.get("message") if isinstance(error, dict) else error
            return [_failure(f"the model server failed: {message or event}")], "", True
        lines = translation.feed(event)
        return [_line(line) for line in lines], "".join(_text(line) for line in lines), False

    return step


async def _chat(request: Request, user_id: str) -> Response:
    body = await json_body(request)
    messages = messages_of(body)
    return await _answer(request, body, messages, generate=False)


async def _generate(request: Request, user_id: str) -> Response:
    body = await json_body(request)
    prompt = body.get("prompt", "")
    if not isinstance(prompt, str):
        raise ApiError(400, "prompt must be a string")
    system = body.get("system")
    messages: list[dict[str, Any]] = [] if not system else [{"role": "system", "content": system}]
    if prompt:  # without one, Ollama loads the model and answers done: nothing to learn
        messages.append({"role": "user", "content": prompt})
    return await _answer(request, body, messages, generate=True)


async def _upstream_json(request: Request, method: str, path: str, body: bytes | None) -> Any:
    upstream: Upstream = request.state.upstream
    response, stack = await relay(request, method, path, body)
    async with stack:
        raw = await upstream.read(response)
    return msgspec.json.decode(raw)


async def _tags(request: Request, user_id: str) -> Response:
    upstream: Upstream = request.state.upstream
    if upstream.api == "ollama":
        return _json(await _upstream_json(request, "GET", "/api/tags", None))
    return _json(openai_models_to_tags(await _upstream_json(request, "GET", "/v1/models", None)))


async def _show(request: Request, user_id: str) -> Response:
    body = await json_body(request)
    name = body.get("model") or body.get("name")
    if not isinstance(name, str) or not name:
        raise ApiError(400, "model is required")
    upstream: Upstream = request.state.upstream
    if upstream.api == "ollama":
        sent = _encode({**body, "model": name})
        return _json(await _upstream_json(request, "POST", "/api/show", sent))
    models = await _upstream_json(request, "GET", "/v1/models", None)
    if name not in {m.get("id") for m in models.get("data") or []}:
        raise ApiError(404, f"model '{name}' not found")
    return _json(
        {
            "modelfile": "",
            "parameters": "",
            "template": "",
            "details": {"format": "", "family": "", "parameter_size": "", "quantization_level": ""},
            "model_info": {},
            "capabilities": ["completion"],
            "modified_at": now_rfc3339(),
        }
    )


async def _version(request: Request, user_id: str) -> Response:
    upstream: Upstream = request.state.upstream
    if upstream.api == "ollama":
        return _json(await _upstream_json(request, "GET", "/api/version", None))
    return _json({"version": OLLAMA_VERSION})


routes = [
    Route("/api/chat", endpoint("ollama", _chat), methods=["POST"]),
    Route("/api/generate", endpoint("ollama", _generate), methods=["POST"]),
    Route("/api/tags", endpoint("ollama", _tags), methods=["GET"]),
    Route("/api/show", endpoint("ollama", _show), methods=["POST"]),
    Route("/api/version", endpoint("ollama", _version), methods=["GET"]),
]
