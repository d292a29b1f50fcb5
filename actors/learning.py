"""What a session learns: coalesced extraction after turns, and the end-of-session work.

One extraction per session is in flight at a time; turns that arrive meanwhile
wait and go into the next call. Extraction runs in a task the actor owns and
mails its result back, so working memory still changes only in the actor.
Turns whose extraction failed stay pending (``Progress`` in the store) and the
sweeper retries them, so an Ollama outage loses nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup

from actors.errors import MnemoError
from actors.events import EventBus, EventKind
from actors.extraction import ExtractionResult, Extractor
from actors.keeper import FactKeeper, changes_frame, emit_changes
from actors.notes import NoteKeeper
from actors.ports import Store
from actors.writer import ArchiveWriter
from memory.facts import Changes
from memory.prompts import Exchange
from memory.statements import People
from memory.working import apply_set
from schemas.records import Progress, WorkingMemory
from schemas.wire import ServerMessage

__all__ = ["Extracted", "ProgressBook", "SessionLearning"]

_log = logging.getLogger("mnemo.learning")
_FINAL_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class Extracted:
    """Mail from an extraction task to its actor."""

    batch: list[Exchange]
    result: ExtractionResult | None
    #: What storing the facts changed; None when storing failed (turns stay pending).
    changes: Changes | None = None


class ProgressBook:
    """Per-session extraction progress, written in coalesced batches by the writer."""

    def __init__(self, store: Store, writer: ArchiveWriter) -> None:
        self._store, self._writer = store, writer
        self._known: dict[tuple[str, str], Progress] = {}
        self._dirty: dict[tuple[str, str], Progress] = {}
        writer.add_flusher(self._flush)

    async def load(self, user_id: str, session_id: str) -> Progress | None:
        found = await self._store.facts.get_progress(user_id, session_id)
        if found is not None:
            self._known.setdefault((user_id, session_id), found)
        return self._known.get((user_id, session_id))

    def archived(self, user_id: str, session_id: str, scope: str, turn: int) -> None:
        old = self._known.get((user_id, session_id))
        done = old.extracted_through if old else 0
        self._set(
            Progress(
                user_id=user_id,
                session_id=session_id,
                scope=scope,
                extracted_through=done,
                last_turn=max(turn, old.last_turn if old else 0),
            )
        )

    def extracted(self, user_id: str, session_id: str, scope: str, through: int) -> None:
        old = self._known.get((user_id, session_id))
        last = max(through, old.last_turn if old else 0)
        done = max(through, old.extracted_through if old else 0)
        self._set(
            Progress(
                user_id=user_id,
                session_id=session_id,
                scope=scope,
                extracted_through=done,
                last_turn=last,
            )
        )

    def _set(self, progress: Progress) -> None:
        key = (progress.user_id, progress.session_id)
        self._known[key] = self._dirty[key] = progress
        self._writer.request_flush()

    def forget(self, user_id: str, session_id: str) -> None:
        self._known.pop((user_id, session_id), None)

    async def _flush(self) -> None:
        dirty, self._dirty = self._dirty, {}
        await self._store.facts.put_progress(list(dirty.values()))


@dataclass(frozen=True, slots=True)
class LearningDeps:
    extractor: Extractor
    keeper: FactKeeper
    notes: NoteKeeper
    progress: ProgressBook
    events: EventBus


class SessionLearning:
    """The learning half of one session actor. Only the actor's task calls it."""

    def __init__(
        self,
        user_id: str,
        session_id: str,
        scope: str,
        deps: LearningDeps,
        *,
        publish: Callable[[ServerMessage], None],
        spawn: Callable[[Callable[[], Awaitable[None]]], None],
    ) -> None:
        self._user, self._session, self._scope = user_id, session_id, scope
        self._deps, self._publish, self._spawn = deps, publish, spawn
        self._pending: list[Exchange] = []
        self._extracting = False
        #: The people this conversation named (and the user's stored facts name), for
        #: "she" or "Ana" in a later turn; loaded on the first extraction.
        self._people: People | None = None
        self.state = "idle"
        #: False once the app's notes were deleted with the session still on: its end
        #: writes no note (``SessionActor.forgo_note``).
        self.keep_note = True

    def add(self, exchange: Exchange) -> None:
        self._pending.append(exchange)
        self._deps.progress.archived(self._user, self._session, self._scope, exchange.turn)

    def start(self, tg: TaskGroup, deliver: Callable[[Extracted], Awaitable[None]]) -> None:
        """Start an extraction of everything pending unless one is in flight."""
        if self._extracting or not self._pending:
            return
        batch, self._pending = self._pending, []
        self._extracting = True
        self.state = "extracting"
        self._emit("extraction.started", turns=[e.turn for e in batch])
        tg.start_soon(self._extract, batch, deliver)

    async def _extract(
        self, batch: list[Exchange], deliver: Callable[[Extracted], Awaitable[None]]
    ) -> None:
        await deliver(await self._extract_and_store(batch))

    async def _extract_and_store(self, batch: list[Exchange]) -> Extracted:
        """Extraction and fact storage both run here, in the task, never in the actor:
        a reply never waits for the writer."""
        started = anyio.current_time()
        result = await self._try(batch)
        if result is None:
            return Extracted(batch, None)
        if result.failure is not None:
            failure = result.failure
            self._emit("llm.error", call="extract", code=failure.code, error=str(failure))
        self._emit(
            "extraction.finished",
            turns=[e.turn for e in batch],
            facts=len(result.extraction.facts) + len(result.reader),
            by_rules=result.by_rules,
            reader=len(result.reader),
            rejected=result.rejected,
            ms=round((anyio.current_time() - started) * 1000, 3),
        )
        try:
            changes = await self._deps.keeper.learn(
                self._user,
                result.extraction.facts,
                session_id=self._session,
                scope=self._scope,
                extractor="rules" if result.by_rules else "llm",
                reader=result.reader,
            )
        except MnemoError as exc:
            _log.warning("storing facts of session %s failed: %s", self._session, exc)
            self._emit("store.failed", error=str(exc))
            return Extracted(batch, result, None)
        emit_changes(self._deps.events, changes, self._user, self._session)
        return Extracted(batch, result, changes)

    async def _try(self, batch: Sequence[Exchange]) -> ExtractionResult | None:
        try:
            if self._people is None:
                self._people = await self._deps.keeper.cast(self._user)
            return await self._deps.extractor.extract(self._user, batch, people=self._people)
        except MnemoError as exc:
            _log.warning(
                "extraction for session %s failed, %d turns stay pending: %s",
                self._session,
                len(batch),
                exc,
            )
            self._emit("extraction.failed", turns=[e.turn for e in batch], error=str(exc))
            self._emit("llm.error", call="extract", code=exc.code, error=str(exc))
            return None

    def _emit(self, kind: EventKind, **data: Any) -> None:
        self._deps.events.emit(kind, session_id=self._session, user_id=self._user, **data)

    def apply(self, mail: Extracted, memory: WorkingMemory | None) -> WorkingMemory | None:
        """Use an extraction result in the actor: working-memory analysis, the ``memory``
        frame, progress. Returns the new working memory."""
        self._extracting = False
        self.state = "idle"
        result = mail.result
        if result is None:
            # Keep the turns: they go into the next extraction (or the sweeper's retry).
            self._pending[:0] = mail.batch
            return memory
        analysis = result.extraction.analysis
        if memory is not None and not result.by_rules:
            memory = apply_set(
                memory,
                self._session,
                memory.updated_at,
                topic=analysis.current_topic,
                variables=dict(analysis.context_variables),
                emotion=analysis.last_emotion,
            )
        if mail.changes is None:
            return memory  # not stored: the sweeper retries these turns
        frame = changes_frame(mail.changes)
        if frame is not None:
            self._publish(frame)
        if not result.by_rules:
            through = max(e.turn for e in mail.batch)
            self._deps.progress.extracted(self._user, self._session, self._scope, through)
        return memory

    async def finish(self, memory: WorkingMemory | None, exchanges: Sequence[Exchange]) -> None:
        """End of session: extract what is pending (awaited, bounded), then hand the
        conversation note (seed 003) to background work that the end does not wait for."""
        if self._pending:
            batch, self._pending = self._pending, []
            with anyio.move_on_after(_FINAL_TIMEOUT):
                self.apply(await self._extract_and_store(batch), memory)
        if exchanges:
            notes, note = self._deps.notes, self.keep_note
            self._spawn(notes.ended(self._user, self._scope, self._session, list(exchanges), note))
        self._deps.progress.forget(self._user, self._session)
