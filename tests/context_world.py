"""The in-process world of the ContextBuilder and chat_context tests: fakes, facts, hits."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import msgspec

from actors.context import ContextBuilder
from actors.errors import MnemoError
from actors.keeper import FactKeeper
from actors.ports import FactHit, ScoredMessage, VectorSource
from memory.facts import Stored
from memory.hashing import HashEmbedder
from schemas.records import AppNote, ArchivedMessage, Fact
from schemas.settings import Settings
from tests.fakes import MemoryFacts, MemoryStore

__all__ = [
    "DAY",
    "NOW",
    "WEIGHTS",
    "_SAID",
    "_At",
    "_Embedder",
    "_Facts",
    "_Keeper",
    "_Store",
    "_World",
    "_add",
    "_embedder",
    "_expected",
    "_fact",
    "_hit",
    "_message",
    "_note",
    "_scoring_hits",
    "_world",
    "msgspec_replace",
]


NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)
DAY = timedelta(days=1)
_embedder = HashEmbedder()
#: Every weight off its default, so that a weight read from the wrong place shows.
WEIGHTS: dict[str, float] = dict(
    zip(
        "score_keyword score_category score_recency score_frequency score_confidence topic_boost"
        " recall_relevance recall_importance recall_recency recall_confidence"
        " recency_half_life_days".split(),
        (0.3, 0.25, 0.1, 0.2, 0.05, 1.7, 0.35, 0.15, 0.3, 0.2, 14.0),
        strict=True,
    )
)


class _At:
    def now(self) -> datetime:
        return NOW


class _Keeper:
    """Records what each context counted as accessed."""

    def __init__(self) -> None:
        self.touched: list[tuple[str, list[str]]] = []

    def touch_nowait(self, user_id: str, fact_ids: Sequence[str]) -> None:
        self.touched.append((user_id, list(fact_ids)))


class _Embedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return await super().embed(texts)


@dataclass
class _Facts(MemoryFacts):
    """Records every fact search; answers ``hits`` when set, raises ``error`` when set."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    hits: list[FactHit] | None = None
    error: MnemoError | None = None

    async def search_facts(
        self, user_id: str, text: str, vector: VectorSource, **kw: Any
    ) -> list[FactHit]:
        kw = {"categories": (), "mode": "hybrid"} | kw
        self.calls.append({"user": user_id, "text": text, "vector": vector} | kw)
        if self.error is not None:
            raise self.error
        if self.hits is not None:
            return self.hits
        return await super().search_facts(user_id, text, vector, **kw)


@dataclass
class _Store(MemoryStore):
    searches: list[tuple[str, VectorSource, int, str | None]] = field(default_factory=list)

    async def search_messages(
        self, user_id: str, text: str, vector: VectorSource, **kw: Any
    ) -> list[ScoredMessage]:
        self.searches.append((text, vector, kw["k"], kw.get("scope")))
        return await super().search_messages(user_id, text, vector, **kw)


@dataclass
class _World:
    builder: ContextBuilder
    store: _Store
    facts: _Facts
    keeper: _Keeper
    embedder: _Embedder


def _world(**settings: Any) -> _World:
    facts, keeper, embedder = _Facts(), _Keeper(), _Embedder()
    store = _Store(facts=facts)
    config = Settings(**settings)
    builder = ContextBuilder(store, embedder, cast(FactKeeper, keeper), config, _At())
    return _World(builder, store, facts, keeper, embedder)


def _fact(n: int, content: str, category: str = "knowledge", **fields: Any) -> Fact:
    ago = NOW - 10 * DAY
    base: dict[str, Any] = {"confidence": 0.7, "last_confirmed_at": ago, "last_seen": ago}
    base |= {"created_at": ago, "updated_at": ago} | fields
    return Fact(id=f"fact_{n:08x}", user_id="u1", content=content, category=category, **base)


def _add(world: _World, *facts: Fact) -> None:
    for f in facts:
        world.facts.facts[("u1", f.id)] = Stored(f, _embedder.embed_one(f.content))


def _hit(
    fact: Fact, dense: int | None, text: int | None, keyword: float = 0.0, **kw: Any
) -> FactHit:
    return FactHit(Stored(fact, _embedder.embed_one(fact.content)), dense, text, keyword, **kw)


def _note(w: _World, id: str, app: str, content: str, at: datetime = NOW) -> AppNote:
    note = AppNote(id=id, user_id="u1", app_id=app, content=content, created_at=at, updated_at=at)
    w.facts.notes[("u1", id)] = note
    return note


_SAID: dict[str, Any] = {"user_id": "u1", "session_id": "s1", "role": "user", "speaker": "user"}


def _message(n: int, text: str, scope: str = "global") -> ArchivedMessage:
    at = NOW - timedelta(minutes=100 - n)
    return ArchivedMessage(id=f"msg_{n:016x}", scope=scope, turn=n, text=text, at=at, **_SAID)


def _expected(
    s: Settings, hit: FactHit, *, most: int, boost: float, topical: bool, limit: int
) -> float:
    """Seeds 001 and 002 written out, independently of memory.scoring."""
    f = hit.stored.fact
    days = (NOW - (f.last_accessed or f.last_seen)) / DAY
    recency: float = 0.5 ** (days / s.recency_half_life_days)  # float ** float is Any
    frequency = math.log1p(f.access_count) / math.log1p(most) if f.access_count else 0.0
    seed001 = (
        hit.keyword_score * s.score_keyword
        + boost * s.score_category
        + recency * s.score_recency
        + frequency * s.score_frequency
        + f.confidence * s.score_confidence
    ) * (s.topic_boost if topical else 1.0)
    ranks = (hit.dense_rank or limit + 1, hit.text_rank or limit + 1)
    relevance = min(1.0, sum(1 / (60 + r) for r in ranks) / (2 / 61))
    assert f.last_confirmed_at is not None
    confident = f.confidence * math.exp(-f.decay_rate * (NOW - f.last_confirmed_at) / DAY)
    seed002 = (
        s.recall_relevance * relevance
        + s.recall_importance * f.importance / 10
        + s.recall_recency * recency
        + s.recall_confidence * confident
    )
    return 0.5 * seed001 + 0.5 * seed002


def _scoring_hits() -> list[FactHit]:
    baker = _fact(1, "User bakes Bread on Sundays", "preference", access_count=3, importance=7.0)
    baker = msgspec_replace(baker, last_accessed=NOW - 2 * DAY, confidence=0.9)
    reader = _fact(2, "User reads novels", access_count=1, decay_rate=0.02)
    odd = _fact(3, "User collects stamps", "mystery", last_seen=NOW - 3 * DAY)
    return [_hit(baker, 2, None, 0.5), _hit(reader, None, 1, 0.25), _hit(odd, 3, 4, 1.0)]


def msgspec_replace(fact: Fact, **changes: Any) -> Fact:
    return msgspec.structs.replace(fact, **changes)
