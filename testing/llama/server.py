"""The part of Ollama's HTTP API mnemo uses, over real models (``worker.mjs``).

``POST /api/chat`` and ``/api/generate`` (NDJSON streamed, or one object with
``"stream": false``; ``format``, ``options``, ``keep_alive``; an empty request loads
the model, with ``keep_alive`` 0 unloads it), ``GET /api/tags``, ``POST /api/show``,
``GET /api/ps``, ``GET /api/version`` and ``GET /``. Errors have Ollama's shape,
``{"error": message}``, and its statuses: 400 for a bad request, 404 for an unknown
model, 500 for a format or an option the model cannot take or a failed generation
(after the first streamed line, an error is an ``{"error"}`` line instead).

Not served: embeddings, tools, thinking, images, ``suffix``, ``template`` and
``context`` (each refused with 400 when asked for), pulling and creating models.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from testing.llama.grammar import FormatError, GrammarMaker
from testing.llama.models import Scheduler, ServedModel, full_name, now_iso
from testing.llama.options import OptionError, keep_alive_seconds, read_options
from testing.llama.worker import Event, WorkerFailed

__all__ = ["VERSION", "create_app"]

#: The Ollama release whose API this follows.
VERSION = "0.12.0"
_ROLES = ("system", "user", "assistant")


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass(frozen=True, slots=True)
class _Call:
    """One chat or generate request, checked."""

    chat: bool
    model: ServedModel
    name: str
    body: dict[str, Any]
    keep_alive: float | None
    started: int


def create_app(
    models: Sequence[ServedModel], scheduler: Scheduler, grammars: GrammarMaker
) -> Starlette:
    """The Ollama API over ``models``, run by ``scheduler``."""
    by_name = {m.name: m for m in models}

    def find(body: dict[str, Any]) -> tuple[str, ServedModel]:
        """The model a request names (``model``, or ``name`` as ``/api/show`` allows)."""
        name = body.get("model") or body.get("name")
        if not isinstance(name, str) or not name:
            raise _Refused(400, "model is required")
        model = by_name.get(full_name(name))
        if model is None:
            raise _Refused(404, f"model '{name}' not found")
        return name, model

    async def tags(request: Request) -> Response:
        return JSONResponse({"models": [m.entry() for m in models]})

    async def ps(request: Request) -> Response:
        loaded = scheduler.loaded
        entries = []
        if loaded is not None:
            model, num_ctx, expires = loaded
            expires = min(expires, time.time() + 10 * 365 * 86400)
            entries.append(
                model.entry()
                | {
                    "expires_at": datetime.fromtimestamp(expires, UTC).isoformat(),
                    "size_vram": 0,
                    "context_length": num_ctx,
                }
            )
        return JSONResponse({"models": entries})

    async def version(request: Request) -> Response:
        return JSONResponse({"version": VERSION})

    async def root(request: Request) -> Response:
        return PlainTextResponse("Ollama is running")

    async def show(request: Request) -> Response:
        try:
            _, model = find(await _body(request))
        except _Refused as refused:
            return _error(refused.status, refused.message)
        architecture = model.info.get("architecture") or ""
        return JSONResponse(
            {
                "license": model.info.get("license") or "",
                "modelfile": f"FROM {model.path}\n",
                "parameters": "\n".join(
                    f"{key:<30} {json.dumps(value)}" for key, value in model.parameters.items()
                ),
                "template": model.info.get("chat_template") or "",
                "details": model.details(),
                "model_info": {
                    "general.architecture": architecture,
                    "general.parameter_count": model.info.get("parameter_count"),
                    f"{architecture}.context_length": model.info.get("context_length"),
                    f"{architecture}.embedding_length": model.info.get("embedding_length"),
                },
                "capabilities": ["completion"],
                "modified_at": model.modified_at,
            }
        )

    async def chat(request: Request) -> Response:
        return await _answer(request, chat=True)

    async def generate(request: Request) -> Response:
        return await _answer(request, chat=False)

    async def _answer(request: Request, *, chat: bool) -> Response:
        started = time.perf_counter_ns()
        try:
            body = await _body(request)
            name, model = find(body)
            call = _Call(chat, model, name, body, _keep_alive(body), started)
            answer: Response | None = None
            async with anyio.create_task_group() as tg:
                # Like Ollama, drop the work of a client that left: while it waits its
                # turn, and while a whole (not streamed) answer is being made.
                tg.start_soon(_cancel_on_disconnect, request, tg.cancel_scope)
                try:
                    answer = await _run(call)
                except _Refused as refused:  # here: a task group would wrap it in a group
                    answer = _error(refused.status, refused.message)
                tg.cancel_scope.cancel()
            return answer or Response(status_code=499)
        except _Refused as refused:
            return _error(refused.status, refused.message)

    async def _run(call: _Call) -> Response:
        body, model = call.body, call.model
        empty = not body.get("messages") if call.chat else not body.get("prompt")
        if empty and call.keep_alive == 0:
            await scheduler.unload(model)
            return JSONResponse(_frame(call, "", done=True) | {"done_reason": "unload"})
        _refuse_unsupported(call)
        prompt = _prompt(call) if not empty else {}
        try:
            asked = body.get("options")
            if isinstance(asked, dict):
                asked = model.parameters | asked
            options = read_options(
                model.parameters if asked is None else asked, max_ctx=model.max_ctx
            )
        except OptionError as exc:
            raise _Refused(500, str(exc)) from None
        if empty:
            load_ns = await scheduler.load(model, options.num_ctx, call.keep_alive)
            return JSONResponse(
                _frame(call, "", done=True) | {"done_reason": "load", "load_duration": load_ns}
            )
        try:
            grammar = await grammars.grammar(body.get("format"))
        except FormatError as exc:
            raise _Refused(500, str(exc)) from None
        request = {"grammar": grammar, "options": options.for_worker()} | prompt
        frames = _frames(call, scheduler.generate(model, options.num_ctx, call.keep_alive, request))
        try:
            first = await anext(frames)
        except WorkerFailed as exc:
            raise _Refused(500, str(exc)) from None
        if body.get("stream", True) is not False:
            return _Ndjson(first, frames)
        try:
            return await _collect(call, first, frames)
        finally:
            await frames.aclose()

    return Starlette(
        routes=[
            Route("/", root, methods=["GET", "HEAD"]),
            Route("/api/chat", chat, methods=["POST"]),
            Route("/api/generate", generate, methods=["POST"]),
            Route("/api/tags", tags, methods=["GET"]),
            Route("/api/show", show, methods=["POST"]),
            Route("/api/ps", ps, methods=["GET"]),
            Route("/api/version", version, methods=["GET"]),
        ],
        exception_handlers={404: _not_found, 405: _not_found},
    )


async def _cancel_on_disconnect(request: Request, scope: anyio.CancelScope) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def _not_found(request: Request, exc: Exception) -> Response:
    return PlainTextResponse("404 page not found", status_code=404)  # gin's


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        raise _Refused(400, "missing request body")
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _Refused(400, f"invalid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise _Refused(400, "json: cannot unmarshal the body into a request object")
    return body


def _keep_alive(body: dict[str, Any]) -> float | None:
    try:
        return keep_alive_seconds(body.get("keep_alive"))
    except OptionError as exc:
        raise _Refused(400, str(exc)) from None


def _refuse_unsupported(call: _Call) -> None:
    body = call.body
    if not isinstance(body.get("options") or {}, dict):
        raise _Refused(400, "json: cannot unmarshal options into map[string]interface {}")
    if body.get("think") not in (None, False):
        raise _Refused(400, f'"{call.name}" does not support thinking')
    if body.get("tools"):
        raise _Refused(400, f"{call.name} does not support tools")
    if body.get("suffix"):
        raise _Refused(400, f"{call.name} does not support insert")
    for field in ("images", "template", "context"):
        if body.get(field):
            raise _Refused(400, f"this server does not serve {field!r}")
    if body.get("raw") and body.get("system"):
        raise _Refused(400, "raw mode does not support template, system, or context")


def _prompt(call: _Call) -> dict[str, Any]:
    """What the worker renders the prompt from: messages for the chat template, or
    the raw prompt's text."""
    body = call.body
    if not call.chat:
        if not isinstance(body["prompt"], str) or not isinstance(body.get("system", ""), str):
            raise _Refused(400, "json: cannot unmarshal prompt into a string")
        if body.get("raw"):
            return {"prompt": body["prompt"]}
        system = [{"role": "system", "content": body["system"]}] if body.get("system") else []
        return {"messages": [*system, {"role": "user", "content": body["prompt"]}]}
    messages = body["messages"]
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise _Refused(400, "json: cannot unmarshal messages into []api.Message")
    checked = []
    for message in messages:
        role, content = message.get("role"), message.get("content") or ""
        if not isinstance(role, str) or not isinstance(content, str):
            raise _Refused(400, "json: cannot unmarshal a message's role or content into string")
        if role not in _ROLES:
            raise _Refused(400, f"this server renders only the roles {', '.join(_ROLES)}")
        checked.append({"role": role, "content": content})
    return {"messages": checked}


