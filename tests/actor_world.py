"""A running registry + writer over in-memory fakes, for actor tests under any backend."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from actors.mailbox import ActorMessage, SessionDeps
from actors.registry import SessionRegistry
from actors.sweeper import Sweeper
from actors.wiring import build_deps
from actors.writer import ArchiveWriter
from memory.hashing import HashEmbedder
from schemas.records import WorkingMemory
from schemas.settings import Settings
from schemas.wire import ServerMessage
from tests.fakes import MemoryStore, ScriptedLlm, SteppingClock

__all__ = ["World", "world"]


@dataclass
class World:
    registry: SessionRegistry
    writer: ArchiveWriter
    store: MemoryStore
    llm: ScriptedLlm
    deps: SessionDeps
    sweeper: Sweeper
    unsubscribers: list[Callable[[], None]] = field(default_factory=list)

    async def ask(
        self, message: ActorMessage, *, user: str = "u1", session: str = "s1"
    ) -> list[ServerMessage]:
        """Submit one message and collect every answer until the actor closes the stream."""
        outbox, replies = anyio.create_memory_object_stream[ServerMessage](100)
        with outbox:
            await self.registry.submit(user, session, message, outbox)
        with anyio.fail_after(3600), replies:
            return [m async for m in replies]

    def memory(self, user: str = "u1", session: str = "s1") -> WorkingMemory | None:
        """The live session's working memory (the session must be live)."""
        actor = self.registry.get(user, session)
        assert actor is not None, f"session {session} is not live"
        return actor.memory

    def subscribe(
        self, *, user: str = "u1", session: str = "s1"
    ) -> MemoryObjectReceiveStream[ServerMessage]:
        """Pushed frames of a session (the test closes the returned stream)."""
        send, receive = anyio.create_memory_object_stream[ServerMessage](100)
        self.unsubscribers.append(self.registry.subscribe(user, session, send))
        return receive

    async def settle(self) -> None:
        """Let background work (extraction, coalesced writes) finish."""
        await anyio.sleep(5)
        await self.writer.call(_noop)
        await self.deps.fact_writer.call(_noop)


async def _noop() -> None:
    return None


@asynccontextmanager
async def world(**changes: Any) -> AsyncIterator[World]:
    settings = Settings(**{"idle_timeout": 1800.0, "ack_timeout": 5.0, **changes})
    store, llm = MemoryStore(), ScriptedLlm()
    writer = ArchiveWriter(
        store,
        HashEmbedder(),
        linger=0.0,
        optimize_interval=60.0,
        flush=store.flush_messages,
        flush_interval=settings.archive_flush_interval,
    )
    fact_writer = ArchiveWriter(
        store, HashEmbedder(), optimize_interval=60.0, optimizer=store.facts.optimize
    )
    deps = build_deps(
        settings,
        llm=llm,
        embedder=HashEmbedder(),
        store=store,
        writer=writer,
        fact_writer=fact_writer,
        clock=SteppingClock(),
        extract_backoff=0.01,
    )
    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        await tg.start(fact_writer.run)
        async with anyio.create_task_group() as sessions:
            registry = SessionRegistry(sessions, deps)
            w = World(registry, writer, store, llm, deps, Sweeper(deps, registry))
            try:
                yield w
            finally:
                for unsubscribe in w.unsubscribers:
                    unsubscribe()
            sessions.cancel_scope.cancel()
        tg.cancel_scope.cancel()
