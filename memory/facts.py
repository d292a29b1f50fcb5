"""Long-term facts: ids, categories, duplicates, conflicts, the per-user cap, sweeps.

Everything here is pure: functions take a user's stored facts and return the
changes for the caller to persist (and to log: skipped candidates carry a reason).
Vectors are unit length, so cosine similarity is their dot product. How one
stored fact ages (decay, eviction score, access, pins) is in ``memory.decay``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import msgspec

from memory.candidates import Candidate, Stored, Vector, candidate_from_extracted
from memory.conflicts import find_contradicted, find_duplicate, kept_because
from memory.decay import decay_rate_for, eviction_score, sweep_fact
from memory.predicates import Vocabulary, canonical_subject, refines
from schemas.records import Fact, Validity
from schemas.settings import DUPLICATE_POLICIES, Settings
from schemas.taxonomy import CATEGORY_ALIASES, DEFAULT_CATEGORIES, CategorySpec

__all__ = [
    "DUPLICATE_POLICIES",
    "SKIP_DUPLICATE",
    "SKIP_LOW_CONFIDENCE",
    "Candidate",
    "Changes",
    "Conflict",
    "FactPolicy",
    "Stored",
    "Vector",
    "apply_candidate",
    "apply_candidates",
    "candidate_from_extracted",
    "fresh_id",
    "new_fact_id",
    "normalize_category",
    "sweep",
]

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
    return fresh_id("fact", taken, rand)


def fresh_id(kind: str, taken: Collection[str], rand: Callable[[], str] | None = None) -> str:
    """``{kind}_`` + 8 lowercase hex digits, not in ``taken`` (see ``new_fact_id``)."""
    draw = rand if rand is not None else _token
    for _ in range(_ID_ATTEMPTS):
        new_id = f"{kind}_{draw()}"
        if new_id not in taken:
            return new_id
    raise RuntimeError(f"no free {kind} id after {_ID_ATTEMPTS} draws")


def normalize_category(name: str, categories: Sequence[CategorySpec]) -> str | None:
    """The taxonomy's name for ``name`` (case, spaces and seed 001's aliases aside), or None."""
    names = {spec.name for spec in categories}
    key = " ".join(name.split()).lower()
    if key not in names:
        key = CATEGORY_ALIASES.get(key, key)
    return key if key in names else None


@dataclass(frozen=True, slots=True, kw_only=True)
class FactPolicy:
    """The fact rules' knobs; ``from_settings`` reads them from ``Settings``."""

    confidence_threshold: float = 0.5
    max_facts: int = 500
    max_pinned: int = 10
    near_duplicate_similarity: float = 0.92
    duplicate_policy: str = "reinforce"
    reinforce_step: float = 0.15
    #: Seed 004: a fact added by hand starts lower but is boosted faster on repetition.
    manual_reinforce_step: float = 0.25
    #: Seed 004 ``updates_previous``: the replaced fact is at least this similar.
    update_similarity: float = 0.5
    #: Seed 000 ``correction``: the corrected fact is at least this similar.
    correction_similarity: float = 0.6
    categories: tuple[CategorySpec, ...] = DEFAULT_CATEGORIES
    vocabulary: Vocabulary = field(default_factory=Vocabulary)

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
            manual_reinforce_step=settings.manual_reinforce_step,
            categories=tuple(settings.categories),
            vocabulary=Vocabulary(settings.predicates),
        )


@dataclass(slots=True)
class Changes:
    """What to persist. Each fact appears at most once, in its final state.

    A fact added by the batch stays in ``added`` whatever later candidates did to
    it (a later eviction drops it altogether). ``superseded`` holds the facts a
    new one replaced or retracted; ``conflicts`` the new facts that contradict a
    fact that stays. ``skipped`` holds (content, reason).
    """

    added: list[Stored] = field(default_factory=list)
    updated: list[Fact] = field(default_factory=list)
    superseded: list[Fact] = field(default_factory=list)
    removed: list[Fact] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Conflict:
    """A new fact (``fact_id``) contradicts ``kept_id``, which stays active: ``reason``."""

    fact_id: str
    kept_id: str
    reason: str


_Kind = Literal["added", "updated", "superseded", "removed"]


