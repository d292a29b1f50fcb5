"""Records kept in the store and working-memory state."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

__all__ = [
    "AppNote",
    "ArchivedMessage",
    "Entity",
    "EntityType",
    "Episode",
    "Fact",
    "ItemType",
    "Maturity",
    "MemoryEvent",
    "MemoryLink",
    "Outcome",
    "Progress",
    "Relation",
    "Role",
    "Rule",
    "RuleApplication",
    "UserProfile",
    "Validity",
    "WorkingMemory",
]

Role = Literal["user", "assistant", "other"]


class ArchivedMessage(msgspec.Struct, frozen=True, kw_only=True):
    """One archived chat message: a ``turn`` is two of them (user, then assistant)."""

    id: str
    user_id: str
    session_id: str
    scope: str
    turn: int
    role: Role
    speaker: str
    text: str
    at: datetime
    meta: dict[str, Any] = {}
    #: The client's id of the frame or import line this message came from.
    source_id: str = ""
    #: The message before it in its conversation (``speaker: text``), indexed with it for
    #: search (``memory.recall.search_text``); not stored on its own, empty when read back.
    context: str = ""
    #: Set by a search only: the id of a newer message of the same speaker on the same
    #: thing that ranks right above it (``memory.ranking``'s latest word); not stored.
    superseded_by: str = ""


class WorkingMemory(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 001's working memory, exactly its fields."""

    session_id: str
    current_topic: str | None
    context_variables: dict[str, Any]
    turn_count: int
    last_emotion: str | None
    created_at: datetime
    updated_at: datetime


Validity = Literal["active", "superseded", "expired", "retracted"]


class Fact(msgspec.Struct, frozen=True, kw_only=True):
    """One long-term fact about a user: seed 000's, 001's, 002's and 004's fields in one record.

    ``id`` is ``fact_`` + 8 hex digits, unique per user. Only ``validity ==
    "active"`` facts are ever retrieved; ``status == "fading"`` marks an active
    fact whose effective confidence decayed below 0.2 (seed 002).
    """

    id: str
    user_id: str
    content: str
    category: str
    confidence: float
    created_at: datetime
    updated_at: datetime
    #: When the fact was last stated (seed 004 ``lastSeen``).
    last_seen: datetime
    #: When the fact was last confirmed; decay counts from here (seed 002).
    last_confirmed_at: datetime | None
    scope: str = "global"
    #: Who the fact is about: ``user``, or another person (see ``relation``).
    subject: str | None = None
    #: What it states (``memory.predicates``: canonical when in the vocabulary).
    predicate: str | None = None
    #: The slot of a one-valued predicate (``favorite`` of ``color``).
    key: str | None = None
    value: str | None = None
    #: How ``subject`` relates to the user when it is someone else (``sister``).
    relation: str | None = None
    #: The fact says the subject does not (or no longer does) hold ``value``.
    negated: bool = False
    #: Seed 001: ``user_stated`` | ``inferred`` | ``system``.
    source: str = "inferred"
    #: Who produced it: ``llm`` | ``rules`` (no Ollama) | ``manual`` | ``import``.
    extractor: str = "llm"
    importance: float = 5.0
    permanence: str = "standard"
    decay_rate: float = 0.008
    validity: Validity = "active"
    status: str | None = None
    supersedes_id: str | None = None
    superseded_by: str | None = None
    #: The entity the fact is about (seed 002), when one is known.
    entity_id: str | None = None
    #: Where a consolidated fact came from: its group's scope (seed 002's
    #: ``source_butler``) and first episode.
    source_scope: str | None = None
    source_episode_id: str | None = None
    #: A kept fact (pinned, or stated more surely) that this one contradicts; the user decides.
    conflicts_with: str | None = None
    pinned: bool = False
    mention_count: int = 1
    access_count: int = 0
    last_accessed: datetime | None = None
    #: The session the fact was last seen in (seed 004 ``lastSeenConversationId``).
    session_id: str | None = None
    tags: list[str] = []
    meta: dict[str, Any] = {}
    #: The client's id of the import line this fact came from ("" for learned facts).
    source_id: str = ""


Maturity = Literal["candidate", "established", "proven", "anti_pattern"]


