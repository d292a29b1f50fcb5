"""``GET /memory/search``: scored hits over a user's active facts, archived turns, rules and
episodes stored directly (seed 002's ``memory_search``)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

import anyio
import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from actors.errors import MnemoError
from actors.keeper import fact_view
from actors.mailbox import SessionDeps
from memory.decay import effective_confidence
from memory.keywords import extract_keywords
from memory.rules import is_forgotten
from memory.scoring import answer_relevance, keyword_coverage, score_texts
from memory.text import query_text
from schemas.settings import SEARCH_MODES, SearchMode
from server.http import BadRequest, authenticated, int_param, json
from server.rest_episodes import episode_view
from server.rest_rules import rule_view
from server.ws import SESSION_ID

__all__ = ["KINDS", "POOL", "find", "routes", "search_mode"]

KINDS = ("all", "facts", "turns", "rules", "episodes")
#: The most hits a search gives (``limit``), and how many of each kind a search of
#: several kinds ranks together.
POOL = 100


async def search(request: Request, user_id: str) -> Response:
    """Best first. Every hit has a ``relevance`` (0..1, ``memory.scoring.answer_relevance``:
    cosine similarity and keyword coverage, the same for facts and turns, low for a miss).
    ``kind=all`` ranks facts and turns together by it, and it is their ``score``. One kind
    alone keeps its own ranking as ``score``: ``mode=hybrid`` (the default,
    ``MNEMO_SEARCH_MODE``): facts by the mean of seed 001's and seed 002's scores, turns by
    the store's hybrid score (reciprocal-rank fusion of vector and BM25 ranks, lifted by
    their neighbours, then ordered by time, speaker and session: ``memory.ranking``;
    ``at``, ISO-8601, is the query's own time, default now); ``semantic``: by cosine
    similarity; ``keyword``: by BM25. Facts
    below ``MNEMO_RECALL_MIN_CONFIDENCE`` (decayed) are left out."""
    query = query_text(request.query_params.get("q"))
    if not query:
        raise BadRequest("q must not be empty")
    # ``limit``, as every list takes; ``k`` is its deprecated name, kept for one release.
    k = int_param(request, "k" if "limit" not in request.query_params else "limit", 10, 1, POOL)
    kind = request.query_params.get("kind", "all")
    if kind not in KINDS:
        raise BadRequest(f"kind must be one of {', '.join(KINDS)}")
    deps: SessionDeps = request.state.deps
    mode = search_mode(request.query_params.get("mode", deps.settings.search_mode))
    at = _time(request.query_params.get("at"))
    scope = request.query_params.get("scope")
    if scope is not None and not SESSION_ID.match(scope):
        raise BadRequest("scope: 1-128 of A-Z a-z 0-9 _ . : -")
    kinds = KINDS[1:] if kind == "all" else (kind,)
    hits = await find(deps, user_id, query, kinds=kinds, scope=scope, mode=mode, limit=k, at=at)
    return json({"hits": hits})


async def find(
    deps: SessionDeps,
    user_id: str,
    query: str,
    *,
    kinds: Sequence[str],
    scope: str | None,
    mode: SearchMode,
    limit: int,
    at: datetime | None = None,
    min_confidence: float | None = None,
) -> list[dict[str, Any]]:
    """The search of ``GET /memory/search`` and the MCP tool ``memory_search``: hits of the
    named ``kinds`` (of ``KINDS[1:]``), best first. One kind keeps its own ranking as
    ``score``; several are ranked together by ``relevance``, which is then their score.
    ``min_confidence`` (default ``MNEMO_RECALL_MIN_CONFIDENCE``) leaves out facts and rules
    whose decayed confidence is below it."""
    # Several kinds are ranked together by relevance: each kind's own best ``POOL`` are
    # the candidates, however many are asked for, so the first hits never depend on it.
    k = limit
    pool = k if len(kinds) == 1 else max(k, POOL)
    least = deps.settings.recall_min_confidence if min_confidence is None else min_confidence
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in KINDS[1:]}
    vector = deps.context.query_vector(query)  # embedded once, while the texts are scored
    keywords = extract_keywords(query)

    async def facts() -> None:
        for scored in await deps.context.find_facts(
            user_id, query, mode=mode, scope=scope, limit=pool, vector=vector, min_confidence=least
        ):
            view = msgspec.to_builtins(fact_view(scored.fact))
            relevance = answer_relevance(
                scored.similarity, keyword_coverage(keywords, scored.fact.content)
            )
            hit = {**view, "kind": "fact", "score": scored.score, "text": view["content"]}
            hit["similarity"] = scored.similarity
            found["facts"].append(hit | {"relevance": round(relevance, 6)})

    async def turns() -> None:
        hits = await deps.store.search_messages(
            user_id, query, vector, k=pool, scope=scope, mode=mode, at=at
        )
        near = (
            await deps.store.message_similarities(user_id, [m.id for m, _ in hits], await vector())
            if hits
            else {}
        )
        for message, score in hits:
            item = msgspec.to_builtins(message)
            del item["user_id"], item["context"]
            item["superseded_by"] = message.superseded_by or None
            coverage = keyword_coverage(keywords, f"{message.speaker}: {message.text}")
            relevance = round(answer_relevance(near.get(message.id), coverage), 6)
            hit = {**item, "kind": "turn", "score": score, "relevance": relevance}
            found["turns"].append(hit | {"similarity": near.get(message.id)})

    async def held(name: str) -> None:
        """Rules (``global`` and the scope; forgotten and decayed ones left out) or episodes
        stored directly (of the scope; expired ones left out), scored in memory."""
        now = deps.clock.now()
        if name == "rules":
            kept = [
                (s.rule, s.vector)
                for s in await deps.context.held_rules(user_id, scope)
                if not is_forgotten(s.rule) and effective_confidence(s.rule, now) >= least
            ]
            views = [(rule_view(r), r.content, v) for r, v in kept]
        else:
            # Kept counts: a user without episodes costs no read of the episodes table.
            has = await deps.store.episodes.episode_count(user_id)
            stored = await deps.store.episodes.episodes_of(user_id, scope=scope) if has else []
            views = [(episode_view(e), e.content, v) for e, v in stored if e.expires_at >= now]
        query_vector = await vector() if views and mode != "keyword" else None
        texts: list[tuple[str, Sequence[float]]] = [(t, list(v)) for _, t, v in views]
        least_similar = deps.settings.min_similarity
        ranked = score_texts(texts, query_vector, keywords, mode, min_similarity=least_similar)
        for index, score, similarity, relevance in ranked[:pool]:
            view, text = views[index][0], views[index][1]
            found[name].append(
                {**view, "kind": name[:-1], "score": score, "text": text}
                | {"similarity": similarity, "relevance": round(relevance, 6)}
            )

    async def embedded() -> None:
        with suppress(MnemoError):  # the searches that need it raise it themselves
            await vector()

    async with anyio.create_task_group() as tg:
        # The embedding starts now (in a worker thread), while the user's indexes load and
        # their text sides are scored, not once a search first needs it.
        if mode != "keyword":
            tg.start_soon(embedded)
        if "facts" in kinds:
            tg.start_soon(facts)
        if "turns" in kinds:
            tg.start_soon(turns)
        for name in ("rules", "episodes"):
            if name in kinds:
                tg.start_soon(held, name)
    if len(kinds) == 1:
        return found[kinds[0]][:k]
    # One scale for every kind; a stable sort keeps each side's order among equal ones.
    every = [hit for name in KINDS[1:] if name in kinds for hit in found[name]]
    hits = sorted(every, key=lambda h: -h["relevance"])
    return [h | {"score": h["relevance"]} for h in hits[:k]]


def _time(raw: str | None) -> datetime | None:
    """The query's own time: ISO-8601, UTC when it names no zone; None: now."""
    if raw is None:
        return None
    try:
        at = datetime.fromisoformat(raw)
    except ValueError:
        raise BadRequest("at must be an ISO-8601 time") from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def search_mode(raw: str) -> SearchMode:
    for mode in SEARCH_MODES:
        if raw == mode:
            return mode
    raise BadRequest(f"mode must be one of {', '.join(SEARCH_MODES)}")


routes = [Route("/memory/search", authenticated(search), methods=["GET"])]
