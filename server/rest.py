"""REST: seed 001's ``/memory/...`` endpoints and ``/healthz``. JSON in, JSON out.

Errors are ``{"error": {"code", "message"}}``. Another user's resources answer
404 exactly as if they did not exist.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from actors.errors import ArchiveUnavailable
from actors.ports import Store
from actors.registry import SessionRegistry
from actors.writer import ArchiveWriter
from schemas.records import ArchivedMessage
from schemas.settings import Settings
from server.auth import bearer, user_for_token
from server.ws import SESSION_ID

__all__ = ["error", "json", "routes"]

_encoder = msgspec.json.Encoder()
_MESSAGE_ID = re.compile(r"^msg_[0-9a-f]{16}$")
_MAX_LIMIT = 200

Handler = Callable[[Request, str], Awaitable[Response]]


def json(body: Any, status: int = 200) -> Response:
    return Response(_encoder.encode(body), status, media_type="application/json")


def error(status: int, code: str, message: str) -> Response:
    return json({"error": {"code": code, "message": message}}, status)


def _authenticated(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        settings: Settings = request.state.settings
        user_id = user_for_token(settings, bearer(request.headers.get("authorization")))
        if user_id is None:
            return error(401, "unauthorized", "send Authorization: Bearer <api key>")
        try:
            return await handler(request, user_id)
        except ArchiveUnavailable as exc:
            return error(503, exc.code, str(exc))

    return endpoint


def _item(message: ArchivedMessage) -> dict[str, Any]:
    item: dict[str, Any] = msgspec.to_builtins(message)
    del item["user_id"]
    return {"kind": "message", **item}


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise _BadRequest(f"{name} must be an integer") from None
    if not low <= value <= high:
        raise _BadRequest(f"{name} must be between {low} and {high}")
    return value


class _BadRequest(Exception):
    pass


async def healthz(request: Request) -> Response:
    registry: SessionRegistry = request.state.registry
    return json({"status": "ok", "live_sessions": len(registry.live())})


async def list_long_term(request: Request, user_id: str) -> Response:
    try:
        limit = _int_param(request, "limit", 50, 1, _MAX_LIMIT)
        offset = _int_param(request, "offset", 0, 0, 2**31)
    except _BadRequest as exc:
        return error(400, "bad_request", str(exc))
    store: Store = request.state.store
    items, total = await store.list_messages(user_id, limit=limit, offset=offset)
    return json(
        {"items": [_item(m) for m in items], "total": total, "limit": limit, "offset": offset}
    )


def _memory_id(request: Request) -> str | None:
    memory_id: str = request.path_params["memory_id"]
    return memory_id if _MESSAGE_ID.match(memory_id) else None


async def get_long_term(request: Request, user_id: str) -> Response:
    memory_id = _memory_id(request)
    store: Store = request.state.store
    found = await store.get_message(user_id, memory_id) if memory_id else None
    if found is None:
        return error(404, "not_found", "no such memory")
    return json(_item(found))


async def delete_long_term(request: Request, user_id: str) -> Response:
    memory_id = _memory_id(request)
    if memory_id is None:
        return error(404, "not_found", "no such memory")
    store: Store = request.state.store
    writer: ArchiveWriter = request.state.writer
    if not await writer.call(lambda: store.delete_message(user_id, memory_id)):
        return error(404, "not_found", "no such memory")
    return json({"deleted": memory_id})


async def clear_long_term(request: Request, user_id: str) -> Response:
    store: Store = request.state.store
    writer: ArchiveWriter = request.state.writer
    count = await writer.call(lambda: store.clear_messages(user_id))
    return json({"deleted": count})


async def get_working(request: Request, user_id: str) -> Response:
    session_id: str = request.path_params["session_id"]
    if not SESSION_ID.match(session_id):
        return error(404, "not_found", "no such session")
    registry: SessionRegistry = request.state.registry
    actor = registry.get(user_id, session_id)
    memory = actor.memory if actor is not None else None
    if memory is None and actor is None:
        store: Store = request.state.store
        memory = await store.get_working(user_id, session_id)
    if memory is None:
        return error(404, "not_found", "no working memory for this session")
    return json(memory)


routes = [
    Route("/healthz", healthz, methods=["GET"]),
    Route("/memory/long-term", _authenticated(list_long_term), methods=["GET"]),
    Route("/memory/long-term", _authenticated(clear_long_term), methods=["DELETE"]),
    Route("/memory/long-term/{memory_id}", _authenticated(get_long_term), methods=["GET"]),
    Route("/memory/long-term/{memory_id}", _authenticated(delete_long_term), methods=["DELETE"]),
    Route("/memory/working/{session_id}", _authenticated(get_working), methods=["GET"]),
]