class Rule(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 002's procedural memory: how to behave, learned from helpful and harmful outcomes.

    ``id`` is ``rule_`` + 8 hex digits, unique per user. ``meta`` holds seed 002's
    flags: ``forgotten``, ``status`` (``fading``), ``needs_inversion``,
    ``harmful_reasons`` and, once inverted, ``original_content``.
    """

    id: str
    user_id: str
    content: str
    created_at: datetime
    updated_at: datetime
    scope: str = "global"
    maturity: Maturity = "candidate"
    confidence: float = 0.5
    decay_rate: float = 0.01
    permanence: str = "standard"
    effectiveness_score: float = 0.0
    applied_count: int = 0
    success_count: int = 0
    harmful_count: int = 0
    source_episode_id: str | None = None
    source_scope: str | None = None
    last_applied_at: datetime | None = None
    last_evaluated_at: datetime | None = None
    #: Decay counts from here; set when the rule is stored.
    last_confirmed_at: datetime | None = None
    reference_count: int = 0
    last_referenced_at: datetime | None = None
    tags: list[str] = []
    meta: dict[str, Any] = {}


Outcome = Literal["helpful", "harmful"]


class RuleApplication(msgspec.Struct, frozen=True, kw_only=True):
    """One use of a rule and how it went (seed 002's ``rule_applications``)."""

    id: str
    user_id: str
    rule_id: str
    outcome: Outcome
    at: datetime
    #: Why it was harmful, or what the agent was doing: free text, possibly empty.
    context: str = ""


class Episode(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 002's episode stored directly: an agent's observation, kept for a week (archived
    chat turns are episodes too, kept by the archive's own retention). ``id`` is ``ep_`` +
    16 hex digits; ``scope`` is the seed's ``butler``."""

    id: str
    user_id: str
    scope: str
    content: str
    created_at: datetime
    expires_at: datetime
    session_id: str | None = None
    importance: float = 5.0
    reference_count: int = 0
    last_referenced_at: datetime | None = None
    consolidated: bool = False
    #: ``pending``, ``consolidated`` or ``failed``.
    consolidation_status: str = "pending"
    retry_count: int = 0
    last_error: str | None = None
    meta: dict[str, Any] = {}


EntityType = Literal["person", "organization", "place", "other"]


class Entity(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 002's identity anchor: one person, organization or place a user's memories
    name in several ways ("Ana", "my sister", "Ana Souza"). ``id`` is ``ent_`` + 8 hex
    digits; ``meta["merged_into"]`` marks an entity merged into another (a tombstone)."""

    id: str
    user_id: str
    canonical_name: str
    entity_type: EntityType
    created_at: datetime
    updated_at: datetime
    aliases: list[str] = []
    meta: dict[str, Any] = {}


ItemType = Literal["episode", "fact", "rule"]
Relation = Literal["derived_from", "supports", "contradicts", "supersedes", "related_to"]


class MemoryLink(msgspec.Struct, frozen=True, kw_only=True):
    """A directed edge between two memories of a user (seed 002's ``memory_links``): the
    source ``relation``s the target ("fact_b supersedes fact_a"). Episodes are archived
    messages (``msg_`` ids). One link per (source, target), whatever its relation."""

    user_id: str
    source_type: ItemType
    source_id: str
    target_type: ItemType
    target_id: str
    relation: Relation
    created_at: datetime


class MemoryEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of the append-only audit log of memory changes (seed 002's
    ``memory_events``). Payloads name ids and states, never a memory's text: deleting a
    memory must not leave its words behind in the log."""

    id: str
    user_id: str
    event_type: str
    created_at: datetime
    #: Who caused it: ``extraction``, ``rest``, ``sweep``, ``import``...
    actor: str | None = None
    payload: dict[str, Any] = {}


class AppNote(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 003's per-app memory: one short paragraph per ended conversation, at most 10 per app."""

    id: str
    user_id: str
    app_id: str
    content: str
    created_at: datetime
    updated_at: datetime
    source_session_id: str | None = None
    meta: dict[str, Any] = {}


class UserProfile(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 000's summaries of a user, kept up to date by a compaction pass."""

    user_id: str
    work: str = ""
    personal: str = ""
    top_of_mind: str = ""
    recent: str = ""
    earlier: str = ""
    background: str = ""
    updated_at: datetime | None = None


class Progress(msgspec.Struct, frozen=True, kw_only=True):
    """How far fact extraction got in a session: turns after ``extracted_through`` are pending."""

    user_id: str
    session_id: str
    scope: str
    extracted_through: int
    last_turn: int
