"""What the drop-in endpoints (``server.dropin_ollama``, ``server.dropin_openai``) share:
who is calling and in which conversation, the memory put into a request, the exchange
handed to the session's actor, and answers in each API's own shape.

A request is a ``chat`` of a session actor: the user comes from the key (``Authorization:
Bearer``, as on every route), the conversation from ``X-Mnemo-Session`` or, without it,
from the user, the app and the conversation's first user message, so a client that
resends the whole history each time stays in one session. Only the last user message
and the reply are archived: what the client resends was archived by the request that
brought it.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import msgspec
from anyio.streams.memory import MemoryObjectSendStream
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from actors.context import chat_context
from actors.errors import LlmError, LlmFailure, NotHome, Overloaded, SessionClosed, TooManySessions
from actors.mailbox import SessionDeps
from actors.registry import SessionRegistry
from memory.json_bounds import check_depth
from memory.tokens import estimate_tokens
from schemas.llm import PromptMessage
from schemas.settings import Settings
from schemas.wire import NAME_PATTERN, ServerMessage, Turn
from server.adapters.openai_compat import error_text
from server.adapters.upstream import Api, Upstream
from server.auth import bearer, user_for_token
from server.budget import UserBudgets
from server.dropin_translate import Translation, text_of
from server.http import serving

__all__ = [
    "APP_HEADER",
    "OPT_OUT_HEADER",
    "SESSION_HEADER",
    "ApiError",
    "Caller",
    "Step",
    "caller_of",
    "decoded",
    "endpoint",
    "inject",
    "json_body",
    "last_user_text",
    "learn",
    "messages_of",
    "relay",
    "relayed",
    "streamed",
]

_log = logging.getLogger("mnemo.dropin")

SESSION_HEADER = "x-mnemo-session"
APP_HEADER = "x-mnemo-app"
OPT_OUT_HEADER = "x-mnemo-opt-out"
#: Model-name suffixes that opt a request out, and what they opt out of.
_SUFFIXES = {"+noinject": "inject", "+nolearn": "learn"}
_NAME = re.compile(NAME_PATTERN)
#: A request body may carry images: far more than a REST body.
_MAX_BODY = 32 << 20
#: How long a finished (or abandoned) exchange may take to reach its session's mailbox.
_LEARN_TIMEOUT = 5.0


class ApiError(Exception):
    """Answered with ``status`` in the API's own error shape."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


def error_response(shape: Api, status: int, message: str, kind: str) -> Response:
    """Ollama's ``{"error": "..."}`` or OpenAI's ``{"error": {"message", "type", ...}}``."""
    body: Any = {"error": message}
    if shape == "openai":
        code = {401: "invalid_api_key", 404: "model_not_found"}.get(status)
        body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return Response(msgspec.json.encode(body), status, media_type="application/json")


