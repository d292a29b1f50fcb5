"""FactKeeper: applies learned and hand-made facts to the store, through the single writer.

Every change is a read-modify-write of one user's active facts inside the
writer's task, so two sessions of a user never race each other's dedup. The
rules themselves (duplicates, conflicts, caps, decay) are pure: ``memory.facts``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import anyio
import msgspec

from actors.audit import record, record_one
from actors.errors import ArchiveUnavailable, MnemoError, Rejected
from actors.events import EventBus, EventKind
from actors.ports import Clock, Embedder, Store
from actors.writer import ArchiveWriter
from memory.decay import pin, sweep_fact, touch_accessed
from memory.events import EventMaker, fact_events, new_event_id, sweep_events
from memory.facts import (
    Candidate,
    Changes,
    FactPolicy,
    Stored,
    apply_candidates,
    candidate_from_extracted,
    normalize_category,
)
from memory.keywords import expresses_preference
from memory.links import change_links
from memory.rules_extractor import extract_facts, structure_of
from memory.statements import People, Speaker
from memory.transfer import candidate_from_line
from schemas.llm import ExtractedFact
from schemas.records import Fact
from schemas.settings import Settings
from schemas.taxonomy import PERMANENCE_DECAY
from schemas.transfer import FactLine
from schemas.wire import FactConflict, FactView, MemoryChanged

__all__ = ["FactEdit", "FactKeeper", "Stated", "changes_frame", "emit_changes", "fact_view"]

_log = logging.getLogger("mnemo.facts")


def fact_view(fact: Fact) -> FactView:
    return msgspec.convert(msgspec.to_builtins(fact), FactView)


def changes_frame(changes: Changes, ident: str | None = None) -> MemoryChanged | None:
    """The ``memory`` frame for ``changes``; None when nothing changed (and no request waits)."""
    frame = MemoryChanged(
        id=ident,
        added=[fact_view(s.fact) for s in changes.added],
        updated=[fact_view(f) for f in changes.updated],
        superseded=[fact_view(f) for f in changes.superseded],
        removed=[f.id for f in changes.removed],
        conflicts=[
            FactConflict(id=c.fact_id, kept_id=c.kept_id, reason=c.reason)
            for c in changes.conflicts
        ],
    )
    if ident is None and not (frame.added or frame.updated or frame.superseded or frame.removed):
        return None
    return frame


def emit_changes(events: EventBus, changes: Changes, user_id: str, session_id: str | None) -> None:
    """Tail events for what learning changed: a repeated fact is reinforced, a fact pushed
    out by the cap is evicted, a new fact contradicting a kept one is conflicted."""
    found: list[tuple[EventKind, list[Fact]]] = [
        ("facts.added", [s.fact for s in changes.added]),
        ("facts.reinforced", changes.updated),
        ("facts.superseded", changes.superseded),
        ("facts.evicted", changes.removed),
    ]
    for kind, facts in found:
        if facts:
            events.emit(
                kind,
                session_id=session_id,
                user_id=user_id,
                facts=[{"id": f.id, "content": f.content, "category": f.category} for f in facts],
            )
    if changes.conflicts:
        events.emit(
            "facts.conflicted",
            session_id=session_id,
            user_id=user_id,
            conflicts=[
                {"id": c.fact_id, "kept_id": c.kept_id, "reason": c.reason}
                for c in changes.conflicts
            ],
        )


@dataclass(slots=True, eq=False)
class _Job:
    user_id: str
    candidates: Sequence[Candidate]
    changes: Changes | None = None
    error: MnemoError | None = None


class _Writes:
    """The final state of every fact a batch of jobs touched, written at once."""

    def __init__(self) -> None:
        self._new: dict[tuple[str, str], Stored] = {}
        self._changed: dict[tuple[str, str], Stored] = {}
        self._removed: dict[str, list[str]] = {}

    def fold(self, current: Sequence[Stored], changes: Changes) -> list[Stored]:
        """Record ``changes``; return the user's active facts after them."""
        vectors = {s.fact.id: s.vector for s in current}
        for stored in changes.added:
            self._new[(stored.fact.user_id, stored.fact.id)] = stored
            vectors[stored.fact.id] = stored.vector
        for fact in [*changes.updated, *changes.superseded]:
            key = (fact.user_id, fact.id)
            stored = Stored(fact, vectors[fact.id])
            if key in self._new:
                self._new[key] = stored
            else:
                self._changed[key] = stored
        for fact in changes.removed:
            key = (fact.user_id, fact.id)
            if self._new.pop(key, None) is None:
                self._changed.pop(key, None)
                self._removed.setdefault(fact.user_id, []).append(fact.id)
        latest = {f.id: f for f in [*changes.updated, *changes.superseded]}
        gone = {f.id for f in changes.removed}
        after = [Stored(latest.get(s.fact.id, s.fact), s.vector) for s in current]
        return [
            s
            for s in [*after, *changes.added]
            if s.fact.validity == "active" and s.fact.id not in gone
        ]

    async def commit(self, store: Store) -> None:
        """New facts are appended; when stored facts changed too (superseded, reinforced),
        new and changed go in one write, so that no reader ever sees a new fact beside the
        old one it replaces, or the old one gone before the new one is there."""
        if self._changed:
            await store.facts.put_facts([*self._new.values(), *self._changed.values()])
        else:
            await store.facts.add_facts(list(self._new.values()))
        for user_id, ids in self._removed.items():
            await store.facts.delete_facts(user_id, ids, purge_now=False)


