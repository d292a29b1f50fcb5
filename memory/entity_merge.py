"""Merging one entity into another (seed 002's ``entity_merge``), pure.

The source's active facts move to the target. Where both hold an active fact of the
same scope and one-valued predicate (one can live in one city), the surer one stays:
a source fact with higher confidence moves and supersedes the target's, otherwise
the source's is superseded; each supersession is linked. The source's name and
aliases join the target's aliases (case aside, no repeats), its metadata joins the
target's (the target's keys win), and the source is left as a tombstone
(``merged_into``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from memory.entities import is_tombstoned
from memory.predicates import Vocabulary
from schemas.records import Entity, Fact

__all__ = ["Merged", "merge"]

_replace = msgspec.structs.replace


@dataclass(slots=True)
class Merged:
    """What a merge changes: both entities and the facts it moved or superseded (each
    superseded one names its successor: that is its ``supersedes`` link)."""

    source: Entity
    target: Entity
    facts: list[Fact] = field(default_factory=list)
    repointed: int = 0
    superseded: int = 0
    aliases_added: list[str] = field(default_factory=list)

    def payload(self) -> dict[str, Any]:
        """Seed 002's ``entity_merge`` event payload."""
        return {
            "source_entity_id": self.source.id,
            "target_entity_id": self.target.id,
            "facts_repointed": self.repointed,
            "facts_superseded": self.superseded,
            "aliases_added": list(self.aliases_added),
        }


def merge(
    source: Entity,
    target: Entity,
    facts: Sequence[Fact],
    vocabulary: Vocabulary,
    now: datetime,
) -> Merged:
    """Merge ``source`` into ``target``, given the user's active ``facts``. Raises
    ``ValueError`` for an entity merged into itself, or either one merged already."""
    if source.id == target.id:
        raise ValueError("an entity cannot be merged into itself")
    for entity, role in ((source, "source"), (target, "target")):
        if is_tombstoned(entity):
            into = entity.meta["merged_into"]
            raise ValueError(f"the {role} entity {entity.id} was merged into {into} already")
    merged = Merged(source, target)
    held: dict[tuple[str, str | None], Fact] = {}
    for fact in facts:
        if fact.entity_id == target.id and fact.validity == "active":
            if vocabulary.cardinality(fact.predicate) == "one":
                held[(fact.scope, vocabulary.canonical(fact.predicate))] = fact
    for fact in facts:
        if fact.entity_id != source.id or fact.validity != "active":
            continue
        key = (fact.scope, vocabulary.canonical(fact.predicate))
        rival = held.get(key) if vocabulary.cardinality(fact.predicate) == "one" else None
        if rival is None:
            merged.facts.append(_replace(fact, entity_id=target.id, updated_at=now))
            merged.repointed += 1
        elif fact.confidence > rival.confidence:
            moved = _replace(fact, entity_id=target.id, supersedes_id=rival.id, updated_at=now)
            gone = _replace(rival, validity="superseded", superseded_by=fact.id, updated_at=now)
            merged.facts += [moved, gone]
            merged.repointed += 1
            merged.superseded += 1
            held[key] = moved
        else:
            gone = _replace(fact, validity="superseded", superseded_by=rival.id, updated_at=now)
            merged.facts.append(gone)
            merged.superseded += 1
    known = {name.casefold() for name in (target.canonical_name, *target.aliases)}
    for name in (source.canonical_name, *source.aliases):
        if name.casefold() not in known:
            known.add(name.casefold())
            merged.aliases_added.append(name)
    merged.target = _replace(
        target,
        aliases=[*target.aliases, *merged.aliases_added],
        meta={**source.meta, **target.meta},
        updated_at=now,
    )
    merged.source = _replace(source, meta={**source.meta, "merged_into": target.id}, updated_at=now)
    return merged
