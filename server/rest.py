"""REST: seed 001's ``/memory/...`` endpoints (facts and archived messages) and ``/healthz``.

Errors are ``{"error": {"code", "message"}}``. Another user's resources answer
404 exactly as if they did not exist.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Annotated, Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from actors.keeper import FactEdit, FactKeeper, Stated, changes_frame, fact_view
from actors.mailbox import SessionDeps
from actors.registry import SessionRegistry
from actors.writer import ArchiveWriter
from schemas.records import ArchivedMessage
from schemas.transfer import MAX_TEXT
from server import (
    rest_apps,
    rest_entities,
    rest_episodes,
    rest_export,
    rest_import,
    rest_links,
    rest_rules,
    rest_search,
    rest_stats,
)
from server.cluster.ownership import Ownership
from server.http import BadRequest, authenticated, decode_body, error, int_param, json
from server.ws import SESSION_ID

__all__ = ["routes", "turn_view"]

_MESSAGE_ID = re.compile(r"^msg_[0-9a-f]{16}\Z")
_FACT_ID = re.compile(r"^fact_[0-9a-f]{8}\Z")
_MAX_LIMIT = 200
_KINDS = ("all", "facts", "turns")
#: Deprecated names still accepted for one release: ``kind=messages`` is ``kind=turns``.
_KIND_ALIASES = {"messages": "turns"}


_Content = Annotated[str, msgspec.Meta(max_length=MAX_TEXT)]


_Word = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class NewFact(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    content: _Content
    category: str | None = None
    pinned: bool = False
    scope: str = "global"
    #: Seed 002's ``store_fact``: its key, importance, permanence, tags and entity.
    subject: _Word | None = None
    predicate: _Word | None = None
    importance: Annotated[float, msgspec.Meta(ge=0, le=10)] = 5.0
    permanence: str | None = None
    tags: Annotated[list[_Word], msgspec.Meta(max_length=32)] = []
    entity_id: Annotated[str, msgspec.Meta(pattern=r"^ent_[0-9a-f]{8}$")] | None = None


class FactPatch(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    content: _Content | None = None
    category: str | None = None
    confidence: float | None = None
    pinned: bool | None = None


def turn_view(message: ArchivedMessage) -> dict[str, Any]:
    """An archived turn as clients see it (``kind: "turn"``; its search text stays inside)."""
    item: dict[str, Any] = msgspec.to_builtins(message)
    del item["user_id"], item["context"], item["superseded_by"]
    return {"kind": "turn", **item}


def _deps(request: Request) -> SessionDeps:
    deps: SessionDeps = request.state.deps
    return deps


def _keeper(request: Request) -> FactKeeper:
    return _deps(request).learning.keeper


async def healthz(request: Request) -> Response:
    """Liveness plus the tallies an operator checks first (no credentials needed, no user data)."""
    registry: SessionRegistry = request.state.registry
    learning = _deps(request).learning
    body: dict[str, Any] = {
        "status": "ok",
        "live_sessions": len(registry.live()),
        "extraction": dataclasses.asdict(learning.extractor.stats),
    }
    cluster: Ownership | None = request.state.cluster
    if cluster is None:
        return json(body)
    body["cluster"] = {
        "node": cluster.node,
        "shards": len(cluster.held()),
        "alive": cluster.alive(),
    }
    if not cluster.in_touch():  # cannot write its heartbeat: serves nobody, so not ready
        body["status"] = "cut_off"
        return json(body, 503)
    return json(body)


async def list_categories(request: Request, user_id: str) -> Response:
    """The fact categories of the configured taxonomy, first in context order first: what a
    fact's ``category`` may be (the Memory Panel groups and recategorizes by them)."""
    categories = sorted(_deps(request).settings.categories, key=lambda c: c.priority)
    return json(
        {
            "categories": [
                {"name": c.name, "heading": c.heading, "priority": c.priority} for c in categories
            ]
        }
    )