def _frame(call: _Call, text: str, *, done: bool) -> dict[str, Any]:
    frame: dict[str, Any] = {"model": call.name, "created_at": now_iso()}
    if call.chat:
        frame["message"] = {"role": "assistant", "content": text}
    else:
        frame["response"] = text
    frame["done"] = done
    return frame


def _last_frame(call: _Call, event: Event) -> dict[str, Any]:
    return _frame(call, "", done=True) | {
        "done_reason": event["done_reason"],
        "total_duration": time.perf_counter_ns() - call.started,
        "load_duration": event["load_ns"],
        "prompt_eval_count": event["prompt_tokens"],
        # Of those, the tokens kept evaluated from the previous request (Ollama 0.30+).
        "prompt_eval_cached_count": event["cached_tokens"],
        "prompt_eval_duration": event["prompt_ns"],
        "eval_count": event["eval_count"],
        "eval_duration": event["eval_ns"],
    }


async def _frames(
    call: _Call, generation: AbstractAsyncContextManager[AsyncIterator[Event]]
) -> AsyncGenerator[dict[str, Any]]:
    """The response's frames: one per piece of text, then the last one with the counts."""
    async with generation as events:
        async for event in events:
            if "text" in event:
                yield _frame(call, event["text"], done=False)
            elif event.get("done"):
                yield _last_frame(call, event)


