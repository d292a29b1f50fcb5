"""Which stored facts a candidate repeats, which it contradicts, and whether it may replace them.

Only statements about the same subject relate (``user`` and every way of naming
the user are one subject; another person is known by name, or by relation while
unnamed). Within a subject, ``(predicate, key)`` is the slot a fact fills:

- **Duplicate**: the same text (case and spacing aside); the same slot and
  polarity with the same value (for a one-valued predicate, a value that names
  the other with more words: "Acme" / "Acme Corp"); a negation a stored diet or
  allergy already implies ("vegetarian" / "doesn't eat meat"); or, where
  structure does not tell two facts apart (same polarity, values sharing a
  word), embeddings at least ``near_duplicate_similarity`` alike.
- **Contradiction**: a one-valued slot with another value ("lives in Lisbon" /
  "lives in Porto"); the same value with the opposite polarity ("eats meat" /
  "no longer eats meat"), also across a predicate family ("likes running" /
  "no longer runs") and for a kind ("loves red wine" / "stopped drinking
  alcohol"); the same value in the opposite predicate ("likes jazz" / "dislikes
  jazz"); with ``updates_previous``, the most similar fact of the slot (or of the
  category, for facts without a predicate); a ``correction`` replaces the most
  similar fact. Values of a many-valued predicate accumulate.
- **Replacing** needs the right to: a pinned fact is never replaced, and a fact
  the user stated is not replaced by an inferred one unless the new one says it
  replaces something (``updates_previous``, a negation) or comes from the user's
  own hand. Otherwise both stay, linked, for the user to resolve.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

import numpy as np

from memory.candidates import Candidate, Stored, Vector
from memory.predicates import (
    Vocabulary,
    canonical_subject,
    covers,
    excluded_by_diet,
    overlap,
    refines,
    same_value,
)
from schemas.records import Fact

__all__ = [
    "KEPT_PINNED",
    "KEPT_STATED",
    "find_contradicted",
    "find_duplicate",
    "kept_because",
    "most_similar",
    "similarity",
]

#: Predicates whose facts say how much or how often: a taste of the same thing is news.
_AMOUNTS = frozenset(("eats", "drinks"))
KEPT_PINNED = "pinned"
KEPT_STATED = "stated more surely"

_Who = tuple[str, str | None]


def similarity(a: Vector, b: Vector) -> float:
    """Cosine similarity of unit vectors; vectors of another embedder (length) never match."""
    if len(a) == 0 or len(a) != len(b):
        return 0.0
    return float(np.dot(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)))


def most_similar(peers: Iterable[Stored], vector: Vector, floor: float) -> Fact | None:
    scored = [(sim, s.fact) for s in peers if (sim := similarity(s.vector, vector)) >= floor]
    if not scored:
        return None
    return min(scored, key=lambda pair: (-pair[0], pair[1].id))[1]


def _fold(text: str | None) -> str:
    return " ".join(text.split()).casefold() if text else ""


@functools.lru_cache(maxsize=4096)
def _who(subject: str | None, relation: str | None) -> _Who:
    return canonical_subject(subject), _fold(relation) or None


def _who_of(item: Candidate | Fact) -> _Who:
    """Who a statement is about: its entity when it names one (seed 002's key), else its
    subject and relation."""
    if item.entity_id is not None:
        return f"entity:{item.entity_id}", None
    return _who(item.subject, item.relation)


def _same_subject(a: _Who, b: _Who) -> bool:
    if a[0] == b[0]:
        return True
    if "user" in (a[0], b[0]) or a[1] is None or a[1] != b[1]:
        return False
    # "my sister" and "my sister Ana" are one person while only one of them has a name.
    return a[0] == a[1] or b[0] == b[1]


class _Slot:
    """A candidate's statement, ready to compare with stored facts."""

    __slots__ = ("cand", "family", "key", "one", "opposite", "predicate", "vocabulary", "who")

    def __init__(self, cand: Candidate, vocabulary: Vocabulary) -> None:
        self.cand, self.vocabulary = cand, vocabulary
        self.who = _who_of(cand)
        self.predicate = vocabulary.canonical(cand.predicate)
        self.key = _fold(cand.key)
        self.one = vocabulary.cardinality(self.predicate, cand.cardinality) == "one"
        self.opposite = vocabulary.opposite(self.predicate)
        self.family = vocabulary.family(self.predicate)

    def relation_to(self, fact: Fact) -> str | None:
        """``same``, ``opposite``, ``family`` or ``other`` slot of the same subject; None if
        unrelated. The predicate is compared first: it rules most facts out cheaply."""
        if self.predicate is None or fact.predicate is None:
            return None
        predicate = self.vocabulary.canonical(fact.predicate)
        if predicate == self.predicate and _fold(fact.key) == self.key:
            relation = "same"
        elif predicate is not None and predicate == self.opposite:
            relation = "opposite"
        elif self.family is not None and self.vocabulary.family(predicate) == self.family:
            relation = "family"
        else:
            relation = "other"
        if not _same_subject(self.who, _who_of(fact)):
            return None
        return relation

    def repeats(self, fact: Fact) -> bool:
        """The same statement in other words: same slot, polarity and value; or, within a
        family, a taste and an activity of one value ("loves hiking" / "hobby: hiking")."""
        relation = self.relation_to(fact)
        if fact.negated != self.cand.negated or relation not in ("same", "family"):
            return False
        if relation == "family":
            sides = {self.predicate, self.vocabulary.canonical(fact.predicate)}
            return not sides & _AMOUNTS and covers(fact.value, self.cand.value)
        if same_value(fact.value, self.cand.value) or refines(fact.value, self.cand.value):
            return True
        return self.one and covers(fact.value, self.cand.value)

    def distinct(self, fact: Fact) -> bool:
        """Structure says the two are different statements, however alike their words:
        another subject, polarity or value of the same slot, or values with nothing in
        common (embeddings of short sentences, Chinese ones above all, look alike)."""
        if (fact.subject or fact.entity_id) and (self.cand.subject or self.cand.entity_id):
            if not _same_subject(self.who, _who_of(fact)):
                return True
        if fact.negated != self.cand.negated:
            return True
        relation = self.relation_to(fact)
        if relation in ("same", "opposite") and not self.repeats(fact):
            return True
        if relation == "other" and self._known(fact):
            return True  # "allergic to cat hair" is not "likes cats", however alike
        return not overlap(fact.value, self.cand.value)

    def _known(self, fact: Fact) -> bool:
        """Both predicates are in the vocabulary: two named slots, not a made-up name."""
        other = self.vocabulary.canonical(fact.predicate)
        return self.vocabulary.spec(self.predicate) is not None and (
            self.vocabulary.spec(other) is not None
        )

    def implied(self, fact: Fact) -> bool:
        """A negation the stored fact already says: a diet or an allergy that leaves the
        food out ("vegetarian" / "doesn't eat meat", "allergic to seafood" / "can't eat
        seafood")."""
        cand = self.cand
        if not cand.negated or self.predicate not in ("eats", "drinks") or fact.negated:
            return False
        if self.relation_to(fact) is None:
            return False
        predicate = self.vocabulary.canonical(fact.predicate)
        if predicate == "diet":
            return excluded_by_diet(fact.value, cand.value)
        return predicate == "allergic_to" and covers(fact.value, cand.value)

    def contradicts(self, fact: Fact) -> bool:
        relation = self.relation_to(fact)
        cand = self.cand
        if relation == "same":
            if fact.negated != cand.negated:
                return same_value(fact.value, cand.value) or covers(fact.value, cand.value)
            return self.one and not cand.negated and not self.repeats(fact)
        if relation == "opposite" and not fact.negated and not cand.negated:
            return same_value(fact.value, cand.value)
        if relation == "family" and cand.negated and not fact.negated:
            return covers(fact.value, cand.value) or same_value(fact.value, cand.value)
        if relation == "other" and not cand.negated and self.predicate in ("eats", "drinks"):
            # "started eating fish again" ends "vegan"
            diet = self.vocabulary.canonical(fact.predicate) == "diet" and not fact.negated
            return diet and excluded_by_diet(fact.value, cand.value)
        return False


def find_duplicate(
    peers: Sequence[Stored], cand: Candidate, vocabulary: Vocabulary, floor: float
) -> Fact | None:
    """The active fact ``cand`` repeats, if any (see the module docstring)."""
    text = _fold(cand.content)
    for stored in peers:
        if _fold(stored.fact.content) == text:
            return stored.fact
    slot = _Slot(cand, vocabulary)
    for stored in peers:
        if slot.repeats(stored.fact) or slot.implied(stored.fact):
            return stored.fact
    # Similar enough first (a dot product), then structure, for the few that are.
    near = [s for s in peers if similarity(s.vector, cand.vector) >= floor]
    return most_similar((s for s in near if not slot.distinct(s.fact)), cand.vector, floor)


def find_contradicted(
    peers: Sequence[Stored],
    cand: Candidate,
    vocabulary: Vocabulary,
    *,
    update_similarity: float,
    correction_similarity: float,
) -> list[Fact]:
    """Active facts ``cand`` contradicts, the newest first."""
    slot = _Slot(cand, vocabulary)
    newest_first = sorted(peers, key=lambda s: (s.fact.updated_at, s.fact.id), reverse=True)
    found = {s.fact.id: s.fact for s in newest_first if slot.contradicts(s.fact)}
    if cand.updates_previous and not found:
        if slot.predicate is not None:
            pool = [s for s in peers if slot.relation_to(s.fact) == "same"]
        else:
            pool = [s for s in peers if s.fact.category == cand.category]
        best = most_similar(pool, cand.vector, update_similarity)
        if best is not None:
            found[best.id] = best
    if cand.category == "correction":
        best = most_similar(peers, cand.vector, correction_similarity)
        if best is not None:
            found.setdefault(best.id, best)
    return list(found.values())


def _stated(source: str, extractor: str) -> bool:
    return source == "user_stated" or extractor == "manual"


def kept_because(cand: Candidate, old: Fact) -> str | None:
    """Why ``old`` stays although ``cand`` contradicts it; None when ``cand`` replaces it."""
    if old.pinned:
        return KEPT_PINNED
    if cand.updates_previous or cand.negated or _stated(cand.source, cand.extractor):
        return None
    if _stated(old.source, old.extractor) or old.confidence > cand.confidence:
        return KEPT_STATED
    return None
