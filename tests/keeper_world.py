"""FactKeeper over in-memory fakes with a real writer: the world its in-process tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio

from actors.keeper import FactKeeper
from actors.writer import ArchiveWriter
from memory.facts import Changes, Stored
from memory.hashing import HashEmbedder
from schemas.llm import ExtractedFact
from schemas.records import Fact
from schemas.settings import Settings
from schemas.transfer import FactLine
from tests.fakes import MemoryFacts, MemoryStore

__all__ = [
    "DAY",
    "EMBED",
    "NOW",
    "FixedClock",
    "Recorder",
    "World",
    "extracted",
    "make",
    "pick",
    "put",
    "world",
]


NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
EMBED = HashEmbedder()


class FixedClock:
    def now(self) -> datetime:
        return NOW


@dataclass
class Recorder(MemoryFacts):
    """Records every fact write the keeper makes; ``fail`` makes the next read raise it."""

    writes: list[tuple[Any, ...]] = field(default_factory=list)
    fail: Exception | None = None

    async def facts_of_users(self, user_ids: Sequence[str]) -> dict[str, list[Stored]]:
        if self.fail is not None:
            raise self.fail
        return await super().facts_of_users(user_ids)

    async def add_facts(self, items: Sequence[Stored]) -> None:
        self.writes.append(("add", *[s.fact.content for s in items]))
        assert not {(s.fact.user_id, s.fact.id) for s in items} & set(self.facts), "not new"
        await MemoryFacts.put_facts(self, items)

    async def put_facts(self, items: Sequence[Stored]) -> None:
        self.writes.append(("put", *[s.fact.content for s in items]))
        await super().put_facts(items)

    async def delete_facts(self, user_id: str, ids: Sequence[str], *, purge_now: bool) -> int:
        self.writes.append(("delete", user_id, *ids, purge_now))
        return await super().delete_facts(user_id, ids, purge_now=purge_now)

    def of(self, user_id: str = "u1") -> dict[str, Fact]:
        return {s.fact.content: s.fact for (u, _), s in self.facts.items() if u == user_id}


@dataclass
class World:
    keeper: FactKeeper
    writer: ArchiveWriter
    facts: Recorder

    async def batch(self, *calls: Callable[[], Awaitable[Any]]) -> list[Any]:
        """Run ``calls`` queued, in order, behind one held writer call: one batch."""
        release = anyio.Event()
        results: list[Any] = [None] * len(calls)

        async def one(index: int) -> None:
            results[index] = await calls[index]()

        async with anyio.create_task_group() as tg:
            tg.start_soon(self.writer.call, release.wait)
            await anyio.wait_all_tasks_blocked()
            for index in range(len(calls)):
                tg.start_soon(one, index)
                await anyio.wait_all_tasks_blocked()
            release.set()
        return results

    async def learn(self, *facts: ExtractedFact, **extra: Any) -> Changes:
        args: dict[str, Any] = {"session_id": "s1", "scope": "global", "extractor": "llm"}
        return await self.keeper.learn("u1", facts, **(args | extra))

    async def remember(self, content: str, **extra: Any) -> Changes:
        args: dict[str, Any] = {"category": None, "pinned": False, "session_id": "s1"}
        args |= {"scope": "global", "user_id": "u1"} | extra
        return await self.keeper.remember(content=content, **args)


@asynccontextmanager
async def world(facts: Recorder | None = None, **settings: Any) -> AsyncIterator[World]:
    facts = facts if facts is not None else Recorder()
    store = MemoryStore(facts=facts)
    writer = ArchiveWriter(store, EMBED, linger=0)
    keeper = FactKeeper(store, EMBED, writer, Settings(**settings), FixedClock())
    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        with anyio.fail_after(5):
            yield World(keeper, writer, facts)
        tg.cancel_scope.cancel()


def make(fact_id: str, content: str, **fields: Any) -> Fact:
    times = {"created_at": NOW - DAY, "updated_at": NOW - DAY, "last_seen": NOW - DAY}
    base: dict[str, Any] = {"user_id": "u1", "category": "knowledge", "confidence": 0.9, **times}
    return Fact(id=fact_id, content=content, **(base | {"last_confirmed_at": NOW - DAY} | fields))


def pick(fact: Fact, names: str) -> tuple[Any, ...]:
    return tuple(getattr(fact, name) for name in names.split())


def put(facts: Recorder, *made: Fact) -> None:
    for fact in made:
        facts.facts[(fact.user_id, fact.id)] = Stored(fact, EMBED.embed_one(fact.content))


def extracted(content: str, category: str = "preference", **extra: Any) -> ExtractedFact:
    base: dict[str, Any] = {"confidence": 0.8, "subject": "user", "predicate": "note"}
    return ExtractedFact(content=content, category=category, value=content, **(base | extra))


def line(line_id: str, content: str, **extra: Any) -> FactLine:
    return FactLine(id=line_id, content=content, category="knowledge", confidence=0.7, **extra)
