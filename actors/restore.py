"""Restoring the records of an export for a user: as they were (``memory.transfer_records``),
through the learned-memory writer, each kind idempotent on its ids.

A record whose id names one of the user's (or, for a fact, the import line one of
theirs came from) is skipped: importing an export twice, or into the user it came from,
restores nothing the second time. A restore adds and never replaces, and keeps the
user's bounds: active facts past ``MNEMO_MAX_FACTS`` and notes past
``MNEMO_NOTES_PER_APP`` are refused (line errors), a pin past ``MNEMO_MAX_PINNED`` is
not kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from actors.audit import record
from actors.mailbox import SessionDeps
from memory.events import EventMaker, new_event_id
from memory.facts import Stored
from memory.rules import StoredRule
from memory.transfer import imported_message_id
from memory.transfer_records import (
    entity_from_line,
    episode_from_line,
    fact_from_line,
    link_from_line,
    note_from_line,
    profile_from_line,
    rule_from_line,
)
from schemas.records import MemoryLink
from schemas.transfer import (
    EntityLine,
    EpisodeLine,
    FactLine,
    LineError,
    LinkLine,
    NoteLine,
    ProfileLine,
    RecordLine,
    RuleLine,
)

__all__ = ["Restored", "restore"]

#: A line of the request body and its number (from 1).
Numbered = tuple[int, FactLine | RecordLine]


@dataclass(slots=True)
class Restored:
    """What a batch of records did: restored, skipped (already there), refused."""

    imported: int = 0
    skipped: int = 0
    errors: list[LineError] = field(default_factory=list)


class _Names:
    """The user's ids of the archived messages an export names by their lines' ``id``:
    the message imported from that line, else the id as it is (one of the user's own
    messages, or an episode stored directly)."""

    def __init__(self, user_id: str, found: set[str]) -> None:
        self._user_id, self._found = user_id, found

    def __call__(self, name: str) -> str:
        imported = imported_message_id(self._user_id, name)
        return imported if imported in self._found else name


def _named(lines: Iterable[FactLine | RecordLine]) -> set[str]:
    """The episode names the lines use (a fact's or rule's source, a link's end)."""
    out: set[str] = set()
    for line in lines:
        if isinstance(line, FactLine | RuleLine) and line.source_episode_id:
            out.add(line.source_episode_id)
        elif isinstance(line, LinkLine):
            out |= {i for t, i in _ends(line) if t == "episode"}
    return out


def _ends(link: LinkLine | MemoryLink) -> tuple[tuple[str, str], tuple[str, str]]:
    return (link.source_type, link.source_id), (link.target_type, link.target_id)


async def restore(deps: SessionDeps, user_id: str, lines: Sequence[Numbered]) -> Restored:
    """Restore a batch of record lines (``memory.transfer.parse_line``'s, in body order).
    Raises ``MnemoError`` when the embedder or the store fails; what an earlier batch
    restored stays."""
    named = _named(line for _, line in lines)
    imported = [imported_message_id(user_id, name) for name in named]
    names = _Names(user_id, await deps.store.existing_message_ids(user_id, imported))
    texts = [
        line.content for _, line in lines if isinstance(line, FactLine | RuleLine | EpisodeLine)
    ]
    vectors = iter(await deps.embedder.embed(texts) if texts else [])
    job = _Job(deps, user_id, names)
    for number, line in lines:
        if isinstance(line, FactLine | RuleLine | EpisodeLine):
            job.add(number, line, next(vectors))
        else:
            job.add(number, line, None)
    return await deps.fact_writer.call(job.write)


@dataclass
class _Job:
    deps: SessionDeps
    user_id: str
    names: _Names
    lines: list[tuple[int, FactLine | RecordLine, Any]] = field(default_factory=list)
    done: Restored = field(default_factory=Restored)

    def add(self, number: int, line: FactLine | RecordLine, vector: Any) -> None:
        self.lines.append((number, line, vector))

    def _of(self, kind: type[Any]) -> list[tuple[int, Any, Any]]:
        return [(n, line, v) for n, line, v in self.lines if isinstance(line, kind)]

    def _refuse(self, number: int, message: str) -> None:
        self.done.errors.append(LineError(number, message))

    async def write(self) -> Restored:
        """In the writer's task: what is there is read again here, then the rest written."""
        event = EventMaker(self.user_id, "import", self.deps.clock.now(), new_event_id)
        facts = await self._facts(event)
        await self._rules(event)
        await self._entities(event)
        episodes = await self._episodes(event)
        await self._notes()
        await self._profile()
        await self._links(facts, episodes)
        await record(self.deps.store, self.deps.events, event.made)
        return self.done

    async def _facts(self, event: EventMaker) -> set[str]:
        """Restore the facts; every id the user's facts have after it."""
        settings, store = self.deps.settings, self.deps.store.facts
        stored = await store.facts_of(self.user_id, active_only=False)
        ids = {s.fact.id for s in stored}
        known = ids | {s.fact.source_id for s in stored if s.fact.source_id}
        active = [s.fact for s in stored if s.fact.validity == "active"]
        count, pinned = len(active), sum(1 for f in active if f.pinned)
        fresh: list[Stored] = []
        for number, line, vector in self._of(FactLine):
            if line.id in known or (line.source_id and line.source_id in known):
                self.done.skipped += 1
                continue
            fact = fact_from_line(line, self.user_id, self.names)
            if fact.validity == "active":
                if count >= settings.max_facts:
                    limit = settings.max_facts
                    self._refuse(number, f"over the {limit} active facts kept (MNEMO_MAX_FACTS)")
                    continue
                count += 1
                if fact.pinned and pinned >= settings.max_pinned:
                    fact = msgspec.structs.replace(fact, pinned=False)
                pinned += fact.pinned
            known |= {fact.id, fact.source_id} - {""}
            ids.add(fact.id)
            fresh.append(Stored(fact, vector))
            event("fact_created", fact_id=fact.id, category=fact.category, scope=fact.scope)
        await store.add_facts(fresh)
        self.done.imported += len(fresh)
        return ids

    async def _rules(self, event: EventMaker) -> None:
        store = self.deps.store.rules
        known = {r.rule.id for r in await store.rules_of(self.user_id)}
        fresh: list[StoredRule] = []
        used = []
        for _, line, vector in self._of(RuleLine):
            if line.id in known:
                self.done.skipped += 1
                continue
            rule, applications = rule_from_line(line, self.user_id, self.names)
            known.add(rule.id)
            fresh.append(StoredRule(rule, vector))
            used += applications
            event("rule_created", rule_id=rule.id, scope=rule.scope)
        await store.put_rules(fresh)
        await store.add_applications(used)
        self.done.imported += len(fresh)

    async def _entities(self, event: EventMaker) -> None:
        store = self.deps.store.entities
        known = {e.id for e in await store.entities_of(self.user_id)}
        fresh = []
        for _, line, _ in self._of(EntityLine):
            if line.id in known:
                self.done.skipped += 1
                continue
            known.add(line.id)
            fresh.append(entity_from_line(line, self.user_id))
            event("entity_created", entity_id=line.id)
        await store.put_entities(fresh)
        self.done.imported += len(fresh)

    async def _episodes(self, event: EventMaker) -> set[str]:
        """Restore the episodes; the ids of those the user has of the lines'."""
        store = self.deps.store.episodes
        mine = self._of(EpisodeLine)
        there = await store.get_episodes(self.user_id, [line.id for _, line, _ in mine])
        known = {e.id for e, _ in there}
        fresh = []
        for _, line, vector in mine:
            if line.id in known:
                self.done.skipped += 1
                continue
            known.add(line.id)
            fresh.append((episode_from_line(line, self.user_id), vector))
            event("episode_created", episode_id=line.id, scope=line.scope)
        await store.add_episodes(fresh)
        self.done.imported += len(fresh)
        return known

    async def _notes(self) -> None:
        store, most = self.deps.store.facts, self.deps.settings.notes_per_app
        held: dict[str, set[str]] = {}
        fresh = []
        for number, line, _ in self._of(NoteLine):
            if line.app_id not in held:
                held[line.app_id] = {n.id for n in await store.notes_of(self.user_id, line.app_id)}
            app = held[line.app_id]
            if line.id in app:
                self.done.skipped += 1
            elif len(app) >= most:
                self._refuse(number, f"app {line.app_id} holds {most} notes (MNEMO_NOTES_PER_APP)")
            else:
                app.add(line.id)
                fresh.append(note_from_line(line, self.user_id))
        await store.put_notes(fresh)
        self.done.imported += len(fresh)

    async def _profile(self) -> None:
        store = self.deps.store.facts
        for _, line, _ in self._of(ProfileLine):
            held = await store.get_profile(self.user_id)
            newer = held is None or (
                line.updated_at is not None
                and (held.updated_at is None or held.updated_at < line.updated_at)
            )
            if newer:
                await store.put_profile(profile_from_line(line, self.user_id))
                self.done.imported += 1
            else:
                self.done.skipped += 1

    async def _links(self, facts: set[str], episodes: set[str]) -> None:
        """Restore the links between memories the user has; one naming a memory that is
        not there is refused."""
        mine = [
            (number, link_from_line(line, self.user_id, self.names))
            for number, line, _ in self._of(LinkLine)
        ]
        if not mine:
            return
        store = self.deps.store
        rules = {r.rule.id for r in await store.rules.rules_of(self.user_id)}
        asked = list({i for _, k in mine for t, i in _ends(k) if t == "episode"} - episodes)
        found = await store.episodes.get_episodes(self.user_id, asked) if asked else []
        episodes = episodes | {e.id for e, _ in found}
        episodes |= await store.existing_message_ids(self.user_id, asked)
        there = {"fact": facts, "rule": rules, "episode": episodes}
        kept: list[MemoryLink] = []
        for number, link in mine:
            if all(i in there[t] for t, i in _ends(link)):
                kept.append(link)
            else:
                self._refuse(number, "the link names a memory that is not there")
        new = await store.links.add_links(kept)
        self.done.imported += new
        self.done.skipped += len(kept) - new
