"""Lines of ``POST /memory/import`` (and ``GET /memory/export``): JSON objects tagged on ``kind``.

Two kinds of line. A ``turn`` or a ``fact`` with only what another system knows (its
text, category, confidence...) is history to learn from: turns are archived, facts go
through the fact rules. A record of an export carries every field mnemo keeps (a fact
with ``updated_at``; a ``rule``, ``entity``, ``episode``, ``link``, ``note`` or
``profile``) and is restored as it was: same id, same fields, history and counters
included. Unknown fields are ignored. Constraints live in the types: a line that
breaks one fails its decode with msgspec's message, which names the field.

The lines repeat the fields of the records (``schemas.records``) on purpose: a file
format of its own, which checks each field's range when it comes from a file and keeps
old files readable when a record changes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec

from schemas.records import EntityType, ItemType, Maturity, Outcome, Relation, Role, Validity
from schemas.wire import MAX_TEXT, NAME_PATTERN

__all__ = [
    "FACT_ID",
    "MAX_TEXT",
    "ApplicationLine",
    "EntityLine",
    "EpisodeLine",
    "FactLine",
    "ImportLine",
    "ImportReply",
    "LineError",
    "LinkLine",
    "NoteLine",
    "ProfileLine",
    "RecordLine",
    "RuleLine",
    "TurnLine",
    "decode_line",
]

Name = Annotated[str, msgspec.Meta(pattern=NAME_PATTERN)]
_Text = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TEXT)]
_Speaker = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
_Confidence = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
_Turn = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]
_Count = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]
_Importance = Annotated[float, msgspec.Meta(ge=0.0, le=10.0)]
_Rate = Annotated[float, msgspec.Meta(ge=0.0, le=100.0)]
_Name = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
_Summary = Annotated[str, msgspec.Meta(max_length=MAX_TEXT)]
#: The ids mnemo gives each kind of record: a restored record keeps its own.
FACT_ID = r"^fact_[0-9a-f]{8}\Z"
_RuleId = Annotated[str, msgspec.Meta(pattern=r"^rule_[0-9a-f]{8}\Z")]
_EntityId = Annotated[str, msgspec.Meta(pattern=r"^ent_[0-9a-f]{8}\Z")]
_EpisodeId = Annotated[str, msgspec.Meta(pattern=r"^ep_[0-9a-f]{16}\Z")]
_NoteId = Annotated[str, msgspec.Meta(pattern=r"^note_[0-9a-f]{8}\Z")]


class _Tagged(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    pass


class _Line(_Tagged, frozen=True, kw_only=True):
    #: The client's id: importing a line whose id was imported before is a no-op.
    id: Name
    scope: Name = "global"
    meta: dict[str, Any] = {}


class TurnLine(_Line, frozen=True, tag="turn"):
    """One message of a conversation."""

    session_id: Name
    speaker: _Speaker
    role: Role
    text: _Text
    at: datetime
    #: Its exchange's number within the session (exports carry it); 0 when unknown.
    turn: _Turn = 0


class FactLine(_Line, frozen=True, tag="fact"):
    """One long-term fact; ``category`` must name a category of the taxonomy (or an alias).

    Without ``updated_at``, a fact to learn (only an ``active`` one is: the fact rules
    apply, and only the first fields count). With it, a fact of an export, restored with
    every field: its ``id`` is its own, ``source_id`` the import line it first came from."""

    content: _Text
    category: str
    confidence: _Confidence
    #: Its ``created_at``.
    at: datetime | None = None
    pinned: bool = False
    subject: str | None = None
    predicate: str | None = None
    validity: Validity = "active"
    updated_at: datetime | None = None
    last_seen: datetime | None = None
    last_confirmed_at: datetime | None = None
    key: str | None = None
    value: str | None = None
    relation: str | None = None
    negated: bool = False
    source: str = "inferred"
    extractor: str = "import"
    importance: _Importance = 5.0
    permanence: str = "standard"
    decay_rate: _Rate = 0.008
    status: str | None = None
    supersedes_id: str | None = None
    superseded_by: str | None = None
    entity_id: str | None = None
    source_scope: str | None = None
    source_episode_id: str | None = None
    conflicts_with: str | None = None
    mention_count: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)] = 1
    access_count: _Count = 0
    last_accessed: datetime | None = None
    session_id: str | None = None
    tags: list[str] = []
    source_id: str = ""


class NoteLine(_Tagged, frozen=True, tag="note"):
    """One of an app's notes (seed 003): restored as it was."""

    id: _NoteId
    app_id: Name
    content: _Text
    #: Its ``created_at``.
    at: datetime
    updated_at: datetime | None = None
    source_session_id: str | None = None
    meta: dict[str, Any] = {}


