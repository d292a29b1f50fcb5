"""The small Protocols through which actors reach the outside world."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from anyio.abc import TaskStatus

from memory.facts import Stored
from memory.rules import StoredRule
from memory.sparse import SparseVector
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
    "Clock",
    "Embedder",
    "EntityStore",
    "EpisodeStore",
    "EventLog",
    "FactHit",
    "FactStore",
    "LinkStore",
    "Llm",
    "Page",
    "RuleStore",
    "ScoredMessage",
    "SparseEncoder",
    "Store",
    "Stored",
    "VectorSource",
    "resolve",
]


class Llm(Protocol):
    def stream_chat(
        self, messages: Sequence[PromptMessage], *, model: str
    ) -> AsyncIterator[ChatChunk]:
        """Stream a reply. Raises ``LlmUnavailable``, ``LlmTimeout`` or ``LlmError``,
        never a library's own exception. Closing the iterator early is safe."""
        ...

    async def generate_json(
        self,
        prompt: str,
        *,
        model: str,
        schema: dict[str, Any],
        system: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """One answer constrained to ``schema`` (temperature 0), at most ``max_tokens``
        long (None: the model's own limit). Times out only on a silent model.

        Raises like ``stream_chat``; ``LlmInvalidOutput`` when the answer was truncated.
        """
        ...

    async def aclose(self) -> None: ...


class Embedder(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text."""
        ...

    async def warm_up(self) -> None:
        """Get ready to start (learn ``dim``, check that the model is there); cheap: a
        model that takes memory waits for ``preload`` or the first ``embed``."""
        ...

    async def preload(self) -> None:
        """Load what the first ``embed`` would (a model): called when the first user
        shows up, so that an idle server that has seen no user holds no model."""
        ...


class SparseEncoder(Protocol):
    """A learned sparse model (SPLADE): a text's vocabulary terms and their weights, the
    third signal beside the ``Embedder``'s vectors and BM25."""

    @property
    def name(self) -> str: ...

    async def encode(self, texts: Sequence[str]) -> list[SparseVector] | None:
        """One vector per text, in order, queries and documents alike; a text's vector
        does not depend on the texts encoded with it. ``None`` when the model cannot be
        had here (said once in the log): search then runs without this signal."""
        ...

    async def preload(self) -> None:
        """Load the model (the first time on a machine: fetch and derive it) in a worker
        thread, when the first user shows up; never raises."""
        ...


class Clock(Protocol):
    def now(self) -> datetime:
        """The current UTC time (timezone-aware)."""
        ...


ScoredMessage = tuple[ArchivedMessage, float]
#: A query's vector, or a way to get it: a search scores its text side while it waits.
VectorSource = Sequence[float] | Callable[[], Awaitable[Sequence[float]]]


async def resolve(vector: VectorSource) -> Sequence[float]:
    """The vector of a ``VectorSource``."""
    return await vector() if callable(vector) else vector


Page = tuple[list[ArchivedMessage], int]


@dataclass(frozen=True, slots=True)
class FactHit:
    """A fact found by search: its rank by vector and by text (from 1; None where that
    side did not find it) and seed 001's ``keyword_score`` (0..1: BM25 over the best
    BM25 of the search, or the share of the query's keywords it contains)."""

    stored: Stored
    dense_rank: int | None
    text_rank: int | None
    keyword_score: float = 0.0
    #: Cosine similarity to the query, where the vector side found it.
    similarity: float | None = None
    #: BM25 (or keyword count without the analyzer), where the text side found it.
    text_score: float | None = None


class FactStore(Protocol):
    """Facts, per-app notes, profiles and extraction progress. Every call names its user."""

    async def facts_of(self, user_id: str, *, active_only: bool = True) -> list[Stored]: ...

    async def facts_of_users(self, user_ids: Sequence[str]) -> dict[str, list[Stored]]:
        """Active facts of each of ``user_ids`` (every key present, possibly empty)."""
        ...

    async def list_facts(
        self, user_id: str, *, limit: int, offset: int, validity: str | None = "active"
    ) -> tuple[list[Fact], int]: ...

    async def get_facts(self, user_id: str, ids: Sequence[str]) -> list[Stored]: ...

    async def count_facts(self, user_id: str, validity: str, *, scope: str | None) -> int:
        """How many of the user's facts have ``validity`` (of ``global`` and ``scope`` only,
        with a scope), without reading them."""
        ...

    async def fact_counts(self, user_id: str, *, scope: str | None) -> dict[str, int]:
        """Seed 002's ``memory_stats`` of the user's facts (``memory.stats.fact_stats``:
        active, fading, superseded, expired, retracted), of ``global`` and ``scope`` only
        with a scope. May be kept between writes of the user's facts."""
        ...

    async def get_facts_by_key(self, keys: Sequence[tuple[str, str]]) -> list[Stored]:
        """Facts named by (user id, fact id) pairs, possibly of several users."""
        ...

    async def add_facts(self, items: Sequence[Stored]) -> None:
        """Store facts that are new (fresh ids)."""
        ...

    async def put_facts(self, items: Sequence[Stored]) -> None:
        """Insert or replace facts, matched on user and id."""
        ...

    async def delete_facts(self, user_id: str, ids: Sequence[str], *, purge_now: bool) -> int: ...

    async def clear_facts(self, user_id: str) -> int: ...

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
        """Active facts found by vector and by text (each side ``k`` deep; only one side
        in ``mode`` ``semantic`` or ``keyword``), plus every active fact of ``categories``
        (seed 001's category-based candidate recall)."""
        ...

    async def notes_of(
        self, user_id: str, app_id: str, *, limit: int | None = None
    ) -> list[AppNote]:
        """The app's notes, most recently updated first (``newest_notes``), at most ``limit``."""
        ...

    async def notes_of_user(self, user_id: str) -> list[AppNote]:
        """Every note of the user, of every app (by app, newest first within one)."""
        ...

    async def count_notes(self, user_id: str, app_id: str) -> int:
        """How many notes the app holds, without reading them."""
        ...

    async def put_notes(self, notes: Sequence[AppNote]) -> None: ...

    async def delete_notes(self, user_id: str, app_id: str, ids: Sequence[str] | None) -> int: ...

    async def clear_notes(self, user_id: str) -> int: ...

    async def get_profile(self, user_id: str) -> UserProfile | None: ...

    async def put_profile(self, profile: UserProfile) -> None: ...

    async def delete_profile(self, user_id: str) -> None: ...

    async def put_progress(self, items: Sequence[Progress]) -> None: ...

    async def get_progress(self, user_id: str, session_id: str) -> Progress | None: ...

    async def optimize(self, cleanup_older_than: float) -> None:
        """Compact these tables and drop versions older than the given seconds."""
        ...

    async def users_with_facts(self) -> list[str]:
        """Every user with an active fact: for the scheduled decay sweep only."""
        ...

    async def pending_progress(self) -> list[Progress]:
        """Sessions of every user with turns not yet extracted: for the retry sweep only."""
        ...


class RuleStore(Protocol):
    """Seed 002's rules and their applications. Every call names its user."""

    async def rules_of(self, user_id: str, *, scope: str | None = None) -> list[StoredRule]:
        """The user's rules, forgotten ones included; with a ``scope``: of ``global`` and
        that scope only. Oldest first."""
        ...

    async def rule_counts(self, user_id: str, *, scope: str | None = None) -> dict[str, int]:
        """Seed 002's ``memory_stats`` of the user's rules (``memory.stats.rule_stats``: by
        maturity, and forgotten), of ``global`` and ``scope`` only with a scope. May be
        kept between writes of the user's rules; reads no vectors."""
        ...

    async def get_rules(self, user_id: str, ids: Sequence[str]) -> list[StoredRule]: ...

    async def put_rules(self, items: Sequence[StoredRule]) -> None:
        """Insert or replace rules, matched on user and id."""
        ...

    async def delete_rules(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete rules and their applications for good (no old version keeps them)."""
        ...

    async def clear_rules(self, user_id: str) -> int: ...

    async def add_applications(self, items: Sequence[RuleApplication]) -> None: ...

    async def applications_of(
        self, user_id: str, rule_id: str, *, limit: int
    ) -> list[RuleApplication]:
        """The rule's last ``limit`` applications, newest first."""
        ...

    async def applications_of_user(self, user_id: str) -> list[RuleApplication]:
        """Every application of every rule of the user, oldest first."""
        ...

    async def users_with_rules(self) -> list[str]:
        """Every user with a rule: for the scheduled sweep only."""
        ...

    async def optimize(self, cleanup_older_than: float) -> None: ...


class EpisodeStore(Protocol):
    """Seed 002's episodes stored directly, per user, with their vectors."""

    async def episodes_of(
        self, user_id: str, *, scope: str | None = None
    ) -> list[tuple[Episode, Sequence[float]]]:
        """The user's episodes (of that scope only, with one), oldest first."""
        ...

    async def get_episodes(
        self, user_id: str, ids: Sequence[str]
    ) -> list[tuple[Episode, Sequence[float]]]: ...

    async def episode_count(self, user_id: str) -> int:
        """How many episodes the user has (kept between writes: no read when known)."""
        ...

    async def add_episodes(self, items: Sequence[tuple[Episode, Sequence[float]]]) -> None:
        """Store new episodes (fresh ids): an append, not a merge."""
        ...

    async def put_episodes(self, items: Sequence[tuple[Episode, Sequence[float]]]) -> None:
        """Insert or replace episodes, matched on user and id."""
        ...

    async def delete_episodes(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete episodes for good (no old version keeps them)."""
        ...

    async def clear_episodes(self, user_id: str) -> int: ...

    async def users_with_episodes(self) -> list[str]:
        """Every user with an episode: for the scheduled cleanup only."""
        ...

    async def optimize(self, cleanup_older_than: float) -> None: ...


class EntityStore(Protocol):
    """Seed 002's entities, per user."""

    async def entities_of(self, user_id: str) -> list[Entity]:
        """Every entity of the user, merged ones (tombstones) included. The list may be
        shared (returned again while the entities are unchanged): never change it."""
        ...

    async def put_entities(self, items: Sequence[Entity]) -> None:
        """Insert or replace entities, matched on user and id."""
        ...

    async def clear_entities(self, user_id: str) -> int: ...

    async def optimize(self, cleanup_older_than: float) -> None: ...


class LinkStore(Protocol):
    """Seed 002's provenance links between memories, per user."""

    async def add_links(self, items: Sequence[MemoryLink]) -> int:
        """Store the links that do not exist yet (one per source and target); returns how
        many were new. Adding an existing link again changes nothing."""
        ...

    async def links_of(
        self, user_id: str, item_type: str, item_id: str, *, direction: str = "both"
    ) -> list[MemoryLink]:
        """Links where the item is the source (``outgoing``), the target (``incoming``),
        or either (``both``); oldest first."""
        ...

    async def links_of_user(self, user_id: str) -> list[MemoryLink]:
        """Every link of the user, oldest first."""
        ...

    async def delete_links_of(self, user_id: str, item_type: str, ids: Sequence[str]) -> int:
        """Delete every link from or to these items (they were deleted)."""
        ...

    async def clear_links(self, user_id: str) -> int: ...

    async def optimize(self, cleanup_older_than: float) -> None: ...


class EventLog(Protocol):
    """The append-only audit log of memory changes, per user."""

    async def append_events(self, items: Sequence[MemoryEvent]) -> None: ...

    async def events_of(
        self, user_id: str, *, limit: int, types: Sequence[str] = ()
    ) -> list[MemoryEvent]:
        """The user's last ``limit`` events (of ``types`` only, when given), newest first."""
        ...

    async def clear_events(self, user_id: str) -> int:
        """Delete every event of the user for good."""
        ...

    async def optimize(self, cleanup_older_than: float) -> None: ...


class Store(Protocol):
    """Durable storage. Every read and write names the user it is for."""

    @property
    def facts(self) -> FactStore: ...

    @property
    def rules(self) -> RuleStore: ...

    @property
    def events(self) -> EventLog: ...

    @property
    def entities(self) -> EntityStore: ...

    @property
    def links(self) -> LinkStore: ...

    @property
    def episodes(self) -> EpisodeStore: ...

    async def open(self) -> None: ...

    async def aclose(self) -> None: ...

    async def append_messages(
        self, rows: Sequence[ArchivedMessage], vectors: Sequence[Sequence[float]]
    ) -> None:
        """Return once the rows are durable; every read and search sees them from then on."""

    async def run_indexing(self, *, task_status: TaskStatus[None] = ...) -> None:
        """Run until cancelled, doing the search indexing of appended rows meanwhile (an
        append then returns once its rows are durable); without it, appends index."""

    async def flush_messages(self) -> int:
        """Move appended rows that are durable elsewhere (a journal) into the table, in bulk;
        returns how many moved (0 for a store that appends to the table directly)."""

    @property
    def journals_learned(self) -> bool:
        """Whether writes of facts, log entries and links are durable once journaled (a
        local journal), not once in their tables."""

    @property
    def learned_pending(self) -> int:
        """Writes of facts, log entries and links durable in a journal and not yet in their
        tables (0 for a store that writes its tables directly)."""

    async def flush_learned(self) -> int:
        """Move the journaled writes of facts, log entries and links into their tables, one
        write per table; returns how many moved. Raises ``ArchiveUnavailable`` (they stay
        journaled, and reads keep seeing them)."""

    async def list_messages(self, user_id: str, *, limit: int, offset: int) -> Page: ...

    async def count_messages(self, user_id: str) -> int:
        """The user's archived messages: ``list_messages``'s total, without a page."""
        ...

    async def session_messages(
        self, user_id: str, session_id: str, *, limit: int
    ) -> list[ArchivedMessage]:
        """The session's last ``limit`` messages, oldest first."""
        ...

    async def get_message(self, user_id: str, message_id: str) -> ArchivedMessage | None: ...

    async def existing_message_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` name messages of this user."""
        ...

    async def delete_message(self, user_id: str, message_id: str) -> bool: ...

    async def clear_messages(self, user_id: str) -> int: ...

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
        """Best first. With a ``scope``: messages of ``global`` and that scope only.
        ``mode`` ``semantic`` scores by cosine similarity alone, ``keyword`` by BM25.
        ``at``: the query's own time (default: now), which "last week" counts from."""
        ...

    async def message_similarities(
        self, user_id: str, ids: Sequence[str], vector: Sequence[float]
    ) -> dict[str, float]:
        """Cosine similarity of the user's messages ``ids`` to ``vector`` (by id; ids not
        found are left out): how near a found message is, whatever its rank."""
        ...

    async def warm(self, user_id: str) -> None:
        """Get the user's memories ready for search (a session of theirs has started)."""
        ...

    async def put_working(self, items: Sequence[tuple[str, WorkingMemory]]) -> None:
        """Upsert working-memory snapshots, each keyed by (user id, session id)."""
        ...

    async def get_working(self, user_id: str, session_id: str) -> WorkingMemory | None: ...

    async def delete_working(self, user_id: str, session_id: str) -> None: ...

    async def purge_working(self) -> None:
        """Drop every old version of the working-memory snapshots (deleted ones are then
        nowhere on disk). Called by the writer that writes them, never beside a write."""
        ...

    async def optimize(self, *, cleanup_older_than: float) -> None:
        """Compact, refresh indexes, and drop versions older than the given seconds."""
        ...
