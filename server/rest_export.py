"""``GET /memory/export``: everything of the caller's, as JSON lines (the import format):
an import of it into an empty server gives back the same export."""

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
from memory.transfer_records import (
    entity_line,
    episode_line,
    fact_line,
    link_line,
    note_line,
    profile_line,
    rule_line,
    turn_line,
)
from schemas.records import RuleApplication
from server.budget import UserBudgets
from server.http import authenticated

__all__ = ["routes"]

_encoder = msgspec.json.Encoder()
_PAGE = 1000
_CHUNK = 1 << 16


async def _lines(deps: SessionDeps, user_id: str) -> AsyncIterator[bytes]:
    """Every record of the user's, whole (``memory.transfer_records``): the profile, the
    archived turns (newest first), then what may name a turn (facts of every validity,
    rules with their applications, links), so that an import of the file meets each
    turn before what names it; notes, entities and episodes between."""
    store = deps.store
    facts, _ = await store.facts.list_facts(user_id, limit=1 << 30, offset=0, validity=None)
    rules = await store.rules.rules_of(user_id)
    links = await store.links.links_of_user(user_id)
    # The archived messages the others name, by their name in the export (found below).
    named = {f.source_episode_id for f in facts} | {r.rule.source_episode_id for r in rules}
    named |= {i for k in links for i in (k.source_id, k.target_id)}
    names = {i: i for i in named if i is not None and i.startswith("msg_")}
    profile = await store.facts.get_profile(user_id)
    if profile is not None:
        yield _line(profile_line(profile))
    offset = 0
    while True:
        page, total = await store.list_messages(user_id, limit=_PAGE, offset=offset)
        for message in page:
            called = transfer_id(message)
            if message.id in names:
                names[message.id] = called
            yield _line(turn_line(message, called))
        offset += len(page)
        if not page or offset >= total:
            break

    def name(item_id: str) -> str:
        return names.get(item_id, item_id)

    for fact in facts:
        yield _line(fact_line(fact, name))
    for note in await store.facts.notes_of_user(user_id):
        yield _line(note_line(note))
    for entity in await store.entities.entities_of(user_id):
        yield _line(entity_line(entity))
    applications: dict[str, list[RuleApplication]] = {}
    for application in await store.rules.applications_of_user(user_id):
        applications.setdefault(application.rule_id, []).append(application)
    for stored in rules:
        done = applications.get(stored.rule.id, [])
        yield _line(rule_line(stored.rule, done, name))
    if await store.episodes.episode_count(user_id):
        for episode, _ in await store.episodes.episodes_of(user_id):
            yield _line(episode_line(episode))
    for link in links:
        yield _line(link_line(link, name))


def _line(fields: dict[str, Any]) -> bytes:
    return _encoder.encode(fields) + b"\n"


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
    """Everything of the caller's, as JSON lines: ``_lines``."""
    deps: SessionDeps = request.state.deps
    return StreamingResponse(
        _paid(_lines(deps, user_id), request.state.budgets, user_id),
        media_type="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="mnemo-{user_id}.jsonl"'},
    )


routes = [Route("/memory/export", authenticated(export), methods=["GET"])]
