"""Entities: who and what a user's memories are about, and how a name resolves to them (seed 002).

Pure. Resolution finds candidates in four tiers, each scored by how the name
matched, then adds what the caller knows (context hints):

    exact    100  the canonical name, case aside
    alias     80  one of the aliases, case aside
    prefix    50  the name starts or is inside the canonical name or an alias
    fuzzy     20  trigram similarity >= 0.3 (opt-in; names over 2 characters)

An entity is found by its best tier only. Merged entities (tombstones) are never
found, and nothing is ever created by resolving.

``EntityIndex`` holds what resolving needs of a list of entities (folded names, a
trigram index), built once per list, so a query costs its own matches, not the list:
``resolve`` over an index finds exactly what it finds over the list.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec
import numpy as np

from memory.keywords import extract_keywords
from schemas.records import Entity, EntityType, Fact

__all__ = [
    "ENTITY_TYPES",
    "EntityIndex",
    "Resolved",
    "entity_type",
    "is_tombstoned",
    "resolve",
    "trigram_similarity",
    "updated",
]

ENTITY_TYPES: tuple[EntityType, ...] = ("person", "organization", "place", "other")
TIER_SCORES = {"exact": 100.0, "alias": 80.0, "prefix": 50.0, "fuzzy": 20.0}
FUZZY_THRESHOLD = 0.3
#: The most a context hint adds: this times the Jaccard overlap of the hint's words and
#: the words of the candidate's facts.
HINT_BOOST = 20.0
#: Facts of a candidate read for a hint.
HINT_FACTS = 500

_WORD = re.compile(r"[^\W_]+")


def entity_type(value: str) -> EntityType:
    """``value`` as an entity type; ``ValueError`` listing the valid ones otherwise."""
    for kind in ENTITY_TYPES:
        if value == kind:
            return kind
    raise ValueError(f"unknown entity_type {value!r}; valid types: {', '.join(ENTITY_TYPES)}")


def is_tombstoned(entity: Entity) -> bool:
    return "merged_into" in entity.meta


def updated(
    entity: Entity,
    now: datetime,
    *,
    canonical_name: str | None = None,
    aliases: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Entity:
    """Seed 002's update: the name is replaced, the aliases replaced as a whole, the
    metadata merged key by key; ``updated_at`` is now."""
    return msgspec.structs.replace(
        entity,
        canonical_name=entity.canonical_name if canonical_name is None else canonical_name,
        aliases=entity.aliases if aliases is None else list(aliases),
        meta={**entity.meta, **(metadata or {})},
        updated_at=now,
    )


def _trigrams(text: str) -> set[str]:
    """pg_trgm's trigrams: of each word, lower-cased, with two spaces before and one after."""
    grams: set[str] = set()
    for word in _WORD.findall(text.lower()):
        padded = f"  {word} "
        grams.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return grams


def trigram_similarity(a: str, b: str) -> float:
    """pg_trgm's ``similarity``: shared trigrams over all trigrams of both (0 when none)."""
    left, right = _trigrams(a), _trigrams(b)
    union = left | right
    return len(left & right) / len(union) if union else 0.0


@dataclass(frozen=True, slots=True)
class Resolved:
    """One candidate for a name: the entity, how the name matched, and its score."""

    entity: Entity
    name_match: str
    score: float

    def view(self) -> dict[str, Any]:
        """Seed 002's result fields."""
        return {
            "entity_id": self.entity.id,
            "canonical_name": self.entity.canonical_name,
            "entity_type": self.entity.entity_type,
            "score": round(self.score, 4),
            "name_match": self.name_match,
            "aliases": list(self.entity.aliases),
        }


def _tier(entity: Entity, name: str, fuzzy: bool) -> str | None:
    folded = name.casefold()
    if entity.canonical_name.casefold() == folded:
        return "exact"
    aliases = [a.casefold() for a in entity.aliases]
    if folded in aliases:
        return "alias"
    if any(folded in n for n in [entity.canonical_name.casefold(), *aliases]):
        return "prefix"  # a prefix is inside too: one tier for both, as the seed scores them
    if fuzzy and len(name) > 2:
        names = [entity.canonical_name, *entity.aliases]
        if max(trigram_similarity(name, n) for n in names) >= FUZZY_THRESHOLD:
            return "fuzzy"
    return None


_SEPARATOR = "\x00"


