"""Long-term facts: ids, categories, duplicates, conflicts, the per-user cap, sweeps.

Everything here is pure: functions take a user's stored facts and return the
changes for the caller to persist (and to log: skipped candidates carry a reason).
Vectors are unit length, so cosine similarity is their dot product. How one
stored fact ages (decay, eviction score, access, pins) is in ``memory.decay``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import msgspec
import numpy as np
import numpy.typing as npt

from memory.decay import decay_rate_for, eviction_score, sweep_fact
from schemas.llm import ExtractedFact
from schemas.records import Fact
from schemas.settings import Settings
from schemas.taxonomy import CATEGORY_ALIASES, DEFAULT_CATEGORIES, CategorySpec

__all__ = [
    "DUPLICATE_POLICIES",
    "SKIP_DUPLICATE",
    "SKIP_LOW_CONFIDENCE",
    "Candidate",
    "Changes",
    "FactPolicy",
    "Stored",
    "Vector",
    "apply_candidate",
    "apply_candidates",
    "candidate_from_extracted",
    "new_fact_id",
    "normalize_category",
    "sweep",
]

#: An embedding: a list of floats, or float32 NumPy (what the in-memory indexes hold).
Vector = Sequence[float] | npt.NDArray[np.float32]

#: ``reinforce``: seed 004's merge (+confidence, mention count); ``unchanged``: seed 000's skip.
DUPLICATE_POLICIES = ("reinforce", "unchanged")
SKIP_LOW_CONFIDENCE = "low confidence"
SKIP_DUPLICATE = "duplicate"

_ID_ATTEMPTS = 1000
#: ``CategorySpec``'s default, for facts whose category left the taxonomy.
_DEFAULT_EVICTION_WEIGHT = 0.5
_replace = msgspec.structs.replace


def _token() -> str:
    return secrets.token_hex(4)


def new_fact_id(taken: Collection[str], rand: Callable[[], str] | None = None) -> str:
    """``fact_`` + 8 lowercase hex digits, drawn again while the id is in ``taken``.

    Raises ``RuntimeError`` if ``rand`` collides 1000 times in a row (only a broken one does).
    """
    draw = rand if rand is not None else _token
    for _ in range(_ID_ATTEMPTS):
        fact_id = f"fact_{draw()}"
        if fact_id not in taken:
            return fact_id
    raise RuntimeError(f"no free fact id after {_ID_ATTEMPTS} draws")


def normalize_category(name: str, categories: Sequence[CategorySpec]) -> str | None:
    """The taxonomy's name for ``name`` (case, spaces and seed 001's aliases aside), or None."""
    names = {spec.name for spec in categories}
    key = " ".join(name.split()).lower()
    if key not in names:
        key = CATEGORY_ALIASES.get(key, key)
    return key if key in names else None


@dataclass(frozen=True, slots=True)
class Stored:
    """A stored fact and its embedding (unit length)."""

    fact: Fact
    vector: Vector


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """A fact about to be stored: from extraction, a ``remember`` frame or an import.

    ``category`` is already normalized (see ``normalize_category``); ``permanence``
    None means ``standard``. An import (``extractor == "import"``) copies a record
    rather than guessing one: the confidence threshold does not apply, and a
    duplicate is skipped rather than counted as one more mention, so importing
    the same fact twice changes nothing. ``at`` dates a fact stated before it
    was stored (imports). Raises ``ValueError`` for an unknown permanence (seed 002),
    a confidence outside 0..1 or blank content.
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
    permanence: str | None = None
    source: str = "inferred"
    extractor: str = "llm"
    scope: str = "global"
    session_id: str | None = None
    pinned: bool = False
    at: datetime | None = None
    source_id: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.permanence is not None:
            decay_rate_for(self.permanence)
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
    """A candidate from a model-extracted fact; ``category`` is its normalized category.

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
        permanence=extracted.permanence,
        source=source,
        extractor=extractor,
        scope=scope,
        session_id=session_id,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class FactPolicy:
    """The fact rules' knobs; ``from_settings`` reads them from ``Settings``."""

    confidence_threshold: float = 0.5
    max_facts: int = 500
    max_pinned: int = 10
    near_duplicate_similarity: float = 0.92
    duplicate_policy: str = "reinforce"
    reinforce_step: float = 0.15
    #: Seed 004 ``updates_previous``: the replaced fact is at least this similar.
    update_similarity: float = 0.5
    #: Seed 000 ``correction``: the corrected fact is at least this similar.
    correction_similarity: float = 0.6
    categories: tuple[CategorySpec, ...] = DEFAULT_CATEGORIES

    def __post_init__(self) -> None:
        if self.duplicate_policy not in DUPLICATE_POLICIES:
            raise ValueError(
                f"unknown duplicate policy {self.duplicate_policy!r}; "
                f"valid: {', '.join(DUPLICATE_POLICIES)}"
            )

    @classmethod
    def from_settings(cls, settings: Settings) -> FactPolicy:
        return cls(
            confidence_threshold=settings.confidence_threshold,
            max_facts=settings.max_facts,
            max_pinned=settings.max_pinned,
            near_duplicate_similarity=settings.near_duplicate_similarity,
            duplicate_policy=settings.duplicate_policy,
            reinforce_step=settings.reinforce_step,
            categories=tuple(settings.categories),
        )


