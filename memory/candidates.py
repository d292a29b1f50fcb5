"""What the fact rules work on: stored facts with their vectors, and candidates to store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.decay import decay_rate_for
from schemas.llm import ExtractedFact
from schemas.predicates import Cardinality
from schemas.records import Fact

__all__ = ["Candidate", "Stored", "Vector", "candidate_from_extracted"]

#: An embedding: a list of floats, or float32 NumPy (what the in-memory indexes hold).
Vector = Sequence[float] | npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Stored:
    """A stored fact and its embedding (unit length)."""

    fact: Fact
    vector: Vector


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """A fact about to be stored: from extraction, a ``remember`` frame or an import.

    ``category`` is already normalized (see ``memory.facts.normalize_category``);
    ``permanence`` None means ``standard``. An import (``extractor == "import"``)
    copies a record rather than guessing one: the confidence threshold does not
    apply, and a duplicate is skipped rather than counted as one more mention, so
    importing the same fact twice changes nothing. ``at`` dates a fact stated
    before it was stored (imports). ``subject``, ``predicate``, ``value``,
    ``negated``, ``updates_previous`` and ``cardinality`` decide which stored facts
    it duplicates or contradicts (``memory.conflicts``). Raises ``ValueError`` for
    an unknown permanence (seed 002), a confidence outside 0..1 or blank content.
    """

    user_id: str
    content: str
    category: str
    confidence: float
    vector: Sequence[float]
    updates_previous: bool = False
    subject: str | None = None
    predicate: str | None = None
    key: str | None = None
    value: str | None = None
    relation: str | None = None
    negated: bool = False
    cardinality: Cardinality | None = None
    permanence: str | None = None
    source: str = "inferred"
    extractor: str = "llm"
    scope: str = "global"
    session_id: str | None = None
    pinned: bool = False
    at: datetime | None = None
    source_id: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)
    #: Seed 002's importance (0..10), tags, and the entity the fact is about.
    importance: float = 5.0
    tags: Sequence[str] = ()
    entity_id: str | None = None
    source_scope: str | None = None
    source_episode_id: str | None = None

    def __post_init__(self) -> None:
        if self.permanence is not None:
            decay_rate_for(self.permanence)
        if not 0.0 <= self.importance <= 10.0:
            raise ValueError(f"importance must be within 0..10, not {self.importance}")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence must be within 0..1, not {self.confidence}")
        if not self.content.strip():
            raise ValueError("fact content is blank")


def candidate_from_extracted(
    extracted: ExtractedFact,
    *,
    category: str,
    vector: Sequence[float],
    user_id: str,
    scope: str = "global",
    session_id: str | None = None,
    source: str = "inferred",
    extractor: str = "llm",
) -> Candidate:
    """A candidate from an extracted fact; ``category`` is its normalized category.

    Raises ``ValueError`` for an unknown permanence (the caller logs and drops the fact).
    """
    return Candidate(
        user_id=user_id,
        content=extracted.content,
        category=category,
        confidence=extracted.confidence,
        vector=vector,
        updates_previous=extracted.updates_previous,
        subject=extracted.subject,
        predicate=extracted.predicate,
        key=extracted.key,
        value=extracted.value,
        relation=extracted.relation,
        negated=extracted.negated,
        cardinality=extracted.cardinality,
        permanence=extracted.permanence,
        source=source,
        extractor=extractor,
        scope=scope,
        session_id=session_id,
    )