def refused(status: int, body: bytes) -> ApiError:
    """The model server's refusal, in our shape: its 4xx as is, anything else as 502."""
    message = error_text(body)
    if 400 <= status < 500:
        return ApiError(status, message, "invalid_request_error")
    return ApiError(502, f"the model server answered HTTP {status}: {message}", "server_error")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks, in which session, and what mnemo may do with the request."""

    user_id: str
    session_id: str
    #: ``global``, or the app of ``X-Mnemo-App`` (reads see ``global`` plus it).
    scope: str
    #: The model asked for, without opt-out suffixes.
    model: str
    inject: bool
    learn: bool


def caller_of(
    request: Request, user_id: str, model: Any, messages: Sequence[dict[str, Any]]
) -> Caller:
    """The caller of a request for ``model`` with the conversation ``messages``.

    Raises ``ApiError`` (400) for a missing model or a bad session or app name.
    """
    if not isinstance(model, str) or not model:
        raise ApiError(400, "model is required")
    opted = {
        word.strip().lower()
        for word in request.headers.get(OPT_OUT_HEADER, "").split(",")
        if word.strip()
    }
    while (suffix := next((s for s in _SUFFIXES if model.endswith(s)), None)) is not None:
        model = model.removesuffix(suffix)
        opted.add(_SUFFIXES[suffix])
    scope = request.headers.get(APP_HEADER, "global")
    if not _NAME.match(scope):
        raise ApiError(400, f"{APP_HEADER}: 1-128 of A-Z a-z 0-9 _ . : -")
    session = request.headers.get(SESSION_HEADER)
    if session is None:
        first = next((m for m in messages if m.get("role") == "user"), {})
        seed = "\n".join((user_id, scope, text_of(first.get("content"))))
        session = "conv-" + hashlib.sha256(seed.encode()).hexdigest()[:32]
    elif not _NAME.match(session):
        raise ApiError(400, f"{SESSION_HEADER}: 1-128 of A-Z a-z 0-9 _ . : -")
    return Caller(user_id, session, scope, model, "inject" not in opted, "learn" not in opted)


def _history(messages: Sequence[dict[str, Any]]) -> tuple[list[PromptMessage], int]:
    """The conversation's user and assistant messages, and its system messages' tokens."""
    history, system = [], 0
    for message in messages:
        text = text_of(message.get("content"))
        role = message.get("role")
        if role in ("user", "assistant"):
            history.append(PromptMessage(role, text))
        else:
            system += estimate_tokens(text)
    return history, system


async def memory_text(request: Request, caller: Caller, messages: Sequence[dict[str, Any]]) -> str:
    """The memory block for the conversation's last user message, within the token budget
    the WebSocket ``chat`` uses (``actors.context.chat_context``); "" when there is none."""
    history, system = _history(messages)
    query = next((m.content for m in reversed(history) if m.role == "user"), "")
    if not query.strip():
        return ""
    deps: SessionDeps = request.state.deps
    registry: SessionRegistry = request.state.registry
    actor = registry.get(caller.user_id, caller.session_id)
    topic = actor.memory.current_topic if actor is not None and actor.memory else None
    found = await chat_context(
        deps.context,
        caller.user_id,
        query,
        scope=None if caller.scope == "global" else caller.scope,
        topic=topic,
        history=history,
        system_tokens=system,
    )
    return found.memory_text


async def inject(
    request: Request, caller: Caller, messages: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``messages`` with the memory block added as a system message: appended to the
    client's first system message when it is text, else a new first message."""
    if not caller.inject:
        return messages
    text = await memory_text(request, caller, messages)
    if not text:
        return messages
    first = messages[0] if messages else {}
    if first.get("role") == "system" and isinstance(first.get("content"), str):
        return [{**first, "content": f"{first['content']}\n\n{text}"}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def last_user_text(messages: Sequence[dict[str, Any]]) -> str:
    """What the user says in this request: its last message, when it is the user's."""
    if messages and messages[-1].get("role") == "user":
        return text_of(messages[-1].get("content"))
    return ""


async def learn(
    request: Request, caller: Caller, said: str, answered: str, meta: dict[str, Any]
) -> None:
    """Hand the exchange to the session's actor as a finished turn (archived, counted,
    learned from, like a WebSocket ``chat``); never raises: the reply was given."""
    if not caller.learn or not (said.strip() or answered.strip()):
        return
    registry: SessionRegistry = request.state.registry
    turn = Turn(id="dropin_" + secrets.token_hex(6), user=said, assistant=answered, meta=meta)
    outbox: MemoryObjectSendStream[ServerMessage]
    outbox, replies = anyio.create_memory_object_stream[ServerMessage](1)
    with outbox, replies, anyio.move_on_after(_LEARN_TIMEOUT, shield=True):
        try:
            await registry.submit(caller.user_id, caller.session_id, turn, outbox, caller.scope)
        except (Overloaded, SessionClosed, TooManySessions) as exc:
            _log.warning("session %s did not take an exchange: %s", caller.session_id, exc)


Handler = Callable[[Request, str], Awaitable[Response]]


def endpoint(shape: Api, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A drop-in route: the user from the bearer key (401 without a valid one), the
    user's request budget, and every failure in ``shape``'s own error shape."""

    async def route(request: Request) -> Response:
        settings: Settings = request.state.settings
        user_id = user_for_token(settings, bearer(request.headers.get("authorization")))
        if user_id is None:
            message = "send Authorization: Bearer <api key>"
            return error_response(shape, 401, message, "invalid_request_error")
        budgets: UserBudgets = request.state.budgets
        delay = budgets.admit(user_id, 0)
        if delay is None:
            message = "too many requests of this user; slow down"
            return error_response(shape, 429, message, "rate_limit_error")
        await anyio.sleep(delay)
        request.state.user_id = user_id
        request.state.registry.preload_embedder_soon()
        try:
            async with serving(request, user_id):
                return await handler(request, user_id)
        except ApiError as exc:
            return error_response(shape, exc.status, exc.message, exc.kind)
        except Translation as exc:
            return error_response(shape, 400, str(exc), "invalid_request_error")
        except LlmFailure as exc:
            return error_response(shape, 502, f"the model server failed: {exc}", "server_error")
        except msgspec.DecodeError as exc:
            message = f"the model server sent what is not its protocol: {exc}"
            return error_response(shape, 502, message, "server_error")
        except NotHome as exc:
            answer = error_response(shape, 421, str(exc), "invalid_request_error")
            answer.headers["Retry-After"] = str(max(1, round(exc.retry_after)))
            return answer

    return route


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object; ``ApiError`` for bad JSON, a nesting past the bound,
    a body over 32 MiB, or anything but an object."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_BODY:
            raise ApiError(413, f"request body larger than {_MAX_BODY >> 20} MiB")
    try:
        check_depth(bytes(body))
        found = msgspec.json.decode(body)
    except (msgspec.DecodeError, ValueError) as exc:
        raise ApiError(400, f"invalid JSON: {exc}") from None
    if not isinstance(found, dict):
        raise ApiError(400, "the body must be a JSON object")
    return found


def messages_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The body's ``messages``, each an object with a text ``role``; ``ApiError`` if not."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages
    ):
        raise ApiError(400, "messages must be a list of objects with a role")
    return messages


async def relay(
    request: Request,
    method: str,
    path: str,
    body: bytes | None,
) -> tuple[httpx.Response, AsyncExitStack]:
    """Send a request upstream and return its answer, body unread, once it says 200,
    with the stack that closes it; ``ApiError`` for any other answer."""
    upstream: Upstream = request.state.upstream
    stack = AsyncExitStack()
    try:
        response = await stack.enter_async_context(upstream.open(method, path, body))
        if response.status_code != 200:
            raise refused(response.status_code, await upstream.read(response))
    except BaseException:
        await stack.aclose()
        raise
    return response, stack


def streamed(
    parts: AsyncIterator[bytes], stack: AsyncExitStack, media_type: str
) -> StreamingResponse:
    """Stream ``parts``; the upstream answer closes when they end, or when the client
    leaves (which cancels the generation upstream)."""

    async def body() -> AsyncIterator[bytes]:
        async with stack:
            async for part in parts:
                yield part

    headers = {"Cache-Control": "no-cache"}
    return StreamingResponse(
        body(), media_type=media_type, headers=headers, background=BackgroundTask(stack.aclose)
    )


#: What one upstream event becomes: the bytes to send, the text it says, and whether it
#: ends the answer.
Step = Callable[[Any], tuple[list[bytes], str, bool]]


async def relayed(
    request: Request,
    caller: Caller,
    said: str,
    meta: dict[str, Any],
    events: AsyncIterator[Any],
    step: Step,
    failure: Callable[[str], bytes],
) -> AsyncIterator[bytes]:
    """Relay an answer's ``events`` as ``step`` turns them into bytes, and hand the
    exchange to the session once the answer ends (before its last bytes go out, so the
    client's next request comes after it). An upstream failure mid-answer is sent as
    ``failure(message)``; an answer cut short (a failure, or the client leaving) is
    archived as far as it went, marked ``interrupted``."""
    parts: list[str] = []
    learned = False
    try:
        async for event in events:
            if learned:
                continue  # read to the end: the connection goes back to the pool
            out, text, done = step(event)
            parts.append(text)
            if done:
                learned = True
                await learn(request, caller, said, "".join(parts), meta)
            for piece in out:
                yield piece
    except LlmFailure as exc:
        yield failure(f"the model server failed: {exc}")
    finally:
        if not learned:
            await learn(request, caller, said, "".join(parts), meta | {"interrupted": True})


async def decoded(upstream: Upstream, lines: AsyncIterator[str]) -> AsyncIterator[Any]:
    """Each non-empty line (or SSE data) decoded from JSON; ``[DONE]`` as itself."""
    async for line in lines:
        if not line.strip():
            continue
        if line == "[DONE]":
            yield line
            continue
        try:
            yield msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            raise LlmError(f"{upstream.name} sent what is not its protocol: {exc}") from None