@dataclass(slots=True)
class Changes:
    """What to persist. Each fact appears at most once, in its final state.

    A fact added by the batch stays in ``added`` whatever later candidates did to
    it (a later eviction drops it altogether). ``skipped`` holds (content, reason).
    """

    added: list[Stored] = field(default_factory=list)
    updated: list[Fact] = field(default_factory=list)
    superseded: list[Fact] = field(default_factory=list)
    removed: list[Fact] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def _similarity(a: Vector, b: Vector) -> float:
    # Vectors of another embedder (other length) are never similar.
    if len(a) == 0 or len(a) != len(b):
        return 0.0
    return float(np.dot(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)))


def _most_similar(peers: Iterable[Stored], vector: Vector, floor: float) -> Fact | None:
    scored = [(sim, s.fact) for s in peers if (sim := _similarity(s.vector, vector)) >= floor]
    if not scored:
        return None
    return min(scored, key=lambda pair: (-pair[0], pair[1].id))[1]


def _statement(subject: str | None, predicate: str | None) -> tuple[str, str] | None:
    if subject is None or predicate is None or not subject.strip() or not predicate.strip():
        return None
    return _fold(subject), _fold(predicate)


def _find_duplicate(peers: Sequence[Stored], candidate: Candidate, floor: float) -> Fact | None:
    text = _fold(candidate.content)
    for stored in peers:
        if _fold(stored.fact.content) == text:
            return stored.fact
    return _most_similar(peers, candidate.vector, floor)


def _find_conflicts(
    peers: Sequence[Stored], candidate: Candidate, policy: FactPolicy
) -> list[Fact]:
    """Active facts the candidate contradicts, the one it replaces most directly first."""
    found: dict[str, Fact] = {}
    if candidate.updates_previous:
        same = (s for s in peers if s.fact.category == candidate.category)
        best = _most_similar(same, candidate.vector, policy.update_similarity)
        if best is not None:
            found[best.id] = best
    statement = _statement(candidate.subject, candidate.predicate)
    if statement is not None:
        matches = [
            s.fact for s in peers if _statement(s.fact.subject, s.fact.predicate) == statement
        ]
        for fact in sorted(matches, key=lambda f: (f.updated_at, f.id), reverse=True):
            found.setdefault(fact.id, fact)
    if candidate.category == "correction":
        best = _most_similar(peers, candidate.vector, policy.correction_similarity)
        if best is not None:
            found.setdefault(best.id, best)
    return list(found.values())


_Kind = Literal["added", "updated", "superseded", "removed"]


