"""Provenance links between memories (seed 002's ``memory_links``), pure: validation, and the
links a change of facts makes."""

from __future__ import annotations

from datetime import datetime

from memory.facts import Changes
from schemas.records import ItemType, MemoryLink, Relation

__all__ = ["ITEM_TYPES", "RELATIONS", "change_links", "fact_link", "item_type", "relation"]

ITEM_TYPES: tuple[ItemType, ...] = ("episode", "fact", "rule")
RELATIONS: tuple[Relation, ...] = (
    "derived_from",
    "supports",
    "contradicts",
    "supersedes",
    "related_to",
)


def item_type(value: str) -> ItemType:
    """``value`` as a memory type; ``ValueError`` naming the valid ones otherwise."""
    for kind in ITEM_TYPES:
        if value == kind:
            return kind
    raise ValueError(f"unknown memory type {value!r}; valid types: {', '.join(ITEM_TYPES)}")


def relation(value: str) -> Relation:
    """``value`` as a relation; ``ValueError`` naming the valid ones otherwise."""
    for kind in RELATIONS:
        if value == kind:
            return kind
    raise ValueError(f"unknown relation {value!r}; valid relations: {', '.join(RELATIONS)}")


def fact_link(
    user_id: str, source_id: str, kind: Relation, target_id: str, now: datetime
) -> MemoryLink:
    """A link from one fact of the user to another."""
    return MemoryLink(
        user_id=user_id,
        source_type="fact",
        source_id=source_id,
        target_type="fact",
        target_id=target_id,
        relation=kind,
        created_at=now,
    )


def change_links(user_id: str, changes: Changes, now: datetime) -> list[MemoryLink]:
    """The links a change of facts makes: each new fact ``supersedes`` the fact it
    replaced or retracted, and ``contradicts`` a kept fact it conflicts with."""
    made = [
        fact_link(user_id, old.superseded_by, "supersedes", old.id, now)
        for old in changes.superseded
        if old.superseded_by is not None
    ]
    made += [
        fact_link(user_id, conflict.fact_id, "contradicts", conflict.kept_id, now)
        for conflict in changes.conflicts
    ]
    return made