async def _collect(
    call: _Call, first: dict[str, Any], frames: AsyncGenerator[dict[str, Any]]
) -> Response:
    """The whole answer as one object (``"stream": false``)."""
    pieces: list[str] = []
    frame = first
    try:
        while True:
            pieces.append(frame["message"]["content"] if call.chat else frame["response"])
            if frame["done"]:
                break
            frame = await anext(frames)
    except (WorkerFailed, StopAsyncIteration) as exc:
        return _error(500, str(exc) or "the generation ended early")
    text = "".join(pieces)
    if call.chat:
        return JSONResponse(frame | {"message": {"role": "assistant", "content": text}})
    return JSONResponse(frame | {"response": text})


class _Ndjson(StreamingResponse):
    """Frames as NDJSON lines; a failure after the first line becomes an error line.

    However the response ends (the client leaving included), the generation is closed,
    which cancels it in the worker.
    """

    def __init__(self, first: dict[str, Any], frames: AsyncGenerator[dict[str, Any]]) -> None:
        self._frames = frames
        super().__init__(self._lines(first), media_type="application/x-ndjson")

    async def _lines(self, first: dict[str, Any]) -> AsyncIterator[bytes]:
        yield json.dumps(first).encode() + b"\n"
        try:
            async for frame in self._frames:
                yield json.dumps(frame).encode() + b"\n"
        except WorkerFailed as exc:
            yield json.dumps({"error": str(exc)}).encode() + b"\n"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self._frames.aclose()


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)