async def list_long_term(request: Request, user_id: str) -> Response:
    """Facts and archived turns, newest first; ``kind`` picks one of them."""
    limit = int_param(request, "limit", 50, 1, _MAX_LIMIT)
    offset = int_param(request, "offset", 0, 0, 2**31)
    raw_kind = request.query_params.get("kind", "all")
    kind = _KIND_ALIASES.get(raw_kind, raw_kind)
    if kind not in _KINDS:
        raise BadRequest(f"kind must be one of {', '.join(_KINDS)}")
    validity = request.query_params.get("validity", "active")
    if validity not in ("active", "superseded", "expired", "retracted", "any"):
        raise BadRequest("validity must be active, superseded, expired, retracted or any")
    store = _deps(request).store
    rows: list[tuple[datetime, str, dict[str, Any]]] = []
    total = 0
    window = offset + limit  # the first offset+limit of each kind decide the merged page
    if kind in ("all", "facts"):
        facts, count = await store.facts.list_facts(
            user_id, limit=window, offset=0, validity=None if validity == "any" else validity
        )
        total += count
        rows += [(f.created_at, f.id, msgspec.to_builtins(fact_view(f))) for f in facts]
    if kind in ("all", "turns"):
        messages, count = await store.list_messages(user_id, limit=window, offset=0)
        total += count
        rows += [(m.at, m.id, turn_view(m)) for m in messages]
    rows.sort(key=lambda r: (-r[0].timestamp(), r[1]))
    items = [r[2] for r in rows[offset:window]]
    return json({"items": items, "total": total, "limit": limit, "offset": offset})


async def get_long_term(request: Request, user_id: str) -> Response:
    memory_id: str = request.path_params["memory_id"]
    store = _deps(request).store
    if _FACT_ID.match(memory_id):
        found = await store.facts.get_facts(user_id, [memory_id])
        if found:
            return json(fact_view(found[0].fact))
    elif _MESSAGE_ID.match(memory_id):
        message = await store.get_message(user_id, memory_id)
        if message is not None:
            return json(turn_view(message))
    return error(404, "not_found", "no such memory")


async def create_fact(request: Request, user_id: str) -> Response:
    """Add a fact by hand; a duplicate reinforces the existing fact instead (201 either way)."""
    body = await decode_body(request, NewFact)
    if not SESSION_ID.match(body.scope):
        raise BadRequest("scope: 1-128 of A-Z a-z 0-9 _ . : -")
    try:
        changes = await _keeper(request).remember(
            user_id,
            body.content,
            category=body.category,
            pinned=body.pinned,
            session_id=None,
            scope=body.scope,
            stated=Stated(
                subject=body.subject,
                predicate=body.predicate,
                importance=body.importance,
                permanence=body.permanence,
                tags=body.tags,
                entity_id=body.entity_id,
            ),
        )
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    frame = changes_frame(changes, "rest")
    assert frame is not None
    result = msgspec.to_builtins(frame)
    del result["type"], result["id"]
    return json(result, 201)


async def patch_fact(request: Request, user_id: str) -> Response:
    memory_id: str = request.path_params["memory_id"]
    if not _FACT_ID.match(memory_id):
        return error(404, "not_found", "no such fact")
    body = await decode_body(request, FactPatch)
    edit = FactEdit(body.content, body.category, body.confidence, body.pinned)
    try:
        fact = await _keeper(request).edit(user_id, memory_id, edit)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    if fact is None:
        return error(404, "not_found", "no such fact")
    return json(fact_view(fact))


async def confirm_fact(request: Request, user_id: str) -> Response:
    """Seed 002's ``memory_confirm`` of a fact: its decay starts again. Archived messages
    (episodes) do not decay: confirming one is a 400."""
    memory_id: str = request.path_params["memory_id"]
    if _MESSAGE_ID.match(memory_id):
        raise BadRequest("an episode (archived message) cannot be confirmed: it does not decay")
    fact = await _keeper(request).confirm(user_id, memory_id) if _FACT_ID.match(memory_id) else None
    return json(fact_view(fact)) if fact else error(404, "not_found", "no such fact")


async def forget_fact(request: Request, user_id: str) -> Response:
    """Seed 002's ``memory_forget`` of a fact: retracted, kept as history."""
    memory_id: str = request.path_params["memory_id"]
    fact = await _keeper(request).forget(user_id, memory_id) if _FACT_ID.match(memory_id) else None
    return json(fact_view(fact)) if fact else error(404, "not_found", "no such fact")


