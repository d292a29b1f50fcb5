"""REST for seed 002's provenance links: ``create_link`` and ``get_links``.

Memories are named by type and id: ``fact`` (``fact_…``), ``rule`` (``rule_…``),
``episode`` (an archived message, ``msg_…``). A link needs both memories to exist;
creating one that exists is no error (``created`` false).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from actors.links import LinkKeeper
from actors.mailbox import SessionDeps
from schemas.records import MemoryLink
from server.http import BadRequest, authenticated, decode_body, error, json

__all__ = ["routes"]

#: A memory's id: ``fact_``/``rule_`` + 8 hex digits, ``msg_``/``ep_`` + 16.
_ID = r"^(?:fact_[0-9a-f]{8}|rule_[0-9a-f]{8}|msg_[0-9a-f]{16}|ep_[0-9a-f]{16})$"
_Id = Annotated[str, msgspec.Meta(pattern=_ID)]


class NewLink(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    source_type: str
    source_id: _Id
    target_type: str
    target_id: _Id
    relation: str


def link_view(link: MemoryLink) -> dict[str, Any]:
    item: dict[str, Any] = msgspec.to_builtins(link)
    del item["user_id"]
    return item


def _keeper(request: Request) -> LinkKeeper:
    deps: SessionDeps = request.state.deps
    return deps.links


async def create_link(request: Request, user_id: str) -> Response:
    body = await decode_body(request, NewLink)
    try:
        made = await _keeper(request).create(
            user_id,
            body.source_type,
            body.source_id,
            body.target_type,
            body.target_id,
            body.relation,
        )
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    if made is None:
        return error(404, "not_found", "no such source or target memory")
    link, created = made
    return json({"link": link_view(link), "created": created}, 201 if created else 200)


async def list_links(request: Request, user_id: str) -> Response:
    kind = request.query_params.get("type")
    item_id = request.query_params.get("id")
    if kind is None or item_id is None:
        raise BadRequest("type and id are required")
    if not re.match(_ID, item_id):
        raise BadRequest("id must be a fact_, rule_, msg_ or ep_ id")
    direction = request.query_params.get("direction", "both")
    try:
        found = await _keeper(request).links(user_id, kind, item_id, direction=direction)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    return json({"links": [link_view(k) for k in found]})


routes = [
    Route("/memory/links", authenticated(create_link), methods=["POST"]),
    Route("/memory/links", authenticated(list_links), methods=["GET"]),
]