class _Batch:
    """The user's facts as a batch of candidates changes them, and what changed."""

    __slots__ = ("facts", "gone", "ids", "kinds", "now", "policy", "rand", "skipped")

    def __init__(
        self,
        existing: Sequence[Stored],
        policy: FactPolicy,
        now: datetime,
        rand: Callable[[], str] | None,
    ) -> None:
        self.facts = {stored.fact.id: stored for stored in existing}
        self.ids = set(self.facts)
        self.gone: dict[str, Fact] = {}
        self.kinds: dict[str, _Kind] = {}
        self.skipped: list[tuple[str, str]] = []
        self.policy, self.now, self.rand = policy, now, rand

    def active(self, user_id: str) -> list[Stored]:
        return [
            s
            for s in self.facts.values()
            if s.fact.user_id == user_id and s.fact.validity == "active"
        ]

    def put(self, fact: Fact, kind: _Kind) -> None:
        self.facts[fact.id] = Stored(fact, self.facts[fact.id].vector)
        if self.kinds.get(fact.id) != "added":
            self.kinds[fact.id] = kind

    def remove(self, fact_id: str) -> None:
        stored = self.facts.pop(fact_id)
        if self.kinds.get(fact_id) == "added":
            del self.kinds[fact_id]  # never stored: nothing to remove
        else:
            self.gone[fact_id] = stored.fact
            self.kinds[fact_id] = "removed"

    def apply(self, candidate: Candidate) -> None:
        imported = candidate.extractor == "import"
        if not imported and candidate.confidence < self.policy.confidence_threshold:
            self.skipped.append((candidate.content, SKIP_LOW_CONFIDENCE))
            return
        peers = [s for s in self.active(candidate.user_id) if s.fact.scope == candidate.scope]
        duplicate = _find_duplicate(peers, candidate, self.policy.near_duplicate_similarity)
        if duplicate is not None:
            self.merge(duplicate, candidate)
            return
        replaced = _find_conflicts(peers, candidate, self.policy)
        fact_id = new_fact_id(self.ids, self.rand)
        self.ids.add(fact_id)
        for old in replaced:
            superseded = _replace(
                old, validity="superseded", superseded_by=fact_id, updated_at=self.now
            )
            self.put(superseded, "superseded")
        self.add(fact_id, candidate, replaced)
        self.cap(candidate.user_id, fact_id)

    def pinned_count(self, user_id: str) -> int:
        return sum(1 for s in self.active(user_id) if s.fact.pinned)

    def merge(self, fact: Fact, candidate: Candidate) -> None:
        if self.policy.duplicate_policy == "unchanged" or candidate.extractor == "import":
            self.skipped.append((candidate.content, SKIP_DUPLICATE))
            return
        if fact.extractor == "rules" and candidate.extractor == "llm":
            # One statement seen by both extractors is one mention: upgrade, don't count.
            merged = _replace(
                fact,
                extractor="llm",
                confidence=max(fact.confidence, candidate.confidence),
                updated_at=self.now,
            )
        else:
            merged = _replace(
                fact,
                confidence=round(min(1.0, fact.confidence + self.policy.reinforce_step), 6),
                mention_count=fact.mention_count + 1,
                last_seen=self.now,
                last_confirmed_at=self.now,
                updated_at=self.now,
                session_id=candidate.session_id or fact.session_id,
                status=None if fact.status == "fading" else fact.status,
            )
        if (
            candidate.pinned
            and not merged.pinned
            and self.pinned_count(candidate.user_id) < self.policy.max_pinned
        ):
            merged = _replace(merged, pinned=True)
        self.put(merged, "updated")

    def add(self, fact_id: str, candidate: Candidate, replaced: Sequence[Fact]) -> None:
        permanence = candidate.permanence or "standard"
        # A replacement keeps the pin of the fact it replaces (whose slot it frees).
        wants_pin = candidate.pinned or any(old.pinned for old in replaced)
        stated = self.now if candidate.at is None else min(candidate.at, self.now)
        fact = Fact(
            id=fact_id,
            user_id=candidate.user_id,
            content=candidate.content.strip(),
            category=candidate.category,
            confidence=candidate.confidence,
            created_at=stated,
            updated_at=self.now,
            last_seen=stated,
            last_confirmed_at=self.now,
            scope=candidate.scope,
            subject=candidate.subject,
            predicate=candidate.predicate,
            key=candidate.key,
            value=candidate.value,
            source=candidate.source,
            extractor=candidate.extractor,
            permanence=permanence,
            decay_rate=decay_rate_for(permanence),
            supersedes_id=replaced[0].id if replaced else None,
            pinned=wants_pin and self.pinned_count(candidate.user_id) < self.policy.max_pinned,
            session_id=candidate.session_id,
            meta=dict(candidate.meta),
            source_id=candidate.source_id,
        )
        self.facts[fact_id] = Stored(fact, candidate.vector)
        self.kinds[fact_id] = "added"

    def cap(self, user_id: str, new_id: str) -> None:
        active = self.active(user_id)
        excess = len(active) - self.policy.max_facts
        if excess <= 0:
            return
        weights = {spec.name: spec.eviction_weight for spec in self.policy.categories}

        def order(fact: Fact) -> tuple[float, datetime, str]:
            weight = weights.get(fact.category, _DEFAULT_EVICTION_WEIGHT)
            return -eviction_score(fact, weight, self.now), fact.created_at, fact.id

        evictable = sorted(
            (s.fact for s in active if not s.fact.pinned and s.fact.id != new_id), key=order
        )
        new = self.facts[new_id].fact
        if not new.pinned:
            evictable.append(new)  # only when nothing else can go
        for fact in evictable[:excess]:
            self.remove(fact.id)

    def changes(self) -> Changes:
        out = Changes(skipped=list(self.skipped))
        changed = {"updated": out.updated, "superseded": out.superseded}
        for fact_id, kind in self.kinds.items():
            if kind == "added":
                out.added.append(self.facts[fact_id])
            elif kind == "removed":
                out.removed.append(self.gone[fact_id])
            else:
                changed[kind].append(self.facts[fact_id].fact)
        return out


