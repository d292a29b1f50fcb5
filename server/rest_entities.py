"""REST for seed 002's entities: create, list, get, update, resolve.

Shaped like seed 002's tools: ``POST /memory/entities`` is ``entity_create``,
``GET /memory/entities/{id}`` ``entity_get``, ``PATCH`` ``entity_update``, ``POST
/memory/entities/resolve`` ``entity_resolve`` (the user comes from the key, never from
a ``tenant_id``). A name an entity of the same type already has is a 409.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from actors.entities import EntityKeeper
from actors.mailbox import SessionDeps
from schemas.records import Entity
from server.http import BadRequest, authenticated, decode_body, error, json

__all__ = ["routes"]

_ENTITY_ID = re.compile(r"^ent_[0-9a-f]{8}\Z")
_Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
_Aliases = Annotated[list[_Name], msgspec.Meta(max_length=100)]


class NewEntity(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    canonical_name: _Name
    entity_type: str
    aliases: _Aliases = []
    metadata: dict[str, Any] = {}


class EntityPatch(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    canonical_name: _Name | None = None
    aliases: _Aliases | None = None
    metadata: dict[str, Any] | None = None


_EntityId = Annotated[str, msgspec.Meta(pattern=r"^ent_[0-9a-f]{8}$")]


class Merge(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    source_entity_id: _EntityId
    target_entity_id: _EntityId


class Resolve(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: _Name
    entity_type: str | None = None
    context_hints: dict[str, Any] | None = None
    enable_fuzzy: bool = False


def entity_view(entity: Entity) -> dict[str, Any]:
    """An entity as clients see it: seed 002's fields (``metadata``), not the user."""
    return {
        "id": entity.id,
        "canonical_name": entity.canonical_name,
        "entity_type": entity.entity_type,
        "aliases": list(entity.aliases),
        "metadata": entity.meta,
        "created_at": msgspec.to_builtins(entity.created_at),
        "updated_at": msgspec.to_builtins(entity.updated_at),
    }


def _keeper(request: Request) -> EntityKeeper:
    deps: SessionDeps = request.state.deps
    return deps.entities


def _entity_id(request: Request) -> str | None:
    entity_id: str = request.path_params["entity_id"]
    return entity_id if _ENTITY_ID.match(entity_id) else None


async def create_entity(request: Request, user_id: str) -> Response:
    body = await decode_body(request, NewEntity)
    try:
        entity = await _keeper(request).create(
            user_id,
            body.canonical_name,
            body.entity_type,
            aliases=body.aliases,
            metadata=body.metadata,
        )
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    return json(entity_view(entity), 201)


async def list_entities(request: Request, user_id: str) -> Response:
    found = await _keeper(request).list_entities(user_id)
    return json({"entities": [entity_view(e) for e in found]})


async def get_entity(request: Request, user_id: str) -> Response:
    entity_id = _entity_id(request)
    entity = await _keeper(request).get(user_id, entity_id) if entity_id else None
    if entity is None:
        return error(404, "not_found", "no such entity")
    return json(entity_view(entity))


async def update_entity(request: Request, user_id: str) -> Response:
    body = await decode_body(request, EntityPatch)
    entity_id = _entity_id(request)
    try:
        entity = (
            await _keeper(request).update(
                user_id,
                entity_id,
                canonical_name=body.canonical_name,
                aliases=body.aliases,
                metadata=body.metadata,
            )
            if entity_id
            else None
        )
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    if entity is None:
        return error(404, "not_found", "no such entity")
    return json(entity_view(entity))


async def merge_entities(request: Request, user_id: str) -> Response:
    body = await decode_body(request, Merge)
    merged = await _keeper(request).merge(user_id, body.source_entity_id, body.target_entity_id)
    if merged is None:
        return error(404, "not_found", "no such source or target entity")
    return json({"target": entity_view(merged.target), **merged.payload()})


async def resolve_entity(request: Request, user_id: str) -> Response:
    body = await decode_body(request, Resolve)
    try:
        found = await _keeper(request).resolve(
            user_id,
            body.name,
            entity_type=body.entity_type,
            hints=body.context_hints,
            enable_fuzzy=body.enable_fuzzy,
        )
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    return json({"candidates": [r.view() for r in found]})


routes = [
    Route("/memory/entities", authenticated(create_entity), methods=["POST"]),
    Route("/memory/entities", authenticated(list_entities), methods=["GET"]),
    Route("/memory/entities/resolve", authenticated(resolve_entity), methods=["POST"]),
    Route("/memory/entities/merge", authenticated(merge_entities), methods=["POST"]),
    Route("/memory/entities/{entity_id}", authenticated(get_entity), methods=["GET"]),
    Route("/memory/entities/{entity_id}", authenticated(update_entity), methods=["PATCH"]),
]