@dataclass(frozen=True, slots=True)
class Stated:
    """What seed 002's ``store_fact`` says of a hand-made fact beside its text: its key
    (subject and predicate: a fact on a taken one-valued key replaces the old one), its
    importance (0..10), permanence, tags and the entity it is about (which must exist)."""

    subject: str | None = None
    predicate: str | None = None
    importance: float = 5.0
    permanence: str | None = None
    tags: Sequence[str] = ()
    entity_id: str | None = None
    #: Who makes it: ``manual`` (by hand), ``consolidation``, and from where.
    extractor: str = "manual"
    source_scope: str | None = None
    source_episode_id: str | None = None


@dataclass(frozen=True, slots=True)
class FactEdit:
    """A partial update (seed 000: only the given fields change; ``created_at`` never)."""

    content: str | None = None
    category: str | None = None
    confidence: float | None = None
    pinned: bool | None = None


class FactKeeper:
    """Shared by every session and REST handler of the server."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        writer: ArchiveWriter,
        settings: Settings,
        clock: Clock,
        bus: EventBus | None = None,
        classify: Callable[[str, str], Awaitable[str | None]] | None = None,
    ) -> None:
        self._store, self._embedder, self._writer = store, embedder, writer
        self._settings, self._clock, self._bus = settings, clock, bus
        #: The model's category for a fact added by hand (``Extractor.classify``).
        self._classify = classify
        self._policy = FactPolicy.from_settings(settings)
        self._touched: dict[str, dict[str, int]] = {}
        self._jobs: list[_Job] = []
        #: Held by every read-modify-write of facts: the group commits of a journaling
        #: store (beside the writer) and the writer's own changes of facts take turns.
        self.lane = anyio.Lock()
        writer.add_flusher(self._flush_touches)

    # -- learning ------------------------------------------------------------

    async def learn(
        self,
        user_id: str,
        extracted: Sequence[ExtractedFact],
        *,
        session_id: str | None,
        scope: str,
        extractor: str,
        source: str = "inferred",
        reader: Sequence[ExtractedFact] = (),
    ) -> Changes:
        """Store what extraction found, and ``reader``: the rule-based reader's facts found
        beside a model's (stored first, as ``extractor="rules"``). Unknown categories are
        rejected and logged (seed 000)."""
        accepted: list[tuple[ExtractedFact, str, str]] = []
        for fact, by in [*((f, "rules") for f in reader), *((f, extractor) for f in extracted)]:
            category = normalize_category(fact.category, self._settings.categories)
            if category is None:
                _log.warning(
                    "rejected fact with unknown category %r: %s", fact.category, fact.content
                )
                continue
            if fact.permanence is not None and fact.permanence not in PERMANENCE_DECAY:
                fact = msgspec.structs.replace(fact, permanence=None)  # seed 002: default it
            accepted.append((fact, category, by))
        if not accepted:
            return Changes()
        vectors = await self._embedder.embed([f.content for f, _, _ in accepted])
        candidates = [
            candidate_from_extracted(
                fact,
                category=category,
                vector=vector,
                user_id=user_id,
                scope=scope,
                session_id=session_id,
                # The rule-based extractor only reads the user's own first-person statements.
                source="user_stated" if fact.confidence >= 0.9 or by == "rules" else source,
                extractor=by,
            )
            for (fact, category, by), vector in zip(accepted, vectors, strict=True)
        ]
        return await self._submit(user_id, candidates)

    async def remember(
        self,
        user_id: str,
        content: str,
        *,
        category: str | None,
        pinned: bool,
        session_id: str | None,
        scope: str,
        stated: Stated | None = None,
    ) -> Changes:
        """A fact added by hand. Without a category the model classifies it (seed 004),
        and the rules when it cannot. Raises ``ValueError`` for an unknown category, blank
        content, or ``stated`` fields that are wrong (``Stated``)."""
        stated = stated or Stated()
        if category is None and self._classify is not None and stated.extractor == "manual":
            category = await self._classify(user_id, content)
        if category is None:
            category = _guess_category(content)
        name = normalize_category(category, self._settings.categories)
        if name is None:
            known = ", ".join(c.name for c in self._settings.categories)
            raise ValueError(f"unknown category {category!r}; known: {known}")
        if pinned:
            held = [s.fact for s in await self._store.facts.facts_of(user_id) if s.fact.pinned]
            if len([f for f in held if f.content != content]) >= self._settings.max_pinned:
                raise ValueError(f"at most {self._settings.max_pinned} pinned facts")
        if stated.entity_id is not None:
            entities = await self._store.entities.entities_of(user_id)
            if not any(e.id == stated.entity_id and "merged_into" not in e.meta for e in entities):
                raise ValueError(f"entity {stated.entity_id} does not exist")
        [vector] = await self._embedder.embed([content])
        # Its structure, when it reads as one statement: a new address replaces the old;
        # a subject and predicate given with it are its key (seed 002's store_fact).
        shape = structure_of(content)
        if stated.predicate is not None:
            shape = ExtractedFact(
                content=content,
                category="knowledge",
                confidence=1.0,
                subject=stated.subject or "user",
                predicate=stated.predicate,
                value=content,
            )
        candidate = Candidate(
            user_id=user_id,
            content=content,
            category=name,
            # Seed 002's store_fact (a fact given with its key) starts at full confidence.
            confidence=1.0 if stated.predicate is not None else self._settings.manual_confidence,
            vector=vector,
            subject=shape.subject if shape else None,
            predicate=shape.predicate if shape else None,
            key=shape.key if shape else None,
            value=shape.value if shape else None,
            relation=shape.relation if shape else None,
            negated=shape.negated if shape else False,
            # Consolidation infers what episodes show; by hand, the user states it.
            source="user_stated" if stated.extractor == "manual" else "inferred",
            extractor=stated.extractor,
            scope=scope,
            session_id=session_id,
            pinned=pinned,
            permanence=stated.permanence,
            importance=stated.importance,
            tags=stated.tags,
            entity_id=stated.entity_id,
            source_scope=stated.source_scope,
            source_episode_id=stated.source_episode_id,
        )
        return await self._submit(user_id, [candidate])

    async def _submit(self, user_id: str, candidates: Sequence[Candidate]) -> Changes:
        """Group commit: queue the candidates; the first to commit applies every queued
        job, of every user, with one read and one or two writes for the whole batch.

        A store that journals facts (``Store.journals_learned``) makes them durable in a few
        milliseconds: they are committed in the caller's task, in ``lane``, never behind a
        long write of another kind (a consolidation's rules) queued at the writer. Else
        through the writer (a cluster node's: each write fenced by its epoch there)."""
        job = _Job(user_id, candidates)
        self._jobs.append(job)
        if self._store.journals_learned:
            async with self.lane:
                try:
                    await self._apply_jobs()
                except MnemoError:
                    pass  # every job of that batch holds the error
        else:
            await self._writer.call(self._apply_jobs, barrier=False)
        if job.error is not None:
            raise job.error
        assert job.changes is not None
        return job.changes

    async def import_facts(self, user_id: str, lines: Sequence[FactLine]) -> Changes:
        """Store checked fact lines (``memory.transfer.parse_line``) as imported facts.

        Left out, into ``skipped``: lines not ``active``, and lines whose id names
        one of the user's facts or the source of one (imported before); the rules
        skip duplicates of stored facts too.
        """
        known = await self._known_ids(user_id)
        fresh: dict[str, FactLine] = {}
        skipped: list[tuple[str, str]] = []
        for line in lines:
            if line.validity != "active":
                skipped.append((line.content, "not active"))
            elif line.id in known or line.id in fresh:
                skipped.append((line.content, "imported before"))
            else:
                fresh[line.id] = line
        vectors = await self._embedder.embed([line.content for line in fresh.values()])
        candidates = [
            candidate_from_line(line, vector=vector, user_id=user_id)
            for line, vector in zip(fresh.values(), vectors, strict=True)
        ]

        async def apply() -> Changes:
            # Checked again in the writer's task: another import may have landed meanwhile.
            known = await self._known_ids(user_id)
            job = _Job(user_id, [c for c in candidates if c.source_id not in known])
            skipped.extend(
                (c.content, "imported before") for c in candidates if c.source_id in known
            )
            async with self.lane:
                await self._apply([job])
            assert job.changes is not None
            job.changes.skipped.extend(skipped)
            return job.changes

        return await self._writer.call(apply)

    async def _known_ids(self, user_id: str) -> set[str]:
        """The ids of the user's facts (any validity) and the import lines they came from."""
        stored = await self._store.facts.facts_of(user_id, active_only=False)
        return {s.fact.id for s in stored} | {s.fact.source_id for s in stored if s.fact.source_id}

    async def _apply_jobs(self) -> None:
        jobs, self._jobs = self._jobs, []
        if not jobs:
            return  # an earlier call of this batch applied them
        await self._apply(jobs)

    async def _apply(self, jobs: Sequence[_Job]) -> None:
        try:
            existing = await self._store.facts.facts_of_users(sorted({j.user_id for j in jobs}))
            now = self._clock.now()
            writes = _Writes()
            for job in jobs:
                current = existing[job.user_id]
                job.changes = apply_candidates(
                    current, job.candidates, policy=self._policy, now=now
                )
                for content, reason in job.changes.skipped:
                    _log.info("skipped fact (%s): %s", reason, content)
                existing[job.user_id] = writes.fold(current, job.changes)
            await writes.commit(self._store)
            events = [
                event
                for job in jobs
                if job.changes is not None and job.candidates
                for event in fact_events(
                    job.changes,
                    EventMaker(job.user_id, job.candidates[0].extractor, now, new_event_id),
                )
            ]
            await record(self._store, self._bus, events)
            links = [
                link
                for job in jobs
                if job.changes is not None
                for link in change_links(job.user_id, job.changes, now)
            ]
            await self._store.links.add_links(links)
        except (MnemoError, OSError, ValueError, RuntimeError) as exc:
            error = exc if isinstance(exc, MnemoError) else ArchiveUnavailable(str(exc))
            for job in jobs:
                job.error = error
            raise error from None

    async def cast(self, user_id: str) -> People:
        """The people the user's active facts name ("Mike", the user's brother), so that a
        later message's "Mike moved to Denver" is about him. Raises ``MnemoError``."""
        people = People()
        for stored in await self._store.facts.facts_of(user_id):
            fact = stored.fact
            if fact.subject and fact.relation and fact.subject.casefold() not in ("user", "用户"):
                if fact.subject != fact.relation:
                    people.meet(Speaker(name=fact.subject, relation=fact.relation))
        people.last = people.other = None
        return people

    # -- editing (REST and the panel) ------------------------------------------

    async def edit(self, user_id: str, fact_id: str, change: FactEdit) -> Fact | None:
        """Apply a partial update; None when the user has no such fact.

        Raises ``ValueError`` for an unknown category, a confidence outside 0..1,
        blank content, or pinning past the cap.
        """
        if change.category is not None:
            category = normalize_category(change.category, self._settings.categories)
            if category is None:
                raise ValueError(f"unknown category {change.category!r}")
            change = FactEdit(change.content, category, change.confidence, change.pinned)
        if change.confidence is not None and not 0.0 <= change.confidence <= 1.0:
            raise ValueError("confidence must be within 0..1")
        if change.content is not None and not change.content.strip():
            raise ValueError("content must not be blank")
        vector = None
        if change.content is not None:
            [vector] = await self._embedder.embed([change.content])
        return await self._writer.call(
            lambda: self._edit(user_id, fact_id, change, vector), barrier=False
        )

    async def _edit(
        self, user_id: str, fact_id: str, change: FactEdit, vector: list[float] | None
    ) -> Fact | None:
        async with self.lane:
            return await self._edit_now(user_id, fact_id, change, vector)

    async def _edit_now(
        self, user_id: str, fact_id: str, change: FactEdit, vector: list[float] | None
    ) -> Fact | None:
        found = await self._store.facts.get_facts(user_id, [fact_id])
        if not found:
            return None
        stored = found[0]
        now = self._clock.now()
        fact = stored.fact
        if change.pinned is not None and change.pinned != fact.pinned:
            pinned = sum(1 for s in await self._store.facts.facts_of(user_id) if s.fact.pinned)
            try:
                fact = pin(fact, change.pinned, pinned, self._settings.max_pinned, now=now)
            except ValueError as exc:  # raised inside the writer: must not look like a disk fault
                raise Rejected(str(exc)) from None
        fields = {
            k: v
            for k, v in (
                ("content", change.content),
                ("category", change.category),
                ("confidence", change.confidence),
            )
            if v is not None
        }
        fact = msgspec.structs.replace(fact, **fields, updated_at=now)
        await self._store.facts.put_facts([Stored(fact, vector or stored.vector)])
        changed = sorted([*fields, *(["pinned"] if fact.pinned != stored.fact.pinned else [])])
        await record_one(
            self._store,
            self._bus,
            user_id,
            now,
            "fact_edited",
            fact_id=fact.id,
            fields=changed,
        )
        return fact

    async def confirm(self, user_id: str, fact_id: str) -> Fact | None:
        """Seed 002's ``confirm``: decay counts from now again, a fading mark is cleared;
        None when the user has no such fact."""
        return await self._writer.call(
            lambda: self._mark(user_id, fact_id, "fact_confirmed"), barrier=False
        )

    async def forget(self, user_id: str, fact_id: str) -> Fact | None:
        """Seed 002's ``forget``: an active fact becomes ``retracted`` (kept as history, never
        recalled again); None when the user has no such fact."""
        return await self._writer.call(
            lambda: self._mark(user_id, fact_id, "fact_retracted"), barrier=False
        )

    async def _mark(self, user_id: str, fact_id: str, event_type: str) -> Fact | None:
        async with self.lane:
            return await self._mark_now(user_id, fact_id, event_type)

    async def _mark_now(self, user_id: str, fact_id: str, event_type: str) -> Fact | None:
        found = await self._store.facts.get_facts(user_id, [fact_id])
        if not found:
            return None
        stored, now = found[0], self._clock.now()
        fact = stored.fact
        if event_type == "fact_confirmed":
            fact = msgspec.structs.replace(fact, last_confirmed_at=now, status=None, updated_at=now)
        elif fact.validity == "active":
            fact = msgspec.structs.replace(fact, validity="retracted", updated_at=now)
        else:
            return fact  # already history: forgetting it again changes nothing
        await self._store.facts.put_facts([Stored(fact, stored.vector)])
        await record_one(self._store, self._bus, user_id, now, event_type, fact_id=fact.id)
        return fact

    async def delete(self, user_id: str, fact_id: str) -> bool:
        """Delete one fact for good (old versions purged); False when there is none."""

        async def write() -> int:
            async with self.lane:
                return await delete_now()

        async def delete_now() -> int:
            deleted = await self._store.facts.delete_facts(user_id, [fact_id], purge_now=True)
            if deleted:
                await self._store.links.delete_links_of(user_id, "fact", [fact_id])
                await record_one(
                    self._store,
                    self._bus,
                    user_id,
                    self._clock.now(),
                    "fact_deleted",
                    fact_id=fact_id,
                )
            return deleted

        return await self._writer.call(write) > 0

    # -- access tracking and decay ---------------------------------------------

    def touch_nowait(self, user_id: str, fact_ids: Sequence[str]) -> None:
        """Count that these facts went into a context (seed 001); written in coalesced batches."""
        if not fact_ids:
            return
        counts = self._touched.setdefault(user_id, {})
        for fact_id in fact_ids:
            counts[fact_id] = counts.get(fact_id, 0) + 1
        self._writer.request_flush()

    async def reference(self, user_id: str, fact_id: str) -> Fact | None:
        """Seed 002's ``get_memory`` of a fact: read it and count the reference
        (``access_count`` + 1, ``last_accessed`` now) in one writer step; None when the user
        has no such fact."""

        async def write() -> Fact | None:
            async with self.lane:
                found = await self._store.facts.get_facts(user_id, [fact_id])
                if not found:
                    return None
                [fact] = touch_accessed([found[0].fact], self._clock.now())
                await self._store.facts.put_facts([Stored(fact, found[0].vector)])
                return fact

        return await self._writer.call(write, barrier=False)

    async def _flush_touches(self) -> None:
        async with self.lane:
            await self._flush_touches_now()

    async def _flush_touches_now(self) -> None:
        touched, self._touched = self._touched, {}
        now = self._clock.now()
        keys = [(user, fact_id) for user, counts in touched.items() for fact_id in counts]
        writes = []
        for item in await self._store.facts.get_facts_by_key(keys):
            fact = item.fact
            for _ in range(touched[fact.user_id][fact.id]):
                [fact] = touch_accessed([fact], now)
            writes.append(Stored(fact, item.vector))
        await self._store.facts.put_facts(writes)

    async def sweep(self, user_id: str) -> Changes:
        """Seed 002's decay sweep and seed 004's category expiry over one user's facts."""
        return await self._writer.call(lambda: self._sweep(user_id))

    async def _sweep(self, user_id: str) -> Changes:
        async with self.lane:
            return await self._sweep_now(user_id)

    async def _sweep_now(self, user_id: str) -> Changes:
        now = self._clock.now()
        expiry = {c.name: c.expiry_days for c in self._settings.categories}
        changes = Changes()
        writes = []
        for item in await self._store.facts.facts_of(user_id):
            swept = sweep_fact(item.fact, expiry_days=expiry.get(item.fact.category), now=now)
            if swept is not None:
                changes.updated.append(swept)
                writes.append(Stored(swept, item.vector))
        await self._store.facts.put_facts(writes)
        events = sweep_events(changes.updated, EventMaker(user_id, "sweep", now, new_event_id))
        await record(self._store, self._bus, events)
        return changes


def _guess_category(content: str) -> str:
    """A category for a fact added without one: the rule extractor's, else a preference
    when it reads like one, else knowledge."""
    found = extract_facts(content)
    if found:
        return found[0].category
    return "preference" if expresses_preference(content) else "knowledge"
