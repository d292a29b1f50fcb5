"""End-of-conversation summaries: seed 003's per-app notes and seed 000's user profile.

Both run after a conversation ended, in the background; a failing model only
means no new note (or a FIFO compaction) and an unchanged profile.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import msgspec

from actors.errors import LlmFailure, LlmTimeout, MnemoError
from actors.events import EventBus
from actors.model_queue import ModelQueue
from actors.ports import Clock, Llm, Store
from actors.writer import ArchiveWriter
from memory.formats import clip_note
from memory.model_answers import answer_schema, answer_tokens
from memory.prompts import Exchange, note_decision_prompt, note_prompt, profile_prompt
from schemas.llm import NoteDecision, NoteText, ProfileSummary
from schemas.records import AppNote, UserProfile
from schemas.settings import Settings

__all__ = ["Ending", "NoteKeeper", "NoteStats"]

_log = logging.getLogger("mnemo.notes")
_NOTE_TIMEOUT = 30.0  # seed 003: a 30-second timeout, then skip
_note = msgspec.json.Decoder(NoteText)
_decision = msgspec.json.Decoder(NoteDecision)
_profile = msgspec.json.Decoder(ProfileSummary)
_SCHEMAS: dict[type, dict[str, Any]] = {
    t: answer_schema(t) for t in (NoteText, NoteDecision, ProfileSummary)
}


def _merged_meta(kept: dict[str, Any], merged: dict[str, Any]) -> dict[str, Any]:
    """Metadata of a note that absorbed another: the higher importance, both notes' tags
    and conversations."""
    related = [*kept.get("relatedConversations", []), *merged.get("relatedConversations", [])]
    return {
        "importance": max(int(kept.get("importance", 5)), int(merged.get("importance", 5))),
        "tags": sorted({*kept.get("tags", []), *merged.get("tags", [])}),
        "relatedConversations": list(dict.fromkeys(related)),
    }


class NoteStats:
    def __init__(self) -> None:
        self.created = 0
        self.skipped = 0
        self.compacted_by_model = 0
        self.compacted_fifo = 0
        self.profiles = 0


class Ending:
    """A conversation that ended and whose note and profile are still being written.

    ``note_void`` once its app's notes were deleted meanwhile, and both once all of its
    user's memory was."""

    __slots__ = ("app_id", "note_void", "profile_void", "user_id")

    def __init__(self, user_id: str, app_id: str) -> None:
        self.user_id, self.app_id = user_id, app_id
        self.note_void = self.profile_void = False


