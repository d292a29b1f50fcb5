"""In-process fakes of the ports, for actor tests that run under any anyio backend."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
from anyio.abc import TaskStatus

from actors.errors import ArchiveUnavailable, LlmFailure, LlmInvalidOutput
from actors.ports import FactHit, Page, ScoredMessage, VectorSource, resolve
from memory.facts import Stored
from memory.formats import newest_notes
from memory.rules import StoredRule
from memory.stats import fact_stats, in_scope, rule_stats
from schemas.llm import ChatChunk, PromptMessage
from schemas.records import (
    AppNote,
    ArchivedMessage,
    Entity,
    Episode,
    Fact,
    MemoryEvent,
    MemoryLink,
    Progress,
    RuleApplication,
    UserProfile,
    WorkingMemory,
)
from schemas.settings import SearchMode

__all__ = [
    "MemoryEntities",
    "MemoryEpisodes",
    "MemoryEvents",
    "MemoryFacts",
    "MemoryLinks",
    "MemoryRules",
    "MemoryStore",
    "ScriptedLlm",
    "SteppingClock",
]


@dataclass
class ScriptedLlm:
    """Replies from a script: a string is streamed word by word, an exception is raised,
    anything else (a ``BaseException`` class instance) crashes the stream."""

    script: list[str | BaseException] = field(default_factory=list)
    prompts: list[list[PromptMessage]] = field(default_factory=list)
    chunk_delay: float = 0.0
    #: Answers of ``generate_json`` calls, in order; when empty, ``json_default``.
    json_script: list[str | BaseException] = field(default_factory=list)
    json_default: str = '{"facts": [], "memory_update": {}, "analysis": {}}'
    json_prompts: list[tuple[str | None, str]] = field(default_factory=list)
    #: (system, prompt) of each warm-up (``Extractor.warm_up``: one token asked for).
    warm_ups: list[tuple[str | None, str]] = field(default_factory=list)
    #: The ``max_tokens`` of each ``generate_json`` call, in order.
    json_limits: list[int | None] = field(default_factory=list)
    json_delay: float = 0.0

    async def generate_json(
        self,
        prompt: str,
        *,
        model: str,
        schema: dict[str, Any],
        system: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        if max_tokens == 1:  # mnemo's warm-up at start: not one of the test's calls
            self.warm_ups.append((system, prompt))
            raise LlmInvalidOutput("truncated at the token limit (1)")
        self.json_prompts.append((system, prompt))
        self.json_limits.append(max_tokens)
        if self.json_delay:
            await anyio.sleep(self.json_delay)
        answer = self.json_script.pop(0) if self.json_script else self.json_default
        if isinstance(answer, BaseException):
            raise answer
        return answer

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
class MemoryFacts:
    """The FactStore port in dicts."""

    facts: dict[tuple[str, str], Stored] = field(default_factory=dict)
    notes: dict[tuple[str, str], AppNote] = field(default_factory=dict)
    profiles: dict[str, UserProfile] = field(default_factory=dict)
    progress: dict[tuple[str, str], Progress] = field(default_factory=dict)
    #: That many note writes fail (a database error) before writes work again.
    fail_note_writes: int = 0
    #: That many note deletes fail before deletes work again.
    fail_note_deletes: int = 0
    #: Seconds every fact write takes (a slow disk).
    write_delay: float = 0.0

    async def facts_of(self, user_id: str, *, active_only: bool = True) -> list[Stored]:
        return [
            s
            for (u, _), s in self.facts.items()
            if u == user_id and (s.fact.validity == "active" or not active_only)
        ]

    async def facts_of_users(self, user_ids: Sequence[str]) -> dict[str, list[Stored]]:
        return {u: await self.facts_of(u) for u in user_ids}

    async def get_facts_by_key(self, keys: Sequence[tuple[str, str]]) -> list[Stored]:
        return [self.facts[k] for k in keys if k in self.facts]

    async def list_facts(
        self, user_id: str, *, limit: int, offset: int, validity: str | None = "active"
    ) -> tuple[list[Fact], int]:
        mine = [
            s.fact
            for (u, _), s in self.facts.items()
            if u == user_id and (validity is None or s.fact.validity == validity)
        ]
        mine.sort(key=lambda f: (-f.created_at.timestamp(), f.id))
        return mine[offset : offset + limit], len(mine)

    async def count_facts(self, user_id: str, validity: str, *, scope: str | None) -> int:
        return sum(
            1
            for (user, _), s in self.facts.items()
            if user == user_id
            and s.fact.validity == validity
            and (scope is None or s.fact.scope in ("global", scope))
        )

    async def get_facts(self, user_id: str, ids: Sequence[str]) -> list[Stored]:
        return [self.facts[(user_id, i)] for i in ids if (user_id, i) in self.facts]

    async def fact_counts(self, user_id: str, *, scope: str | None) -> dict[str, int]:
        active = [s.fact for s in await self.facts_of(user_id) if in_scope(s.fact.scope, scope)]
        others = {
            v: await self.count_facts(user_id, v, scope=scope)
            for v in ("superseded", "expired", "retracted")
        }
        return fact_stats(active, others)

    async def add_facts(self, items: Sequence[Stored]) -> None:
        for item in items:
            assert (item.fact.user_id, item.fact.id) not in self.facts, "not a new fact"
        await self.put_facts(items)

    async def put_facts(self, items: Sequence[Stored]) -> None:
        if self.write_delay:
            await anyio.sleep(self.write_delay)
        for item in items:
            self.facts[(item.fact.user_id, item.fact.id)] = item

    async def delete_facts(self, user_id: str, ids: Sequence[str], *, purge_now: bool) -> int:
        return sum(1 for i in ids if self.facts.pop((user_id, i), None) is not None)

    async def clear_facts(self, user_id: str) -> int:
        mine = [k for k in self.facts if k[0] == user_id]
        for key in mine:
            del self.facts[key]
        return len(mine)

    async def search_facts(
        self,
        user_id: str,
        text: str,
        vector: VectorSource,
        *,
        k: int,
        scope: str | None,
        categories: Sequence[str] = (),
        mode: SearchMode = "hybrid",
    ) -> list[FactHit]:
        query = await resolve(vector)
        active = [
            s
            for s in await self.facts_of(user_id)
            if scope is None or s.fact.scope in ("global", scope)
        ]
        cosine = {
            s.fact.id: sum(a * b for a, b in zip(s.vector, query, strict=True)) for s in active
        }
        dense = sorted(active, key=lambda s: -cosine[s.fact.id]) if mode != "keyword" else []
        words = set(text.lower().split())
        matched = {s.fact.id: len(words & set(s.fact.content.lower().split())) for s in active}
        sparse = sorted(
            (s for s in active if matched[s.fact.id] and mode != "semantic"),
            key=lambda s: -matched[s.fact.id],
        )
        hits: dict[str, list[Any]] = {}
        for rank, s in enumerate(dense[:k], 1):
            hits[s.fact.id] = [s, rank, None]
        for rank, s in enumerate(sparse[:k], 1):
            hits.setdefault(s.fact.id, [s, None, None])[2] = rank
        for s in active:
            if s.fact.category in categories:
                hits.setdefault(s.fact.id, [s, None, None])
        return [
            FactHit(
                s,
                d,
                t,
                matched[s.fact.id] / max(len(words), 1),
                similarity=cosine[s.fact.id] if d else None,
                text_score=float(matched[s.fact.id]) if t else None,
            )
            for s, d, t in hits.values()
        ]

    async def notes_of(
        self, user_id: str, app_id: str, *, limit: int | None = None
    ) -> list[AppNote]:
        mine = [n for (u, _), n in self.notes.items() if u == user_id and n.app_id == app_id]
        return newest_notes(mine, limit)

    async def notes_of_user(self, user_id: str) -> list[AppNote]:
        mine = [n for (user, _), n in self.notes.items() if user == user_id]
        return sorted(mine, key=lambda n: (n.app_id, -n.created_at.timestamp(), n.id))

    async def count_notes(self, user_id: str, app_id: str) -> int:
        return len(await self.notes_of(user_id, app_id))

    async def put_notes(self, notes: Sequence[AppNote]) -> None:
        if self.fail_note_writes:
            self.fail_note_writes -= 1
            raise ArchiveUnavailable("disk error (fake)")
        for note in notes:
            self.notes[(note.user_id, note.id)] = note

    async def delete_notes(self, user_id: str, app_id: str, ids: Sequence[str] | None) -> int:
        if self.fail_note_deletes:
            self.fail_note_deletes -= 1
            raise ArchiveUnavailable("disk error (fake)")
        doomed = [
            k
            for k, n in self.notes.items()
            if k[0] == user_id and n.app_id == app_id and (ids is None or n.id in ids)
        ]
        for key in doomed:
            del self.notes[key]
        return len(doomed)

    async def clear_notes(self, user_id: str) -> int:
        doomed = [k for k in self.notes if k[0] == user_id]
        for key in doomed:
            del self.notes[key]
        return len(doomed)

    async def get_profile(self, user_id: str) -> UserProfile | None:
        return self.profiles.get(user_id)

    async def put_profile(self, profile: UserProfile) -> None:
        self.profiles[profile.user_id] = profile

    async def delete_profile(self, user_id: str) -> None:
        self.profiles.pop(user_id, None)

    async def put_progress(self, items: Sequence[Progress]) -> None:
        for item in items:
            self.progress[(item.user_id, item.session_id)] = item

    async def get_progress(self, user_id: str, session_id: str) -> Progress | None:
        return self.progress.get((user_id, session_id))

    optimizes: int = 0

    async def optimize(self, cleanup_older_than: float) -> None:
        self.optimizes += 1

    async def users_with_facts(self) -> list[str]:
        return sorted({u for (u, _), s in self.facts.items() if s.fact.validity == "active"})

    async def pending_progress(self) -> list[Progress]:
        return [p for p in self.progress.values() if p.extracted_through < p.last_turn]


@dataclass
class MemoryRules:
    """The RuleStore port in dicts, keyed by (user id, rule id)."""

    rules: dict[tuple[str, str], StoredRule] = field(default_factory=dict)
    applications: list[RuleApplication] = field(default_factory=list)

    async def rules_of(self, user_id: str, *, scope: str | None = None) -> list[StoredRule]:
        found = [
            s
            for (user, _), s in self.rules.items()
            if user == user_id and (scope is None or s.rule.scope in ("global", scope))
        ]
        return sorted(found, key=lambda s: (s.rule.created_at, s.rule.id))

    async def rule_counts(self, user_id: str, *, scope: str | None = None) -> dict[str, int]:
        return rule_stats(s.rule for s in await self.rules_of(user_id, scope=scope))

    async def get_rules(self, user_id: str, ids: Sequence[str]) -> list[StoredRule]:
        return [s for s in await self.rules_of(user_id) if s.rule.id in ids]

    async def put_rules(self, items: Sequence[StoredRule]) -> None:
        for item in items:
            self.rules[(item.rule.user_id, item.rule.id)] = item

    async def delete_rules(self, user_id: str, ids: Sequence[str]) -> int:
        gone = [key for key in self.rules if key[0] == user_id and key[1] in ids]
        for key in gone:
            del self.rules[key]
        self.applications = [
            a for a in self.applications if not (a.user_id == user_id and a.rule_id in ids)
        ]
        return len(gone)

    async def clear_rules(self, user_id: str) -> int:
        ids = [rule_id for user, rule_id in self.rules if user == user_id]
        return await self.delete_rules(user_id, ids)

    async def add_applications(self, items: Sequence[RuleApplication]) -> None:
        self.applications.extend(items)

    async def applications_of(
        self, user_id: str, rule_id: str, *, limit: int
    ) -> list[RuleApplication]:
        found = [a for a in self.applications if a.user_id == user_id and a.rule_id == rule_id]
        return sorted(found, key=lambda a: (a.at, a.id), reverse=True)[:limit]

    async def applications_of_user(self, user_id: str) -> list[RuleApplication]:
        mine = [a for a in self.applications if a.user_id == user_id]
        return sorted(mine, key=lambda a: (a.at, a.id))

    async def users_with_rules(self) -> list[str]:
        return sorted({user for user, _ in self.rules})

    async def optimize(self, cleanup_older_than: float) -> None:
        pass


@dataclass
class MemoryEpisodes:
    """The EpisodeStore port in a dict keyed by (user id, episode id)."""

    episodes: dict[tuple[str, str], tuple[Episode, Sequence[float]]] = field(default_factory=dict)

    async def episodes_of(
        self, user_id: str, *, scope: str | None = None
    ) -> list[tuple[Episode, Sequence[float]]]:
        found = [
            item
            for (user, _), item in self.episodes.items()
            if user == user_id and (scope is None or item[0].scope == scope)
        ]
        return sorted(found, key=lambda item: (item[0].created_at, item[0].id))

    async def get_episodes(
        self, user_id: str, ids: Sequence[str]
    ) -> list[tuple[Episode, Sequence[float]]]:
        return [item for item in await self.episodes_of(user_id) if item[0].id in ids]

    async def episode_count(self, user_id: str) -> int:
        return len(await self.episodes_of(user_id))

    async def add_episodes(self, items: Sequence[tuple[Episode, Sequence[float]]]) -> None:
        assert not {(e.user_id, e.id) for e, _ in items} & set(self.episodes), "not new"
        await self.put_episodes(items)

    async def put_episodes(self, items: Sequence[tuple[Episode, Sequence[float]]]) -> None:
        for episode, vector in items:
            self.episodes[(episode.user_id, episode.id)] = (episode, vector)

    async def delete_episodes(self, user_id: str, ids: Sequence[str]) -> int:
        gone = [key for key in self.episodes if key[0] == user_id and key[1] in ids]
        for key in gone:
            del self.episodes[key]
        return len(gone)

    async def clear_episodes(self, user_id: str) -> int:
        return await self.delete_episodes(user_id, [i for u, i in self.episodes if u == user_id])

    async def users_with_episodes(self) -> list[str]:
        return sorted({user for user, _ in self.episodes})

    async def optimize(self, cleanup_older_than: float) -> None:
        pass


@dataclass
class MemoryEntities:
    """The EntityStore port in a dict keyed by (user id, entity id)."""

    entities: dict[tuple[str, str], Entity] = field(default_factory=dict)

    async def entities_of(self, user_id: str) -> list[Entity]:
        return [e for (user, _), e in self.entities.items() if user == user_id]

    async def put_entities(self, items: Sequence[Entity]) -> None:
        for item in items:
            self.entities[(item.user_id, item.id)] = item

    async def clear_entities(self, user_id: str) -> int:
        gone = [key for key in self.entities if key[0] == user_id]
        for key in gone:
            del self.entities[key]
        return len(gone)

    async def optimize(self, cleanup_older_than: float) -> None:
        pass


@dataclass
class MemoryLinks:
    """The LinkStore port in a list."""

    links: list[MemoryLink] = field(default_factory=list)

    async def add_links(self, items: Sequence[MemoryLink]) -> int:
        new = 0
        for item in items:
            key = (item.user_id, item.source_type, item.source_id, item.target_type)
            if not any(
                (link.user_id, link.source_type, link.source_id, link.target_type) == key
                and link.target_id == item.target_id
                for link in self.links
            ):
                self.links.append(item)
                new += 1
        return new

    async def links_of_user(self, user_id: str) -> list[MemoryLink]:
        mine = [link for link in self.links if link.user_id == user_id]
        return sorted(mine, key=lambda k: (k.created_at, k.source_id, k.target_id))

    async def links_of(
        self, user_id: str, item_type: str, item_id: str, *, direction: str = "both"
    ) -> list[MemoryLink]:
        out = direction in ("outgoing", "both")
        into = direction in ("incoming", "both")
        return [
            link
            for link in self.links
            if link.user_id == user_id
            and (
                (out and (link.source_type, link.source_id) == (item_type, item_id))
                or (into and (link.target_type, link.target_id) == (item_type, item_id))
            )
        ]

    async def delete_links_of(self, user_id: str, item_type: str, ids: Sequence[str]) -> int:
        def touches(link: MemoryLink) -> bool:
            return link.user_id == user_id and (
                (link.source_type == item_type and link.source_id in ids)
                or (link.target_type == item_type and link.target_id in ids)
            )

        kept = [link for link in self.links if not touches(link)]
        count, self.links = len(self.links) - len(kept), kept
        return count

    async def clear_links(self, user_id: str) -> int:
        kept = [link for link in self.links if link.user_id != user_id]
        count, self.links = len(self.links) - len(kept), kept
        return count

    async def optimize(self, cleanup_older_than: float) -> None:
        pass


@dataclass
class MemoryEvents:
    """The EventLog port in a list."""

    events: list[MemoryEvent] = field(default_factory=list)

    async def append_events(self, items: Sequence[MemoryEvent]) -> None:
        self.events.extend(items)

    async def events_of(
        self, user_id: str, *, limit: int, types: Sequence[str] = ()
    ) -> list[MemoryEvent]:
        found = [
            e for e in self.events if e.user_id == user_id and (not types or e.event_type in types)
        ]
        return found[::-1][:limit]

    async def clear_events(self, user_id: str) -> int:
        kept = [e for e in self.events if e.user_id != user_id]
        count, self.events = len(self.events) - len(kept), kept
        return count

    async def optimize(self, cleanup_older_than: float) -> None:
        pass


@dataclass
class MemoryStore:
    """The Store port in a dict. ``fail_appends`` makes that many appends fail first."""

    messages: list[ArchivedMessage] = field(default_factory=list)
    facts: MemoryFacts = field(default_factory=MemoryFacts)
    rules: MemoryRules = field(default_factory=MemoryRules)
    events: MemoryEvents = field(default_factory=MemoryEvents)
    entities: MemoryEntities = field(default_factory=MemoryEntities)
    links: MemoryLinks = field(default_factory=MemoryLinks)
    episodes: MemoryEpisodes = field(default_factory=MemoryEpisodes)
    working: dict[tuple[str, str], WorkingMemory] = field(default_factory=dict)
    fail_appends: int = 0
    appends: list[int] = field(default_factory=list)
    optimizes: int = 0
    #: Moves of journaled rows into the table that succeeded (the fake journals nothing).
    flushes: int = 0
    #: Seconds a move takes, and how many moves fail first.
    flush_delay: float = 0.0
    fail_flushes: int = 0
    #: Seconds every message search takes.
    search_delay: float = 0.0
    #: Seconds an optimize takes (counted when it ends).
    optimize_delay: float = 0.0
    #: Seconds a working-memory snapshot write takes.
    working_delay: float = 0.0
    #: Purges of old working-memory versions.
    working_purges: int = 0
    #: Users whose memories were warmed, in order.
    warmed: list[str] = field(default_factory=list)

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

    async def run_indexing(
        self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        await anyio.sleep_forever()  # a dict needs no index

    async def flush_messages(self) -> int:
        if self.flush_delay:
            await anyio.sleep(self.flush_delay)
        if self.fail_flushes:
            self.fail_flushes -= 1
            raise ArchiveUnavailable("the table is unreachable (fake)")
        self.flushes += 1
        return 0

    @property
    def journals_learned(self) -> bool:
        return False  # writes its dicts directly

    @property
    def learned_pending(self) -> int:
        return 0

    async def flush_learned(self) -> int:
        return 0

    def _of(self, user_id: str) -> list[ArchivedMessage]:
        return [m for m in self.messages if m.user_id == user_id]

    async def list_messages(self, user_id: str, *, limit: int, offset: int) -> Page:
        mine = sorted(self._of(user_id), key=lambda m: (m.at, m.id), reverse=True)
        return mine[offset : offset + limit], len(mine)

    async def count_messages(self, user_id: str) -> int:
        return len(self._of(user_id))

    async def session_messages(
        self, user_id: str, session_id: str, *, limit: int
    ) -> list[ArchivedMessage]:
        return [m for m in self._of(user_id) if m.session_id == session_id][-limit:]

    async def get_message(self, user_id: str, message_id: str) -> ArchivedMessage | None:
        return next((m for m in self._of(user_id) if m.id == message_id), None)

    async def existing_message_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        return {m.id for m in self._of(user_id)} & set(ids)

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
        self,
        user_id: str,
        text: str,
        vector: VectorSource,
        *,
        k: int,
        scope: str | None = None,
        mode: SearchMode = "hybrid",
        at: datetime | None = None,
    ) -> list[ScoredMessage]:
        """Messages sharing words with ``text``, most shared first (whatever the mode)."""
        if self.search_delay:
            await anyio.sleep(self.search_delay)
        words = set(text.lower().split())
        mine = [m for m in self._of(user_id) if scope is None or m.scope in ("global", scope)]
        hits = [(m, float(len(words & set(m.text.lower().split())))) for m in mine]
        return sorted((h for h in hits if h[1] > 0), key=lambda h: -h[1])[:k]

    async def message_similarities(
        self, user_id: str, ids: Sequence[str], vector: Sequence[float]
    ) -> dict[str, float]:
        """No vectors here: every message is as near as any other."""
        mine = {m.id for m in self._of(user_id)}
        return {i: 0.0 for i in ids if i in mine}

    async def warm(self, user_id: str) -> None:
        self.warmed.append(user_id)

    async def put_working(self, items: Sequence[tuple[str, WorkingMemory]]) -> None:
        if self.working_delay:
            await anyio.sleep(self.working_delay)
        for user_id, memory in items:
            self.working[(user_id, memory.session_id)] = memory

    async def get_working(self, user_id: str, session_id: str) -> WorkingMemory | None:
        return self.working.get((user_id, session_id))

    async def delete_working(self, user_id: str, session_id: str) -> None:
        self.working.pop((user_id, session_id), None)

    async def purge_working(self) -> None:
        self.working_purges += 1

    async def optimize(self, *, cleanup_older_than: float) -> None:
        if self.optimize_delay:
            await anyio.sleep(self.optimize_delay)
        self.optimizes += 1


def llm_error(message: str = "boom") -> LlmFailure:
    return LlmFailure(message)


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))
