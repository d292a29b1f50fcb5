"""REST for seed 002's episodes stored directly: store, list, get, forget, delete, cleanup.

``POST /memory/episodes`` is ``memory_store_episode`` (``scope`` is the seed's
``butler``), ``GET /memory/episodes/{id}`` ``memory_get`` (counts a reference), ``POST
.../forget`` ``memory_forget`` (expires now), ``POST /memory/episodes/cleanup``
``memory_run_episode_cleanup``. Archived chat turns are episodes too, listed and
searched as turns (``/memory/long-term``, ``/memory/search``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from actors.episodes import EpisodeKeeper
from actors.mailbox import SessionDeps
from schemas.records import Episode
from schemas.transfer import MAX_TEXT
from server.http import BadRequest, authenticated, decode_body, error, json
from server.ws import SESSION_ID

__all__ = ["routes"]

_EPISODE_ID = re.compile(r"^ep_[0-9a-f]{16}\Z")


class NewEpisode(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TEXT)]
    scope: str
    session_id: str | None = None
    importance: Annotated[float, msgspec.Meta(ge=0, le=10)] = 5.0


class CleanupRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    max_entries: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)] = 10_000


def episode_view(episode: Episode) -> dict[str, Any]:
    item: dict[str, Any] = msgspec.to_builtins(episode)
    del item["user_id"]
    return item


def _keeper(request: Request) -> EpisodeKeeper:
    deps: SessionDeps = request.state.deps
    return deps.episodes


def _scope(raw: str | None, name: str = "scope") -> str | None:
    if raw is not None and not SESSION_ID.match(raw):
        raise BadRequest(f"{name} must be 1-64 of A-Z a-z 0-9 _ . @ -")
    return raw


def _episode_id(request: Request) -> str | None:
    episode_id: str = request.path_params["episode_id"]
    return episode_id if _EPISODE_ID.match(episode_id) else None


def _answer(episode: Episode | None) -> Response:
    if episode is None:
        return error(404, "not_found", "no such episode")
    return json(episode_view(episode))


async def create_episode(request: Request, user_id: str) -> Response:
    body = await decode_body(request, NewEpisode)
    try:
        episode = await _keeper(request).store_episode(
            user_id,
            body.content,
            _scope(body.scope) or "global",
            session_id=_scope(body.session_id, "session_id"),
            importance=body.importance,
        )
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    return json(episode_view(episode), 201)


async def list_episodes(request: Request, user_id: str) -> Response:
    scope = _scope(request.query_params.get("scope"))
    found = await _keeper(request).list_episodes(user_id, scope=scope)
    return json({"episodes": [episode_view(e) for e in found]})


async def get_episode(request: Request, user_id: str) -> Response:
    episode_id = _episode_id(request)
    return _answer(await _keeper(request).get(user_id, episode_id) if episode_id else None)


async def forget_episode(request: Request, user_id: str) -> Response:
    episode_id = _episode_id(request)
    return _answer(await _keeper(request).forget(user_id, episode_id) if episode_id else None)


class ConsolidationRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    dry_run: bool = False


async def run_consolidation(request: Request, user_id: str) -> Response:
    """Seed 002's ``memory_run_consolidation`` of this user's pending episodes."""
    body = (
        await decode_body(request, ConsolidationRequest)
        if await request.body()
        else ConsolidationRequest()
    )
    deps: SessionDeps = request.state.deps
    report = await deps.consolidator.run(user_id, dry_run=body.dry_run)
    return json(report.view())


async def run_cleanup(request: Request, user_id: str) -> Response:
    body = await decode_body(request, CleanupRequest) if await request.body() else CleanupRequest()
    return json(await _keeper(request).cleanup(user_id, body.max_entries))


routes = [
    Route("/memory/episodes", authenticated(create_episode), methods=["POST"]),
    Route("/memory/episodes", authenticated(list_episodes), methods=["GET"]),
    Route("/memory/episodes/cleanup", authenticated(run_cleanup), methods=["POST"]),
    Route("/memory/consolidation", authenticated(run_consolidation), methods=["POST"]),
    Route("/memory/episodes/{episode_id}", authenticated(get_episode), methods=["GET"]),
    Route("/memory/episodes/{episode_id}/forget", authenticated(forget_episode), methods=["POST"]),
]
