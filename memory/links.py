"""Provenance links between memories (seed 002's ``memory_links``), pure: validation, and the
links a change of facts makes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory.facts import Changes
from schemas.records import Fact, ItemType, MemoryLink, Relation

__all__ = [
    "ITEM_TYPES",
    "RELATIONS",
    "change_links",
    "fact_link",
    "item_type",
    "relation",
    "supersession_links",
]

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
    """The links a change of facts stores: each new fact ``contradicts`` a kept fact it
    conflicts with. Its ``supersedes`` links are not stored: they are the superseded facts'
    own ``superseded_by`` (``supersession_links``), written with them."""
    return [
        fact_link(user_id, conflict.fact_id, "contradicts", conflict.kept_id, now)
        for conflict in changes.conflicts
    ]


def supersession_links(
    user_id: str, facts: Sequence[Fact], fact_id: str, direction: str
) -> list[MemoryLink]:
    """The ``supersedes`` links of the fact ``fact_id`` among the user's ``facts``, read
    from the facts themselves: a fact superseded by another (its ``superseded_by``) is the
    target of the other's link, made when it was superseded (its ``updated_at``). So the
    facts of a supersession and its link are one write, never seen half done, and a
    deleted fact takes its links with it. ``direction``: outgoing, incoming or both."""
    by_id = {f.id: f for f in facts}
    if fact_id not in by_id:
        return []
    made = []
    if direction in ("outgoing", "both"):
        made += [
            fact_link(user_id, fact_id, "supersedes", f.id, f.updated_at)
            for f in facts
            if f.superseded_by == fact_id
        ]
    held = by_id[fact_id]
    if direction in ("incoming", "both") and held.superseded_by in by_id:
        made.append(fact_link(user_id, held.superseded_by, "supersedes", fact_id, held.updated_at))
    return made
