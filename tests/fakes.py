"""In-process fakes of the ports, for actor tests that run under any anyio backend."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import anyio

from actors.errors import ArchiveUnavailable, LlmFailure
from actors.ports import Page, ScoredMessage
from schemas.llm import ChatChunk, PromptMessage
from schemas.records import ArchivedMessage, WorkingMemory

__all__ = ["MemoryStore", "ScriptedLlm", "SteppingClock"]


@dataclass
class ScriptedLlm:
    """Replies from a script: a string is streamed word by word, an exception is raised,
    anything else (a ``BaseException`` class instance) crashes the stream."""

    script: list[str | BaseException] = field(default_factory=list)
    prompts: list[list[PromptMessage]] = field(default_factory=list)
    chunk_delay: float = 0.0

    async def stream_chat(
        self, messages: Sequence[PromptMessage], *, model: str
    ) -> AsyncIterator[ChatChunk]:
        self.prompts.append(list(messages))
        reply = self.script.pop(0) if self.script else "OK"
        if isinstance(reply, BaseException):
            raise reply
        words = reply.split(" ")
        for i, word in enumerate(words):
            if self.chunk_delay:
                await anyio.sleep(self.chunk_delay)
            yield ChatChunk(text=word if i == 0 else " " + word)
        yield ChatChunk(done=True, prompt_tokens=3, completion_tokens=len(words))

    async def aclose(self) -> None:
        pass


class SteppingClock:
    """Wall-clock time that advances one second per reading (deterministic timestamps)."""

    def __init__(self) -> None:
        self._now = datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        self._now += timedelta(seconds=1)
        return self._now


@dataclass
class MemoryStore:
    """The Store port in a dict. ``fail_appends`` makes that many appends fail first."""

    messages: list[ArchivedMessage] = field(default_factory=list)
    working: dict[tuple[str, str], WorkingMemory] = field(default_factory=dict)
    fail_appends: int = 0
    appends: list[int] = field(default_factory=list)
    optimizes: int = 0

    async def open(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    async def append_messages(
        self, rows: Sequence[ArchivedMessage], vectors: Sequence[Sequence[float]]
    ) -> None:
        assert len(rows) == len(vectors)
        if self.fail_appends:
            self.fail_appends -= 1
            raise ArchiveUnavailable("disk full (fake)")
        self.appends.append(len(rows))
        self.messages.extend(rows)

    def _of(self, user_id: str) -> list[ArchivedMessage]:
        return [m for m in self.messages if m.user_id == user_id]

    async def list_messages(self, user_id: str, *, limit: int, offset: int) -> Page:
        mine = sorted(self._of(user_id), key=lambda m: (m.at, m.id), reverse=True)
        return mine[offset : offset + limit], len(mine)

    async def session_messages(
        self, user_id: str, session_id: str, *, limit: int
    ) -> list[ArchivedMessage]:
        return [m for m in self._of(user_id) if m.session_id == session_id][-limit:]

    async def get_message(self, user_id: str, message_id: str) -> ArchivedMessage | None:
        return next((m for m in self._of(user_id) if m.id == message_id), None)

    async def delete_message(self, user_id: str, message_id: str) -> bool:
        before = len(self.messages)
        self.messages = [
            m for m in self.messages if not (m.user_id == user_id and m.id == message_id)
        ]
        return len(self.messages) < before

    async def clear_messages(self, user_id: str) -> int:
        before = len(self.messages)
        self.messages = [m for m in self.messages if m.user_id != user_id]
        return before - len(self.messages)

    async def search_messages(
        self, user_id: str, text: str, vector: Sequence[float], *, k: int
    ) -> list[ScoredMessage]:
        words = set(text.lower().split())
        hits = [(m, float(len(words & set(m.text.lower().split())))) for m in self._of(user_id)]
        return sorted((h for h in hits if h[1] > 0), key=lambda h: -h[1])[:k]

    async def put_working(self, items: Sequence[tuple[str, WorkingMemory]]) -> None:
        for user_id, memory in items:
            self.working[(user_id, memory.session_id)] = memory

    async def get_working(self, user_id: str, session_id: str) -> WorkingMemory | None:
        return self.working.get((user_id, session_id))

    async def delete_working(self, user_id: str, session_id: str) -> None:
        self.working.pop((user_id, session_id), None)

    async def optimize(self, *, cleanup_older_than: float) -> None:
        self.optimizes += 1


def llm_error(message: str = "boom") -> LlmFailure:
    return LlmFailure(message)