class ProfileLine(_Tagged, frozen=True, tag="profile"):
    """The user's profile (seed 000's summaries): restored unless the user has a newer one."""

    work: _Summary = ""
    personal: _Summary = ""
    top_of_mind: _Summary = ""
    recent: _Summary = ""
    earlier: _Summary = ""
    background: _Summary = ""
    updated_at: datetime | None = None


class ApplicationLine(msgspec.Struct, frozen=True, kw_only=True):
    """One use of a rule and how it went (seed 002's feedback)."""

    id: Name
    outcome: Outcome
    at: datetime
    context: Annotated[str, msgspec.Meta(max_length=MAX_TEXT)] = ""


class RuleLine(_Line, frozen=True, tag="rule"):
    """A rule (seed 002's procedural memory) with its counters and its applications."""

    id: _RuleId
    content: _Text
    created_at: datetime
    updated_at: datetime
    maturity: Maturity = "candidate"
    confidence: _Confidence = 0.5
    decay_rate: _Rate = 0.01
    permanence: str = "standard"
    effectiveness_score: float = 0.0
    applied_count: _Count = 0
    success_count: _Count = 0
    harmful_count: _Count = 0
    source_episode_id: str | None = None
    source_scope: str | None = None
    last_applied_at: datetime | None = None
    last_evaluated_at: datetime | None = None
    last_confirmed_at: datetime | None = None
    reference_count: _Count = 0
    last_referenced_at: datetime | None = None
    tags: list[str] = []
    applications: list[ApplicationLine] = []


class EntityLine(_Tagged, frozen=True, tag="entity"):
    """An entity (seed 002): a person, organization or place and the names it goes by."""

    id: _EntityId
    canonical_name: _Name
    entity_type: EntityType
    created_at: datetime
    updated_at: datetime
    aliases: list[_Name] = []
    meta: dict[str, Any] = {}


class EpisodeLine(_Line, frozen=True, tag="episode"):
    """An episode stored directly (seed 002), with its consolidation state."""

    id: _EpisodeId
    content: _Text
    created_at: datetime
    expires_at: datetime
    session_id: str | None = None
    importance: _Importance = 5.0
    reference_count: _Count = 0
    last_referenced_at: datetime | None = None
    consolidated: bool = False
    consolidation_status: str = "pending"
    retry_count: _Count = 0
    last_error: str | None = None


class LinkLine(_Tagged, frozen=True, tag="link"):
    """A link between two memories (seed 002); an archived message is named by its turn
    line's ``id``."""

    source_type: ItemType
    source_id: Name
    target_type: ItemType
    target_id: Name
    relation: Relation
    created_at: datetime


#: Lines restored as they are (``FactLine`` too, when it carries ``updated_at``).
RecordLine = NoteLine | ProfileLine | RuleLine | EntityLine | EpisodeLine | LinkLine
ImportLine = TurnLine | FactLine | RecordLine

_decoder: msgspec.json.Decoder[ImportLine] = msgspec.json.Decoder(ImportLine)


def decode_line(raw: bytes) -> ImportLine:
    """Decode one line. Raises ``msgspec.DecodeError`` (bad JSON, kind, field or value, or
    nested too deeply for the decoder)."""
    try:
        return _decoder.decode(raw)
    except RecursionError:
        raise msgspec.ValidationError("JSON nested too deeply") from None


class LineError(msgspec.Struct, frozen=True):
    #: 1-based line number within the request body.
    line: int
    message: str


class ImportReply(msgspec.Struct, kw_only=True):
    """The answer to an import: counts, and the lines that failed (the first 1000 of them)."""

    imported: int = 0
    skipped: int = 0
    errors: list[LineError] = []
    #: Failed lines beyond those listed in ``errors``.
    errors_omitted: int = 0
