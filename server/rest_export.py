"""``GET /memory/export``: everything of the caller's, as JSON lines (the import format)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio.lowlevel
import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from actors.mailbox import SessionDeps
from memory.transfer import transfer_id
from schemas.records import AppNote, ArchivedMessage, Fact
from server.budget import UserBudgets
from server.http import authenticated

__all__ = ["routes"]

_encoder = msgspec.json.Encoder()
_PAGE = 1000
_CHUNK = 1 << 16


def _turn(m: ArchivedMessage) -> dict[str, Any]:
    return {
        "kind": "turn",
        "id": transfer_id(m),
        "session_id": m.session_id,
        "speaker": m.speaker,
        "role": m.role,
        "text": m.text,
        "at": m.at,
        "scope": m.scope,
        "meta": m.meta,
        "turn": m.turn,
    }


def _fact(f: Fact) -> dict[str, Any]:
    return {
        "kind": "fact",
        "id": f.source_id or f.id,
        "content": f.content,
        "category": f.category,
        "confidence": f.confidence,
        "at": f.created_at,
        "scope": f.scope,
        "meta": f.meta,
        "pinned": f.pinned,
        "validity": f.validity,
        "mention_count": f.mention_count,
        "subject": f.subject,
        "predicate": f.predicate,
    }


def _note(n: AppNote) -> dict[str, Any]:
    return {
        "kind": "note",
        "id": n.id,
        "app_id": n.app_id,
        "content": n.content,
        "at": n.created_at,
        "meta": n.meta,
    }


async def _lines(deps: SessionDeps, user_id: str) -> AsyncIterator[bytes]:
    store = deps.store
    facts, _ = await store.facts.list_facts(user_id, limit=1 << 30, offset=0, validity=None)
    apps: set[str] = set()
    for fact in facts:
        apps.add(fact.scope)
        yield _encoder.encode(_fact(fact)) + b"\n"
    profile = await store.facts.get_profile(user_id)
    if profile is not None:
        yield _encoder.encode({"kind": "profile", **msgspec.to_builtins(profile)}) + b"\n"
    offset = 0
    while True:
        page, total = await store.list_messages(user_id, limit=_PAGE, offset=offset)
        for message in page:
            apps.add(message.scope)
            yield _encoder.encode(_turn(message)) + b"\n"
        offset += len(page)
        if not page or offset >= total:
            break
    for app in sorted(apps - {"global"}):
        for note in await store.facts.notes_of(user_id, app):
            yield _encoder.encode(_note(note)) + b"\n"


async def _paid(
    lines: AsyncIterator[bytes], budgets: UserBudgets, user_id: str
) -> AsyncIterator[bytes]:
    """``lines`` in chunks of about 64 KiB, each paid for from the user's budget
    (``server.budget``): a big export is written at the user's pace, not at the cost of
    everyone's.

    After each chunk the task lets the event loop run: a page of lines comes out of the
    store at once, and written line by line without a pause, the writes after the
    client left would go on until the page ended (asyncio logs "socket.send() raised
    exception." for each); with the pause, the server learns of the disconnect before
    the next write and the response stops.
    """
    chunk: list[bytes] = []
    size = 0
    async for line in lines:
        chunk.append(line)
        size += len(line)
        if size >= _CHUNK:
            await budgets.spend(user_id, size)
            yield b"".join(chunk)
            chunk, size = [], 0
            await anyio.lowlevel.checkpoint()
    if chunk:
        yield b"".join(chunk)


async def export(request: Request, user_id: str) -> Response:
    """Facts (every validity), the profile, archived turns (newest first) and app notes."""
    deps: SessionDeps = request.state.deps
    return StreamingResponse(
        _paid(_lines(deps, user_id), request.state.budgets, user_id),
        media_type="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="mnemo-{user_id}.jsonl"'},
    )


routes = [Route("/memory/export", authenticated(export), methods=["GET"])]