class _Batch:
    """The user's facts as a batch of candidates changes them, and what changed."""

    __slots__ = ("conflicts", "facts", "gone", "ids", "kinds", "now", "policy", "rand", "skipped")

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
        self.conflicts: list[Conflict] = []
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
        policy = self.policy
        imported = candidate.extractor == "import"
        if not imported and candidate.confidence < policy.confidence_threshold:
            self.skipped.append((candidate.content, SKIP_LOW_CONFIDENCE))
            return
        peers = [s for s in self.active(candidate.user_id) if s.fact.scope == candidate.scope]
        vocabulary = policy.vocabulary
        duplicate = find_duplicate(peers, candidate, vocabulary, policy.near_duplicate_similarity)
        if duplicate is not None:
            self.merge(duplicate, candidate)
            return
        contradicted = find_contradicted(
            peers,
            candidate,
            vocabulary,
            update_similarity=policy.update_similarity,
            correction_similarity=policy.correction_similarity,
        )
        fact_id = new_fact_id(self.ids, self.rand)
        self.ids.add(fact_id)
        replaced: list[Fact] = []
        for old in contradicted:
            reason = kept_because(candidate, old)
            if reason is not None:
                self.conflicts.append(Conflict(fact_id, old.id, reason))
                continue
            validity: Validity = "retracted" if candidate.negated else "superseded"
            gone = _replace(old, validity=validity, superseded_by=fact_id, updated_at=self.now)
            self.put(gone, "superseded")
            replaced.append(old)
        kept = next((c.kept_id for c in self.conflicts if c.fact_id == fact_id), None)
        self.add(fact_id, candidate, replaced, kept)
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
            by_hand = "manual" in (fact.extractor, candidate.extractor)
            step = self.policy.manual_reinforce_step if by_hand else self.policy.reinforce_step
            merged = _replace(
                fact,
                confidence=round(min(1.0, fact.confidence + step), 6),
                mention_count=fact.mention_count + 1,
                last_seen=self.now,
                last_confirmed_at=self.now,
                updated_at=self.now,
                session_id=candidate.session_id or fact.session_id,
                status=None if fact.status == "fading" else fact.status,
            )
        if refines(fact.value, candidate.value):  # "a dog" learns its name
            merged = _replace(merged, content=candidate.content.strip(), value=candidate.value)
        if (
            candidate.pinned
            and not merged.pinned
            and self.pinned_count(candidate.user_id) < self.policy.max_pinned
        ):
            merged = _replace(merged, pinned=True)
        self.put(merged, "updated")

    def add(
        self,
        fact_id: str,
        candidate: Candidate,
        replaced: Sequence[Fact],
        conflicts_with: str | None,
    ) -> None:
        permanence = candidate.permanence or "standard"
        stated = self.now if candidate.at is None else min(candidate.at, self.now)
        vocabulary = self.policy.vocabulary
        subject = candidate.subject
        if subject is not None and canonical_subject(subject) == "user":
            subject = "user"
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
            subject=subject,
            predicate=vocabulary.canonical(candidate.predicate),
            key=candidate.key,
            value=candidate.value,
            relation=candidate.relation,
            negated=candidate.negated,
            source=candidate.source,
            extractor=candidate.extractor,
            permanence=permanence,
            decay_rate=decay_rate_for(permanence),
            supersedes_id=replaced[0].id if replaced else None,
            conflicts_with=conflicts_with,
            # Never inherited from a replaced fact: a pin is the user's own choice.
            pinned=candidate.pinned
            and self.pinned_count(candidate.user_id) < self.policy.max_pinned,
            session_id=candidate.session_id,
            meta=dict(candidate.meta),
            source_id=candidate.source_id,
            importance=candidate.importance,
            tags=list(candidate.tags),
            entity_id=candidate.entity_id,
            source_scope=candidate.source_scope,
            source_episode_id=candidate.source_episode_id,
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
        out.conflicts = [c for c in self.conflicts if self.kinds.get(c.fact_id) == "added"]
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
    same user and scope reinforces it (or is skipped, policy ``unchanged``); the
    active facts it contradicts are superseded (retracted, for a negation) unless
    they must stay, in which case both stay and ``conflicts`` says so (see
    ``memory.conflicts``); then the user's active facts are capped at
    ``max_facts`` by eviction score, pinned facts exempt. ``existing`` holds the
    user's stored facts (any validity); ``rand`` draws new ids' hex digits (tests).
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
