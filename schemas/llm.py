"""What goes to and comes from the language model."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = [
    "ChatChunk",
    "ExtractedFact",
    "Extraction",
    "MemoryUpdate",
    "NoteDecision",
    "NoteText",
    "ProfileSummary",
    "PromptMessage",
    "SessionAnalysis",
]


class PromptMessage(msgspec.Struct, frozen=True):
    role: Literal["system", "user", "assistant"]
    content: str


class ChatChunk(msgspec.Struct, frozen=True, kw_only=True):
    """One streamed piece of a reply; the last one has ``done=True`` and the token counts."""

    text: str = ""
    done: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0


Confidence = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class ExtractedFact(msgspec.Struct, frozen=True, kw_only=True):
    """One fact as the extraction model (or the rule-based extractor) returns it.

    ``subject`` is ``"user"`` for the user, else the other person (their name, or
    their relation when unnamed) with ``relation`` saying how they relate to the
    user. ``predicate`` is a name from the predicate vocabulary
    (``schemas.predicates``) when one fits, else a short snake_case verb; ``value``
    is what it holds, without the details that ``content`` may add. ``negated``:
    the statement says it is not (or no longer) so ("I don't eat meat anymore").
    ``updates_previous``: the user says it replaces something said before.
    ``cardinality`` matters only for predicates outside the vocabulary.
    """

    content: Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
    category: str
    confidence: Confidence
    subject: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    predicate: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    value: Annotated[str, msgspec.Meta(min_length=1, max_length=300)]
    relation: str | None = None
    key: str | None = None
    negated: bool = False
    updates_previous: bool = False
    cardinality: Literal["one", "many"] | None = None
    permanence: str | None = None


class MemoryUpdate(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 001's signal: the user stated something worth keeping."""

    should_store: bool = False


class SessionAnalysis(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 001's working-memory analysis of the latest turns."""

    current_topic: str | None = None
    context_variables: dict[str, str] = {}
    last_emotion: str | None = None


class Extraction(msgspec.Struct, frozen=True, kw_only=True):
    """Everything one extraction call returns (sent to Ollama as ``format=``)."""

    facts: list[ExtractedFact]
    memory_update: MemoryUpdate
    analysis: SessionAnalysis


class NoteText(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 003: a 2-4 sentence memory of one conversation."""

    content: Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]
    #: Seed 003's metadata: how much the note matters (0-10) and a few topic tags.
    importance: Annotated[int, msgspec.Meta(ge=0, le=10)] = 5
    tags: Annotated[
        list[Annotated[str, msgspec.Meta(min_length=1, max_length=40)]], msgspec.Meta(max_length=8)
    ] = []


class NoteDecision(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 003: which one of 11 notes to delete, or to rewrite (merge) instead."""

    action: Literal["delete", "edit"]
    target_id: str
    reason: str
    new_content: str | None = None


class ProfileSummary(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 000's user context and history summaries."""

    work: str = ""
    personal: str = ""
    top_of_mind: str = ""
    recent: str = ""
    earlier: str = ""
    background: str = ""