async def delete_long_term(request: Request, user_id: str) -> Response:
    memory_id: str = request.path_params["memory_id"]
    deps = _deps(request)
    deleted = False
    if _FACT_ID.match(memory_id):
        deleted = await deps.learning.keeper.delete(user_id, memory_id)
    elif _MESSAGE_ID.match(memory_id):
        # Not in the archive writer's task: its purge must not hold up anyone's acks. The
        # store serializes it with the journal's moves into the table.
        deleted = await deps.store.delete_message(user_id, memory_id)
        if deleted:
            links = deps.store.links
            await deps.fact_writer.call(
                lambda: links.delete_links_of(user_id, "episode", [memory_id])
            )
    if not deleted:
        return error(404, "not_found", "no such memory")
    return json({"deleted": memory_id})


async def clear_long_term(request: Request, user_id: str) -> Response:
    """Everything long-term of this user: facts, messages, episodes, app notes, rules, entities,
    profile, and
    the log of their changes. Working memory of live sessions stays (seed 001)."""
    deps = _deps(request)
    store = deps.store
    writer: ArchiveWriter = deps.writer

    async def clear_learned() -> int:
        deps.learning.notes.forget(user_id)  # nor a note or profile still being written
        async with deps.learning.keeper.lane:  # no group commit of facts meanwhile
            count = await store.facts.clear_facts(user_id)
        count += await store.facts.clear_notes(user_id)
        count += await store.rules.clear_rules(user_id)
        count += await store.entities.clear_entities(user_id)
        await store.links.clear_links(user_id)
        count += await store.episodes.clear_episodes(user_id)
        await store.events.clear_events(user_id)
        await store.facts.delete_profile(user_id)
        return count

    count = await store.clear_messages(user_id)  # beside the writer, as a delete
    count += await deps.fact_writer.call(clear_learned)
    await writer.purge_working()  # what ended sessions held stays in no old version
    return json({"deleted": count})


_EVENT_TYPE = re.compile(r"^[a-z_]{1,64}\Z")


async def list_events(request: Request, user_id: str) -> Response:
    """The audit log of this user's memory changes, newest first: ``limit`` 1-500, ``type``
    a comma-separated list of event types to keep."""
    limit = int_param(request, "limit", 50, 1, 500)
    types = [t for t in request.query_params.get("type", "").split(",") if t]
    if not all(_EVENT_TYPE.match(t) for t in types):
        raise BadRequest("type must be event types (a-z and _), comma-separated")
    found = await _deps(request).store.events.events_of(user_id, limit=limit, types=types)
    items = [msgspec.to_builtins(e) for e in found]
    for item in items:
        del item["user_id"]
    return json({"events": items})


async def get_working(request: Request, user_id: str) -> Response:
    session_id: str = request.path_params["session_id"]
    if not SESSION_ID.match(session_id):
        return error(404, "not_found", "no such session")
    registry: SessionRegistry = request.state.registry
    actor = registry.get(user_id, session_id)
    memory = actor.memory if actor is not None else None
    if memory is None and actor is None:
        memory = await _deps(request).store.get_working(user_id, session_id)
    if memory is None:
        return error(404, "not_found", "no working memory for this session")
    return json(memory)


routes = [
    Route("/healthz", healthz, methods=["GET"]),
    Route("/memory/long-term", authenticated(list_long_term), methods=["GET"]),
    Route("/memory/long-term", authenticated(create_fact), methods=["POST"]),
    Route("/memory/long-term", authenticated(clear_long_term), methods=["DELETE"]),
    Route("/memory/long-term/{memory_id}", authenticated(get_long_term), methods=["GET"]),
    Route("/memory/long-term/{memory_id}", authenticated(patch_fact), methods=["PATCH"]),
    Route("/memory/long-term/{memory_id}", authenticated(delete_long_term), methods=["DELETE"]),
    Route("/memory/long-term/{memory_id}/confirm", authenticated(confirm_fact), methods=["POST"]),
    Route("/memory/long-term/{memory_id}/forget", authenticated(forget_fact), methods=["POST"]),
    Route("/memory/working/{session_id}", authenticated(get_working), methods=["GET"]),
    Route("/memory/events", authenticated(list_events), methods=["GET"]),
    Route("/memory/categories", authenticated(list_categories), methods=["GET"]),
    *rest_apps.routes,
    *rest_rules.routes,
    *rest_entities.routes,
    *rest_episodes.routes,
    *rest_links.routes,
    *rest_stats.routes,
    *rest_search.routes,
    *rest_export.routes,
    *rest_import.routes,
]
