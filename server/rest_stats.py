"""``GET /memory/stats``: seed 002's ``memory_stats`` of the caller's memory."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from actors.mailbox import SessionDeps
from memory.stats import episode_stats
from server.http import BadRequest, authenticated, json
from server.ws import SESSION_ID

__all__ = ["routes", "stats_of"]


async def memory_stats(request: Request, user_id: str) -> Response:
    """Facts by state (active, fading, superseded, expired, retracted), rules by maturity
    and forgotten, episodes (stored and archived) and the consolidation backlog;
    ``scope``: facts and rules of ``global`` and that scope only."""
    scope = request.query_params.get("scope")
    if scope is not None and not SESSION_ID.match(scope):
        raise BadRequest("scope must be 1-64 of A-Z a-z 0-9 _ . @ -")
    return json(await stats_of(request.state.deps, user_id, scope))


async def stats_of(deps: SessionDeps, user_id: str, scope: str | None) -> dict[str, Any]:
    """The counts of ``GET /memory/stats`` and the MCP tool ``memory_stats``."""
    store = deps.store
    facts = await store.facts.fact_counts(user_id, scope=scope)
    rules = await store.rules.rule_counts(user_id, scope=scope)
    messages = await store.count_messages(user_id)
    stored = [e for e, _ in await store.episodes.episodes_of(user_id)]
    return {
        "facts": facts,
        "rules": rules,
        "episodes": episode_stats(stored, messages, deps.clock.now()),
    }


routes = [Route("/memory/stats", authenticated(memory_stats), methods=["GET"])]
