"""FactKeeper's group commit: concurrent learning of many users shares one read and one write."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from actors.errors import ArchiveUnavailable
from actors.keeper import FactKeeper
from actors.writer import ArchiveWriter
from memory.facts import Changes, Stored
from memory.hashing import HashEmbedder
from schemas.llm import ExtractedFact
from schemas.settings import Settings
from tests.fakes import MemoryFacts, MemoryStore, SteppingClock

pytestmark = pytest.mark.anyio


class CountingFacts(MemoryFacts):
    """Counts the calls the batch makes; ``broken`` makes reads fail."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self.adds: list[int] = []
        self.puts: list[int] = []
        self.broken = False

    async def facts_of_users(self, user_ids: Sequence[str]) -> dict[str, list[Stored]]:
        self.reads += 1
        if self.broken:
            raise OSError("disk gone")
        return await super().facts_of_users(user_ids)

    async def add_facts(self, items: Sequence[Stored]) -> None:
        self.adds.append(len(items))
        await super().add_facts(items)

    async def put_facts(self, items: Sequence[Stored]) -> None:
        self.puts.append(len(items))
        await super().put_facts(items)


def found(content: str, category: str = "preference") -> ExtractedFact:
    return ExtractedFact(
        content=content,
        category=category,
        confidence=0.8,
        subject="user",
        predicate="note",
        value=content,
    )


async def learn_while_the_writer_is_busy(
    facts: CountingFacts, jobs: Sequence[tuple[str, str]]
) -> list[Changes | BaseException]:
    """Run ``learn`` for each (user, content) while the writer is held, so all of them
    queue up behind one call; then release the writer."""
    store = MemoryStore(facts=facts)
    embedder = HashEmbedder()
    writer = ArchiveWriter(store, embedder, linger=0)
    keeper = FactKeeper(store, embedder, writer, Settings(), SteppingClock())
    release = anyio.Event()
    results: list[Any] = [None] * len(jobs)

    async def one(index: int, user: str, content: str) -> None:
        try:
            results[index] = await keeper.learn(
                user, [found(content)], session_id="s1", scope="global", extractor="llm"
            )
        except ArchiveUnavailable as exc:
            results[index] = exc

    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        tg.start_soon(writer.call, release.wait)
        await anyio.wait_all_tasks_blocked()
        async with anyio.create_task_group() as learners:
            for index, (user, content) in enumerate(jobs):
                learners.start_soon(one, index, user, content)
            await anyio.wait_all_tasks_blocked()
            release.set()
        tg.cancel_scope.cancel()
    return results


async def test_learning_of_many_users_is_read_and_written_in_one_batch() -> None:
    facts = CountingFacts()
    users = [f"u{i}" for i in range(20)]
    results = await learn_while_the_writer_is_busy(facts, [(u, "Likes green tea") for u in users])
    assert facts.reads == 1
    assert facts.adds == [20]
    for user, changes in zip(users, results, strict=True):
        assert isinstance(changes, Changes)
        assert [s.fact.user_id for s in changes.added] == [user]
        assert [s.fact.content for s in await facts.facts_of(user)] == ["Likes green tea"]


async def test_two_jobs_of_one_user_in_a_batch_see_each_other() -> None:
    facts = CountingFacts()
    first, second = await learn_while_the_writer_is_busy(
        facts, [("u1", "Likes green tea"), ("u1", "likes green TEA")]
    )
    assert isinstance(first, Changes)
    assert isinstance(second, Changes)
    assert len(first.added) == 1
    assert not second.added
    [reinforced] = second.updated
    assert reinforced.id == first.added[0].fact.id
    [kept] = await facts.facts_of("u1")
    assert kept.fact.mention_count == 2
    assert facts.adds == [1]


async def test_a_failed_batch_fails_every_job_in_it_and_stores_nothing() -> None:
    facts = CountingFacts()
    facts.broken = True
    results = await learn_while_the_writer_is_busy(
        facts, [("u1", "Likes green tea"), ("u2", "Lives in Oslo")]
    )
    assert all(isinstance(r, ArchiveUnavailable) for r in results)
    assert facts.facts == {}
