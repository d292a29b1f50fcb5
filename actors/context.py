"""Recall and context blocks: hybrid search scored by seeds 001 and 002, then a named format.

Failures of the embedder or the store degrade to an empty block: memory helps
a reply but never blocks it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio
import numpy as np

from actors.errors import MnemoError
from actors.keeper import FactKeeper
from actors.ports import Clock, Embedder, FactHit, Store
from actors.query_vector import QueryVector
from memory import formats
from memory.compaction import compact
from memory.decay import effective_confidence
from memory.formats import Block
from memory.keywords import expresses_preference, extract_keywords, mentions_personal
from memory.recall import format_recalled
from memory.rules import StoredRule, recall_rules
from memory.scoring import (
    CompositeWeights,
    RelevanceWeights,
    composite_score,
    frequency_score,
    kept_agreement,
    normalized_rrf,
    recency_score,
    relevance_score,
    rrf_score,
)
from memory.tokens import estimate_tokens
from schemas.llm import PromptMessage
from schemas.records import Fact
from schemas.settings import SearchMode, Settings

__all__ = [
    "FORMAT_NAMES",
    "ChatContext",
    "ContextBuilder",
    "ScoredFact",
    "chat_context",
]

_log = logging.getLogger("mnemo.context")

#: Every name a ``context`` request may give in ``format``.
FORMAT_NAMES = (*formats.FORMATS, "conversation")
_CANDIDATES = 50


@dataclass(frozen=True, slots=True)
class ScoredFact:
    fact: Fact
    score: float
    #: Cosine similarity to the query (None when the search did not embed it).
    similarity: float | None = None


class ContextBuilder:
    """Builds context blocks for one server; stateless apart from its collaborators."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        keeper: FactKeeper,
        settings: Settings,
        clock: Clock,
    ) -> None:
        self.store, self._embedder, self._keeper = store, embedder, keeper
        self.settings, self._clock = settings, clock
        self._boosts = {c.name: c.retrieval_boost for c in settings.categories}
        self._relevance = RelevanceWeights(
            keyword=settings.score_keyword,
            category=settings.score_category,
            recency=settings.score_recency,
            frequency=settings.score_frequency,
            confidence=settings.score_confidence,
            topic_boost=settings.topic_boost,
        )
        self._composite = CompositeWeights(
            relevance=settings.recall_relevance,
            importance=settings.recall_importance,
            recency=settings.recall_recency,
            confidence=settings.recall_confidence,
        )

    async def held_rules(self, user_id: str, scope: str | None) -> list[StoredRule]:
        """The user's rules of ``global`` and ``scope``, as stored; the rules table is read
        only when the user's kept counts show a rule that is not forgotten (most users have
        none: their contexts and searches cost no read of it)."""
        counts = await self.store.rules.rule_counts(user_id, scope=scope)
        if sum(counts.values()) - counts.get("forgotten", 0) == 0:
            return []
        return await self.store.rules.rules_of(user_id, scope=scope)

    def query_vector(self, text: str) -> QueryVector:
        """``text``'s embedding, to share between searches (computed on first need)."""
        return QueryVector(self._embedder, text)

    async def recall_facts(
        self,
        user_id: str,
        query: str,
        *,
        scope: str | None,
        limit: int,
        topic: str | None = None,
        vector: QueryVector | None = None,
        min_confidence: float | None = None,
    ) -> list[ScoredFact]:
        """The user's best active facts for ``query``, best first (score desc, created_at
        desc, id asc). Seed 001: the topic's words join the query, and a message that
        expresses a preference recalls every preference fact as a candidate. Empty when
        nothing matches. ``vector`` is the query's (shared with other searches); with a
        topic the query and topic are embedded together instead. ``min_confidence``
        overrides ``MNEMO_RECALL_MIN_CONFIDENCE``. Raises ``MnemoError`` when the embedder
        or store fails."""
        text = f"{query} {topic}" if topic else query
        if vector is None or topic:
            vector = self.query_vector(text)
        preference = expresses_preference(query)
        hits = await self.store.facts.search_facts(
            user_id,
            text,
            vector,
            k=_CANDIDATES,
            scope=scope,
            categories=[c for c, b in self._boosts.items() if b != 1.0] if preference else (),
        )
        scored = self.score(
            self._confident(hits, min_confidence),
            query=query,
            topic=topic,
            limit=_CANDIDATES,
            query_vector=await vector() if hits else None,
        )
        return scored[:limit]

    @staticmethod
    def _similarity(hit: FactHit, query: Sequence[float] | None) -> float | None:
        if hit.similarity is not None or query is None:
            return hit.similarity
        vector = hit.stored.vector
        if len(vector) != len(query):
            return None
        return float(np.dot(np.asarray(vector, dtype=np.float32), np.asarray(query, np.float32)))

    async def find_facts(
        self,
        user_id: str,
        query: str,
        *,
        mode: SearchMode,
        scope: str | None,
        limit: int,
        vector: QueryVector,
        min_confidence: float | None = None,
    ) -> list[ScoredFact]:
        """The user's active facts by one side of the search, best first: ``semantic``
        scores by cosine similarity, ``keyword`` by BM25 (seed 002's ``similarity`` and
        ``rank``); ``hybrid`` is ``recall_facts``. Raises ``MnemoError`` like it."""
        if mode == "hybrid":
            return await self.recall_facts(
                user_id,
                query,
                scope=scope,
                limit=limit,
                vector=vector,
                min_confidence=min_confidence,
            )
        hits = await self.store.facts.search_facts(
            user_id, query, vector, k=max(limit, _CANDIDATES), scope=scope, mode=mode
        )
        semantic = mode == "semantic"
        ranked = sorted(
            (
                (rank, score, hit.stored.fact)
                for hit in self._confident(hits, min_confidence)
                if (rank := hit.dense_rank if semantic else hit.text_rank) is not None
                and (score := hit.similarity if semantic else hit.text_score) is not None
            ),
            key=lambda found: found[0],
        )
        return [
            ScoredFact(fact, score, score if semantic else None)
            for _, score, fact in ranked[:limit]
        ]

    def _confident(self, hits: Sequence[FactHit], least: float | None = None) -> list[FactHit]:
        """Seed 002's ``min_confidence`` (``least``, default ``MNEMO_RECALL_MIN_CONFIDENCE``):
        facts whose effective confidence (after decay) is below it are not recalled. A pinned
        fact always is (seed 004: the user keeps it)."""
        now = self._clock.now()
        least = self.settings.recall_min_confidence if least is None else least
        return [
            h
            for h in hits
            if h.stored.fact.pinned or effective_confidence(h.stored.fact, now) >= least
        ]

    def score(
        self,
        hits: Sequence[FactHit],
        *,
        query: str,
        topic: str | None,
        limit: int,
        query_vector: Sequence[float] | None = None,
    ) -> list[ScoredFact]:
        """Seed 001's relevance and seed 002's composite score, averaged.

        Seed 001: ``keyword_score`` is the search's (BM25 scaled to 0..1, or the share of
        keywords matched when full-text analysis is unavailable); a category's boost (1.5
        for ``preference``) applies when the message expresses a preference; memories
        that mention the current topic get 1.3x. Seed 002: relevance is the normalized
        RRF of the vector and text ranks (``limit + 1`` for a side that missed).
        """
        now = self._clock.now()
        half_life = self.settings.recency_half_life_days
        topic_words = [k.casefold() for k in extract_keywords(topic)] if topic else []
        preference = expresses_preference(query)
        most = max((h.stored.fact.access_count for h in hits), default=0)
        out = []
        for hit in hits:
            fact = hit.stored.fact
            body = fact.content.casefold()
            boost = self._boosts.get(fact.category, 1.0) if preference else 1.0
            recency = recency_score(
                fact.last_accessed or fact.last_seen, now, half_life_days=half_life
            )
            seed001 = relevance_score(
                keyword=hit.keyword_score,
                category_boost=boost,
                recency=recency,
                frequency=frequency_score(fact.access_count, most),
                confidence=fact.confidence,
                on_topic=any(w in body for w in topic_words),
                weights=self._relevance,
            )
            seed002 = composite_score(
                relevance=normalized_rrf(rrf_score(hit.dense_rank, hit.text_rank, limit=limit)),
                importance=fact.importance,
                recency=recency,
                effective_confidence=effective_confidence(fact, now),
                weights=self._composite,
            )
            similarity = self._similarity(hit, query_vector)
            out.append(ScoredFact(fact, 0.5 * seed001 + 0.5 * seed002, similarity))
        out = _agreed(out, hits, limit)
        out.sort(key=lambda s: formats.rank_key(s.score, s.fact))
        return out

    async def build(
        self,
        user_id: str,
        query: str,
        *,
        format: str,
        budget: int,
        scope: str | None,
        topic: str | None = None,
        exclude: frozenset[tuple[str, str]] = frozenset(),
        vector: QueryVector | None = None,
    ) -> Block:
        """A context block in the named format (see ``FORMAT_NAMES``), never over ``budget``.

        The facts it includes count as accessed. ``exclude`` holds (role, text) pairs
        the prompt already carries, left out of the ``conversation`` format. ``vector``
        is the query's embedding, shared with other searches.
        """
        vector = vector or self.query_vector(query)
        try:
            block = await self._build(user_id, query, format, budget, scope, topic, exclude, vector)
        except MnemoError as exc:
            _log.warning("context for user %s degraded to empty: %s", user_id, exc)
            return Block("", 0, [])
        self.touch(user_id, block.memory_ids)
        return block

    def touch(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Seed 001's access tracking for the facts a context included."""
        self._keeper.touch_nowait(user_id, [i for i in memory_ids if i.startswith("fact_")])

    async def _build(
        self,
        user_id: str,
        query: str,
        format: str,
        budget: int,
        scope: str | None,
        topic: str | None,
        exclude: frozenset[tuple[str, str]],
        vector: QueryVector,
    ) -> Block:
        if format == "conversation":
            found = await self.store.search_messages(
                user_id, query, vector, k=8 + len(exclude), scope=scope
            )
            fresh = [m for m, _ in found if (m.role, m.text) not in exclude][:8]
            recalled = format_recalled(fresh, budget)
            return Block(recalled.text, recalled.tokens, recalled.memory_ids, recalled.needed)
        if format == "app-memories":
            app = scope or "global"
            notes = await self.store.facts.notes_of(user_id, app, limit=self.settings.notes_per_app)
            _log.debug("retrieved %d notes of app %s for user %s", len(notes), app, user_id)
            return formats.app_memories(app, notes)
        limit = self.settings.recall_limit
        facts = [
            s.fact
            for s in await self.recall_facts(
                user_id, query, scope=scope, limit=limit, topic=topic, vector=vector
            )
        ]
        if format == "user-context":
            profile = await self.store.facts.get_profile(user_id)
            return formats.user_context(profile, facts, budget)
        if format == "memory-context":
            kept = await self.held_rules(user_id, scope)
            rules = recall_rules(
                kept,
                await vector() if kept else None,
                self._clock.now(),
                limit=self.settings.rules_limit,
                weights=self._composite,
            )
            lines = [
                formats.RuleLine(r.id, r.content, r.maturity, r.effectiveness_score) for r in rules
            ]
            return formats.memory_context(
                facts, budget, lines, rules_share=self.settings.rules_share
            )
        if not mentions_personal(query):  # seed 004: identity only when the query is personal
            facts = [f for f in facts if f.category != "identity" or f.pinned]
        return formats.about_user(facts, self.settings.categories, budget)


def _agreed(scored: list[ScoredFact], hits: Sequence[FactHit], limit: int) -> list[ScoredFact]:
    """The scores lowered where the seeds' other factors (category, recency, importance,
    confidence) would put a fact above one that both sides of the search rank above it
    (``memory.scoring.kept_agreement``): a fact that shares neither words nor meaning
    with the query never outranks one that shares both."""
    kept = kept_agreement(
        {i: s.score for i, s in enumerate(scored)},
        {i: rrf_score(h.dense_rank, h.text_rank, limit=limit) for i, h in enumerate(hits)},
        {i: math.nan if s.similarity is None else s.similarity for i, s in enumerate(scored)},
        {i: h.text_rank for i, h in enumerate(hits) if h.text_rank is not None},
        every=True,
    )
    return [replace(s, score=kept[i]) for i, s in enumerate(scored)]


@dataclass(frozen=True, slots=True)
class ChatContext:
    """What a chat prompt gets from memory, after seed 004's compaction."""

    memory_text: str
    history: list[PromptMessage]
    memory_tokens: int
    compaction_stage: int
    #: How many app notes (seed 003) the prompt carries.
    notes: int = 0


async def chat_context(
    builder: ContextBuilder,
    user_id: str,
    query: str,
    *,
    scope: str | None,
    topic: str | None,
    history: Sequence[PromptMessage],
    system_tokens: int,
) -> ChatContext:
    """Facts (``about-user``, within seed 004's budget) and recalled conversation for a chat
    prompt; over 80 % of the model's context, history is trimmed middle-out, then memory
    shrinks (seed 004's two stages)."""
    settings = builder.settings
    context_tokens = settings.chat_context_tokens
    used = system_tokens + sum(estimate_tokens(m.content) for m in history)
    budget = formats.about_user_budget(context_tokens, used, reserve_for_reply=1024)
    found: dict[str, Any] = {"facts": [], "notes": Block("", 0, [])}
    vector = builder.query_vector(query)  # embedded once, for the facts and the conversation

    async def facts() -> None:
        try:
            found["facts"] = [
                s.fact
                for s in await builder.recall_facts(
                    user_id,
                    query,
                    scope=scope,
                    limit=settings.retrieval_limit,
                    topic=topic,
                    vector=vector,
                )
            ]
            if not found["facts"]:
                found["welcome"] = not await builder.store.facts.facts_of(user_id)
        except MnemoError as exc:
            _log.warning("no facts for chat of user %s: %s", user_id, exc)

    async def conversation() -> None:
        exclude = frozenset((m.role, m.content) for m in history)
        found["recalled"] = await builder.build(
            user_id,
            query,
            format="conversation",
            budget=budget,
            scope=scope,
            exclude=exclude,
            vector=vector,
        )

    async def notes() -> None:  # seed 003: an app's conversations see that app's notes
        found["notes"] = await builder.build(
            user_id, query, format="app-memories", budget=budget, scope=scope
        )

    # The searches are in memory and take well under a millisecond each: one after the
    # other, as a task group would cost three turns of a busy event loop. An app's notes
    # are a LanceDB read: that one runs beside them.
    if scope is None:
        await facts()
        await conversation()
    else:
        async with anyio.create_task_group() as tg:
            tg.start_soon(notes)
            await facts()
            await conversation()
    recalled: Block = found["recalled"]
    notes_block: Block = found["notes"]
    chosen: list[Fact] = found["facts"]
    # Seed 004's seeding: while mnemo knows nothing of the user, the model invites them.
    welcome = Block("", 0, [])
    if found.get("welcome"):
        welcome = Block(settings.welcome_prompt, estimate_tokens(settings.welcome_prompt), [])
    if not mentions_personal(query):
        chosen = [f for f in chosen if f.category != "identity" or f.pinned]
    compacted = compact(
        history,
        chosen,
        system_tokens=system_tokens,
        context_tokens=context_tokens,
        threshold=settings.compaction_threshold,
        extra_tokens=welcome.tokens + notes_block.tokens + recalled.tokens,
    )
    # Compaction counts fact contents; the rendered block adds headings and bullets.
    # Seed 004's "never overflows" is about the prompt sent: while the rendered memory
    # does not fit beside the system prompt and history, the optional blocks go, then
    # the lowest-ranked facts. ("\n\n" joins it to the system prompt; the estimate of
    # a concatenation is at most the sum of its parts'.)
    room = (
        context_tokens - system_tokens - sum(estimate_tokens(m.content) for m in compacted.history)
    )
    shown = list(compacted.facts)
    extras = (welcome, notes_block, recalled) if compacted.keep_extra else ()
    while True:
        block = formats.about_user(shown, settings.categories, budget)
        text = "\n\n".join(b.text for b in (block, *extras) if b.text)
        if not text or estimate_tokens(f"\n\n{text}") <= room or not (extras or shown):
            break
        if extras:
            extras = ()
        else:
            shown.pop()  # the facts come best first
    builder.touch(user_id, block.memory_ids)
    tokens = block.tokens + sum(b.tokens for b in extras)
    notes_shown = len(notes_block.memory_ids) if extras else 0
    return ChatContext(text, compacted.history, tokens, compacted.stage, notes_shown)
