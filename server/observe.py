"""Watching the server live: ``GET /actors``, ``GET /actors/{session_id}``, ``/ws/tail``,
``GET /metrics``. An admin key sees everything, a user key only that user's own."""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from actors.channels import receive
from actors.events import KINDS, Event, EventBus, RecentEvents
from actors.registry import SessionRegistry
from actors.session import SessionActor
from schemas.settings import Settings
from server.auth import Viewer, bearer, socket_key, viewer_for_token
from server.http import BadRequest, error, int_param, json
from server.metrics import CONTENT_TYPE_LATEST, Metrics
from server.ws import KEY_NEEDED, SESSION_ID, accept, refuse

__all__ = ["routes"]

_FAMILIES = frozenset(kind.split(".", 1)[0] for kind in KINDS)
_TAIL_BUFFER = 1000
_encode = msgspec.json.Encoder().encode


def _viewer(request: Request | WebSocket) -> Viewer | None:
    """Who asks: by ``Authorization`` over HTTP, by ``server.auth.socket_key`` on the tail."""
    settings: Settings = request.state.settings
    if isinstance(request, WebSocket):
        return viewer_for_token(settings, socket_key(request))
    return viewer_for_token(settings, bearer(request.headers.get("authorization")))


def _actor_view(actor: SessionActor, settings: Settings) -> dict[str, Any]:
    idle = max(anyio.current_time() - actor.last_active, 0.0)
    return {
        "session_id": actor.session_id,
        "user_id": actor.user_id,
        "scope": actor.scope,
        "turn_count": actor.turn_count,
        "state": actor.state,
        "idle_seconds": round(idle, 3),
        "expires_in": round(max(settings.idle_timeout - idle, 0.0), 3),
        "mailbox_depth": actor.mailbox_depth,
    }


def _visible(request: Request, viewer: Viewer) -> list[SessionActor]:
    registry: SessionRegistry = request.state.registry
    wanted = request.query_params.get("user")
    actors = [a for a in registry.live() if viewer.may_see(a.user_id)]
    if wanted is not None:
        actors = [a for a in actors if a.user_id == wanted]
    return sorted(actors, key=lambda a: (a.user_id, a.session_id))


async def list_actors(request: Request) -> Response:
    viewer = _viewer(request)
    if viewer is None:
        return error(401, "unauthorized", "send Authorization: Bearer <api or admin key>")
    try:
        limit = int_param(request, "limit", 50, 1, 1000)
        offset = int_param(request, "offset", 0, 0, 10**9)
    except BadRequest as exc:
        return error(400, "bad_request", str(exc))
    actors = _visible(request, viewer)
    settings: Settings = request.state.settings
    items = [_actor_view(a, settings) for a in actors[offset : offset + limit]]
    return json({"items": items, "total": len(actors), "limit": limit, "offset": offset})


async def get_actor(request: Request) -> Response:
    viewer = _viewer(request)
    if viewer is None:
        return error(401, "unauthorized", "send Authorization: Bearer <api or admin key>")
    session_id = request.path_params["session_id"]
    found = [a for a in _visible(request, viewer) if a.session_id == session_id]
    if not found:
        return error(404, "not_found", "no such live session")
    if len(found) > 1:
        return error(400, "bad_request", "several users have this session id: add ?user=")
    actor = found[0]
    recent: RecentEvents = request.state.recent
    settings: Settings = request.state.settings
    body = {
        **_actor_view(actor, settings),
        "working_memory": msgspec.to_builtins(actor.memory),
        "recent_events": msgspec.to_builtins(recent.of(actor.user_id, actor.session_id)),
    }
    return json(body)


async def metrics(request: Request) -> Response:
    viewer = _viewer(request)
    if viewer is None or not viewer.admin:
        return error(401, "unauthorized", "metrics need an admin key (MNEMO_ADMIN_KEYS)")
    found: Metrics = request.state.metrics
    return Response(found.render(), media_type=CONTENT_TYPE_LATEST)


def _tail_filters(websocket: WebSocket, viewer: Viewer) -> tuple[str | None, str | None, list[str]]:
    """(session, user, kinds) from the query; raises ``BadRequest``."""
    params = websocket.query_params
    session = params.get("session")
    if session is not None and not SESSION_ID.match(session):
        raise BadRequest("session: 1-128 of A-Z a-z 0-9 _ . : -")
    user = params.get("user")
    if not viewer.admin:
        if user is not None and user != viewer.user_id:
            raise BadRequest("a user key tails only its own user")
        user = viewer.user_id
    kinds = [k for raw in params.getlist("kind") for k in raw.split(",") if k]
    unknown = [k for k in kinds if k not in KINDS and k not in _FAMILIES]
    if unknown:
        raise BadRequest(f"unknown kind {unknown[0]!r}; families: {', '.join(sorted(_FAMILIES))}")
    return session, user, kinds


async def tail(websocket: WebSocket) -> None:
    """Events as they happen, one JSON text frame each, until the client leaves. A client
    that reads too slowly misses events and gets a ``tail.skipped`` marker instead."""
    viewer = _viewer(websocket)
    if viewer is None:
        await refuse(websocket, 401, "unauthorized", KEY_NEEDED)
        return
    try:
        session, user, kinds = _tail_filters(websocket, viewer)
    except BadRequest as exc:
        await refuse(websocket, 400, "bad_request", str(exc))
        return
    settings: Settings = websocket.state.settings
    tails: Counter[str] = websocket.state.tails
    counted = None if viewer.admin else viewer.user_id
    if counted is not None and tails[counted] >= settings.max_tails_per_user:
        message = f"this user already has {settings.max_tails_per_user} live tails"
        await refuse(websocket, 429, "too_many_tails", message)
        return
    bus: EventBus = websocket.state.events
    if counted is not None:
        tails[counted] += 1
    try:
        await accept(websocket)
        with bus.subscribe(
            buffer=_TAIL_BUFFER, session_id=session, user_id=user, kinds=kinds
        ) as subscription:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_send_events, websocket, subscription.events)
                try:
                    while (await websocket.receive())["type"] != "websocket.disconnect":
                        pass  # the tail takes no input
                finally:
                    tg.cancel_scope.cancel()
    finally:
        if counted is not None:
            tails[counted] -= 1
            if not tails[counted]:
                del tails[counted]


async def _send_events(websocket: WebSocket, events: MemoryObjectReceiveStream[Event]) -> None:
    try:
        while True:
            event = await receive(events)
            await websocket.send_text(_encode(event).decode())
    except (anyio.EndOfStream, WebSocketDisconnect, OSError, RuntimeError):
        pass


routes = [
    Route("/actors", list_actors),
    Route("/actors/{session_id}", get_actor),
    Route("/metrics", metrics),
    WebSocketRoute("/ws/tail", tail),
]