class EntityIndex:
    """The names of a list of entities, folded and indexed for ``resolve``.

    Names are the canonical name and the aliases of each entity, in that order, all
    joined (casefolded, ``\\x00`` between) into one text for the substring test of the
    prefix tier; each name's pg_trgm trigrams are in an inverted index for the fuzzy
    tier, so only names sharing a trigram with the query are counted."""

    def __init__(self, entities: Iterable[Entity]) -> None:
        self.entities: list[Entity] = list(entities)
        self._exact: dict[str, list[int]] = {}
        self._alias: dict[str, list[int]] = {}
        owners: list[int] = []  # name -> entity position
        starts: list[int] = []  # name -> its offset in the joined text
        folded_names: list[str] = []
        postings: dict[str, list[int]] = {}
        sizes: list[int] = []
        offset = 0
        for position, entity in enumerate(self.entities):
            canonical = entity.canonical_name.casefold()
            self._exact.setdefault(canonical, []).append(position)
            for alias in {a.casefold() for a in entity.aliases}:
                self._alias.setdefault(alias, []).append(position)
            for raw, folded in (
                (entity.canonical_name, canonical),
                *((a, a.casefold()) for a in entity.aliases),
            ):
                grams = _trigrams(raw)
                for gram in grams:
                    postings.setdefault(gram, []).append(len(owners))
                sizes.append(len(grams))
                owners.append(position)
                starts.append(offset)
                folded_names.append(folded)
                offset += len(folded) + 1
        self._joined = _SEPARATOR.join(folded_names)
        self._starts = starts
        self._owners = np.asarray(owners, dtype=np.int64)
        self._sizes = np.asarray(sizes, dtype=np.int64)
        self._postings = {g: np.asarray(p, dtype=np.int64) for g, p in postings.items()}

    def __len__(self) -> int:
        return len(self.entities)

    def tiers(self, name: str, fuzzy: bool) -> dict[int, str]:
        """Each matching entity's position and best tier for a stripped ``name``."""
        folded = name.casefold()
        found: dict[int, str] = {}
        for position in self._exact.get(folded, ()):
            found[position] = "exact"
        for position in self._alias.get(folded, ()):
            found.setdefault(position, "alias")
        if _SEPARATOR in folded:  # cannot be inside a name of the joined text
            slow = (i for i, e in enumerate(self.entities) if i not in found)
            for position in slow:
                entity = self.entities[position]
                names = [entity.canonical_name, *entity.aliases]
                if any(folded in n.casefold() for n in names):
                    found[position] = "prefix"
        else:
            at = self._joined.find(folded)
            while at >= 0:
                slot = bisect_right(self._starts, at) - 1
                found.setdefault(int(self._owners[slot]), "prefix")
                following = slot + 1
                if following >= len(self._starts):
                    break
                at = self._joined.find(folded, self._starts[following])
        if fuzzy and len(name) > 2:
            for position in self._fuzzy(name):
                found.setdefault(position, "fuzzy")
        return found

    def _fuzzy(self, name: str) -> list[int]:
        query = _trigrams(name)
        lists = [self._postings[g] for g in query if g in self._postings]
        if not lists:
            return []
        shared = np.bincount(np.concatenate(lists), minlength=len(self._sizes))
        names = np.nonzero(shared)[0]
        common = shared[names]
        union = len(query) + self._sizes[names] - common
        similar = names[common / union >= FUZZY_THRESHOLD]
        return sorted({int(p) for p in self._owners[similar]})


def _words(texts: Iterable[str]) -> set[str]:
    return {k.casefold() for text in texts for k in extract_keywords(text)}


def resolve(
    entities: Iterable[Entity] | EntityIndex,
    name: str,
    *,
    kind: EntityType | None = None,
    enable_fuzzy: bool = False,
    hints: Mapping[str, Any] | None = None,
    facts_of: Mapping[str, Sequence[Fact]] | None = None,
) -> list[Resolved]:
    """The entities ``name`` may mean, best first (score desc, then canonical name).

    ``hints`` may hold ``topic`` and ``mentioned_with`` (text, or a list of texts): a
    candidate whose facts (``facts_of`` by entity id, at most 500 each) share words with
    them gains up to 20 by the Jaccard overlap of the two word sets; and
    ``domain_scores`` ({entity id: number}), added to those candidates as they are.
    ``entities`` may be an ``EntityIndex`` of them (the same answer, faster).
    """
    name = name.strip()
    if not name:
        return []
    hints = hints or {}
    hint_texts: list[str] = []
    for key in ("topic", "mentioned_with"):
        value = hints.get(key)
        hint_texts += [value] if isinstance(value, str) else [str(v) for v in value or []]
    hint_words = _words(hint_texts)
    domain = hints.get("domain_scores") or {}
    found: list[Resolved] = []
    index = entities if isinstance(entities, EntityIndex) else EntityIndex(entities)
    tiers = index.tiers(name, enable_fuzzy)
    for position in sorted(tiers):
        entity, tier = index.entities[position], tiers[position]
        if is_tombstoned(entity) or (kind is not None and entity.entity_type != kind):
            continue
        score = TIER_SCORES[tier]
        if hint_words and facts_of:
            facts = list(facts_of.get(entity.id, ()))[:HINT_FACTS]
            fact_words = _words([f"{f.predicate or ''} {f.content}" for f in facts])
            union = hint_words | fact_words
            if union:
                score += HINT_BOOST * len(hint_words & fact_words) / len(union)
        extra = domain.get(entity.id)
        if isinstance(extra, int | float) and not isinstance(extra, bool):
            score += float(extra)
        found.append(Resolved(entity, tier, score))
    found.sort(key=lambda r: (-r.score, r.entity.canonical_name))
    return found