def apply_candidates(
    existing: Sequence[Stored],
    candidates: Iterable[Candidate],
    *,
    policy: FactPolicy,
    now: datetime,
    rand: Callable[[], str] | None = None,
) -> Changes:
    """Apply candidates in order, each seeing what the previous ones changed.

    Per candidate: below the threshold, skip; a duplicate of an active fact of the
    same user and scope (casefolded text, or near by vector) reinforces it (or is
    skipped, policy ``unchanged``); a contradicted active fact is superseded by the
    new one; then the user's active facts are capped at ``max_facts`` by eviction
    score, pinned facts exempt. ``existing`` holds the user's stored facts (any
    validity); ``rand`` draws new ids' hex digits (tests).
    """
    batch = _Batch(existing, policy, now, rand)
    for candidate in candidates:
        batch.apply(candidate)
    return batch.changes()


def apply_candidate(
    existing: Sequence[Stored],
    candidate: Candidate,
    *,
    policy: FactPolicy,
    now: datetime,
    rand: Callable[[], str] | None = None,
) -> Changes:
    """Apply one candidate; see ``apply_candidates``."""
    return apply_candidates(existing, (candidate,), policy=policy, now=now, rand=rand)


def sweep(facts: Sequence[Fact], *, categories: Sequence[CategorySpec], now: datetime) -> Changes:
    """The scheduled decay and category-expiry sweep: changed facts in ``updated``."""
    expiry = {spec.name: spec.expiry_days for spec in categories}
    changed = (sweep_fact(fact, expiry_days=expiry.get(fact.category), now=now) for fact in facts)
    return Changes(updated=[fact for fact in changed if fact is not None])
