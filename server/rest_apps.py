"""The admin endpoints of apps and their notes: list, purge, delete one, uninstall.

Response bodies keep the camelCase keys of the notes' model. Apps are per user: one
user's app ``x`` is not another user's.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from actors.mailbox import SessionDeps
from actors.registry import SessionRegistry
from schemas.records import AppNote
from server.http import BadRequest, authenticated, error, json
from server.ws import SESSION_ID

__all__ = ["routes"]

_NOTE_ID = re.compile(r"^note_[0-9a-f]{8}\Z")


def _note(note: AppNote) -> dict[str, Any]:
    return {
        "id": note.id,
        "content": note.content,
        "createdAt": note.created_at.isoformat().replace("+00:00", "Z"),
        "updatedAt": note.updated_at.isoformat().replace("+00:00", "Z"),
        "sourceConversationId": note.source_session_id,
        "metadata": note.meta,
    }


def _app(request: Request) -> str | None:
    app_id: str = request.path_params["app_id"]
    return app_id if SESSION_ID.match(app_id) else None


async def list_notes(request: Request, user_id: str) -> Response:
    app_id = _app(request)
    deps: SessionDeps = request.state.deps
    notes = await deps.store.facts.notes_of(user_id, app_id) if app_id else []
    return json({"memories": [_note(n) for n in notes]})


async def purge_notes(request: Request, user_id: str) -> Response:
    app_id = _app(request)
    count = await _purge(request.state.deps, user_id, app_id) if app_id else 0
    return json({"success": True, "deletedCount": count})


async def _purge(deps: SessionDeps, user_id: str, app_id: str) -> int:
    """Delete the app's notes, and keep the notes of its conversations that ended before
    and are still being written from landing afterwards."""

    async def purge() -> int:
        deps.learning.notes.forget(user_id, app_id)
        return await deps.store.facts.delete_notes(user_id, app_id, None)

    return await deps.fact_writer.call(purge)


async def uninstall(request: Request, user_id: str) -> Response:
    """The app is gone: its live sessions end, and its notes are kept (a later session in
    the app sees them again) unless ``purge=true`` deletes them too."""
    purge = request.query_params.get("purge", "false")
    if purge not in ("true", "false"):
        raise BadRequest("purge must be true or false")
    app_id = _app(request)
    if app_id is None:
        return json({"success": True, "endedSessions": 0, "deletedCount": 0})
    registry: SessionRegistry = request.state.registry
    ended = await registry.end_app(user_id, app_id, notes=purge == "false")
    count = await _purge(request.state.deps, user_id, app_id) if purge == "true" else 0
    return json({"success": True, "endedSessions": ended, "deletedCount": count})


async def delete_note(request: Request, user_id: str) -> Response:
    app_id = _app(request)
    note_id: str = request.path_params["note_id"]
    if app_id is None or not _NOTE_ID.match(note_id):
        return error(404, "not_found", "no such memory")
    deps: SessionDeps = request.state.deps
    facts = deps.store.facts
    count = await deps.fact_writer.call(lambda: facts.delete_notes(user_id, app_id, [note_id]))
    if not count:
        return error(404, "not_found", "no such memory")
    return json({"success": True})


routes = [
    Route("/apps/{app_id}/memories", authenticated(list_notes), methods=["GET"]),
    Route("/apps/{app_id}/memories", authenticated(purge_notes), methods=["DELETE"]),
    Route("/apps/{app_id}/memories/{note_id}", authenticated(delete_note), methods=["DELETE"]),
    Route("/apps/{app_id}", authenticated(uninstall), methods=["DELETE"]),
]