class NoteKeeper:
    def __init__(
        self,
        llm: Llm,
        store: Store,
        writer: ArchiveWriter,
        settings: Settings,
        clock: Clock,
        events: EventBus | None = None,
        queue: ModelQueue | None = None,
    ) -> None:
        self._llm, self._store, self._writer = llm, store, writer
        self._settings, self._clock = settings, clock
        self._queue = queue or ModelQueue(settings.extract_concurrency)
        self._events = events or EventBus()
        self.stats = NoteStats()
        #: Conversations whose note and profile are being written (see ``forget``).
        self._endings: set[Ending] = set()

    def ended(
        self,
        user_id: str,
        scope: str,
        session_id: str,
        exchanges: Sequence[Exchange],
        note: bool = True,
    ) -> Callable[[], Awaitable[None]]:
        """The work of a conversation that has just ended, for the caller to run in the
        background: the app's note (when the session belongs to an app and ``note``), then
        the profile. The conversation counts as ending from this call on, so a ``forget``
        made before the work even starts voids it."""
        ending = Ending(user_id, scope)
        ending.note_void = not note
        self._endings.add(ending)

        async def work() -> None:
            try:
                if scope != "global" and not ending.note_void:
                    await self.create_note(user_id, scope, session_id, exchanges, ending)
                await self.update_profile(user_id, exchanges, ending)
            finally:
                self._endings.discard(ending)

        return work

    def forget(self, user_id: str, app_id: str | None = None) -> None:
        """The user deleted the notes of ``app_id`` (every app and the profile when None):
        notes and profiles of conversations that ended before and are still being written
        are not stored. Call it in the writer's call that deletes them: the writer runs one
        call at a time, so each such write lands either before the delete or not at all."""
        for ending in self._endings:
            if ending.user_id == user_id and app_id in (None, ending.app_id):
                ending.note_void = True
                ending.profile_void = ending.profile_void or app_id is None

    async def _ask(self, user_id: str, system: str, prompt: str, kind: type) -> str:
        """One structured call in the user's turn (``actors.model_queue``); the timeout
        counts from the turn, not from the wait for it. Raises ``LlmTimeout`` past it."""
        async with self._queue.turn(user_id):
            with anyio.move_on_after(_NOTE_TIMEOUT):
                return await self._llm.generate_json(
                    prompt,
                    model=self._settings.extract_model,
                    schema=_SCHEMAS[kind],
                    system=system,
                    max_tokens=answer_tokens(_SCHEMAS[kind]),
                )
        raise LlmTimeout(
            f"no whole {kind.__name__} answer from {self._settings.extract_model!r} "
            f"within {_NOTE_TIMEOUT:g} s (seed 003's limit)"
        )

    async def create_note(
        self,
        user_id: str,
        app_id: str,
        session_id: str,
        exchanges: Sequence[Exchange],
        ending: Ending | None = None,
    ) -> AppNote | None:
        """Seed 003: one 2-4 sentence note per ended conversation; past the limit, compact."""
        system, prompt = note_prompt(app_id, exchanges)
        started = anyio.current_time()
        try:
            text = _note.decode(await self._ask(user_id, system, prompt, NoteText))
        except (LlmFailure, TimeoutError, msgspec.DecodeError) as exc:
            self.stats.skipped += 1
            _log.warning("no note for session %s of app %s: %s", session_id, app_id, exc)
            self._events.emit(
                "note.failed", session_id=session_id, user_id=user_id, app=app_id, error=str(exc)
            )
            return None
        now = self._clock.now()
        note = AppNote(
            id="note_" + secrets.token_hex(4),
            user_id=user_id,
            app_id=app_id,
            content=clip_note(text.content),
            created_at=now,
            updated_at=now,
            source_session_id=session_id,
            meta={
                "importance": text.importance,
                "tags": sorted({t.strip().casefold() for t in text.tags if t.strip()}),
                "relatedConversations": [session_id],
            },
        )
        ending = ending or Ending(user_id, app_id)

        async def put() -> None:
            if not ending.note_void:
                await self._store.facts.put_notes([note])

        stored = await self._store_twice(put)
        if not stored or ending.note_void:
            self.stats.skipped += 1
            error = "forgotten" if ending.note_void else "store"
            _log.info("no note for session %s of app %s: %s", session_id, app_id, error)
            self._events.emit(
                "note.failed", session_id=session_id, user_id=user_id, app=app_id, error=error
            )
            return None
        self.stats.created += 1
        _log.info("created note %s for app %s from session %s", note.id, app_id, session_id)
        self._events.emit(
            "note.created",
            session_id=session_id,
            user_id=user_id,
            app=app_id,
            id=note.id,
            llm_ms=round((anyio.current_time() - started) * 1000, 3),
        )
        await self.compact(user_id, app_id, note)
        return note

    async def compact(self, user_id: str, app_id: str, new: AppNote) -> None:
        """Keep at most ``notes_per_app``: the model picks one note to delete or edit; when
        it fails or answers something invalid, the oldest goes (FIFO)."""
        limit = self._settings.notes_per_app
        if await self._store.facts.count_notes(user_id, app_id) <= limit:
            return
        notes = await self._store.facts.notes_of(user_id, app_id)
        existing = [n for n in notes if n.id != new.id]
        decision = await self._decide(existing, new, limit)
        if decision is not None and await self._store_twice(
            lambda: self._apply(user_id, app_id, notes, decision)
        ):
            self.stats.compacted_by_model += 1
            self._events.emit(
                "note.compacted",
                user_id=user_id,
                app=app_id,
                action=decision.action,
                target=decision.target_id,
                by="model",
            )
        notes = await self._store.facts.notes_of(user_id, app_id)
        if len(notes) > limit:
            by_age = sorted(notes, key=lambda n: (n.created_at, n.id))
            oldest = [n.id for n in by_age[: len(notes) - limit]]
            await self._store_twice(lambda: self._store.facts.delete_notes(user_id, app_id, oldest))
            self.stats.compacted_fifo += 1
            _log.info("compacted notes of app %s by FIFO: deleted %s", app_id, oldest)
            self._events.emit(
                "note.compacted",
                user_id=user_id,
                app=app_id,
                action="delete",
                target=oldest[0] if len(oldest) == 1 else oldest,
                by="fifo",
            )

    async def _store_twice(self, write: Callable[[], Awaitable[object]]) -> bool:
        """Seed 003: a database error is logged and the write retried once, then given up."""
        for attempt in (1, 2):
            try:
                await self._writer.call(write)
                return True
            except MnemoError as exc:
                _log.warning("note store write failed (attempt %d of 2): %s", attempt, exc)
        return False

    async def _decide(
        self, existing: Sequence[AppNote], new: AppNote, limit: int
    ) -> NoteDecision | None:
        system, prompt = note_decision_prompt(existing, new, keep=limit)
        try:
            decision = _decision.decode(await self._ask(new.user_id, system, prompt, NoteDecision))
        except (LlmFailure, TimeoutError, msgspec.DecodeError) as exc:
            _log.warning("note compaction decision failed, falling back to FIFO: %s", exc)
            return None
        ids = {n.id for n in existing} | {new.id}
        if decision.target_id not in ids:
            _log.warning("note compaction named unknown note %r: FIFO", decision.target_id)
            return None
        if decision.action == "edit" and not (decision.new_content or "").strip():
            _log.warning("note compaction edit without content: FIFO")
            return None
        if decision.action == "edit" and decision.target_id == new.id:
            _log.warning("note compaction edit of the new note keeps 11: FIFO")
            return None
        return decision

    async def _apply(
        self, user_id: str, app_id: str, notes: Sequence[AppNote], decision: NoteDecision
    ) -> None:
        """Delete the target, or (edit) merge: rewrite the target and drop the newest note,
        whose content the rewrite now carries."""
        if decision.action == "delete":
            await self._store.facts.delete_notes(user_id, app_id, [decision.target_id])
            _log.info(
                "compacted notes of app %s: deleted %s (%s)",
                app_id,
                decision.target_id,
                decision.reason,
            )
            return
        target = next(n for n in notes if n.id == decision.target_id)
        newest = max(notes, key=lambda n: (n.created_at, n.id))
        edited = msgspec.structs.replace(
            target,
            content=clip_note(decision.new_content or ""),
            updated_at=self._clock.now(),
            meta=_merged_meta(target.meta, newest.meta),
        )
        await self._store.facts.put_notes([edited])
        await self._store.facts.delete_notes(user_id, app_id, [newest.id])
        _log.info(
            "compacted notes of app %s: merged %s into %s (%s)",
            app_id,
            newest.id,
            target.id,
            decision.reason,
        )

    async def update_profile(
        self, user_id: str, exchanges: Sequence[Exchange], ending: Ending | None = None
    ) -> None:
        """Seed 000's summaries (work, personal, top of mind; recent, earlier, background);
        not stored when the user's memory was cleared while it was being written."""
        try:
            previous = await self._store.facts.get_profile(user_id)
            facts = [s.fact for s in await self._store.facts.facts_of(user_id)][:50]
            shown = msgspec.json.encode(previous).decode() if previous else ""
            system, prompt = profile_prompt(facts, exchanges, shown)
            summary = _profile.decode(await self._ask(user_id, system, prompt, ProfileSummary))
        except (MnemoError, TimeoutError, msgspec.DecodeError) as exc:
            _log.warning("profile of user %s not updated: %s", user_id, exc)
            return
        profile = UserProfile(
            user_id=user_id, updated_at=self._clock.now(), **msgspec.structs.asdict(summary)
        )

        async def put() -> bool:
            if ending is not None and ending.profile_void:
                return False
            await self._store.facts.put_profile(profile)
            return True

        if await self._writer.call(put):
            self.stats.profiles += 1
