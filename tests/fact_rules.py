"""Applying candidates to a user's facts (``memory.facts``) at ``NOW``: unit vectors,
candidates, scripted id draws."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from memory.facts import Candidate, Changes, FactPolicy, Stored, apply_candidate
from schemas.records import Fact
from testing.records import NOW

__all__ = [
    "E1",
    "E2",
    "E3",
    "POLICY",
    "apply",
    "candidate",
    "draws",
    "only_added",
    "stored",
    "toward_e1",
]


POLICY = FactPolicy()

E1 = (1.0, 0.0, 0.0)
E2 = (0.0, 1.0, 0.0)
E3 = (0.0, 0.0, 1.0)


def toward_e1(similarity: float) -> tuple[float, float, float]:
    """A unit vector whose dot product with ``E1`` is ``similarity``."""
    return (similarity, math.sqrt(1.0 - similarity * similarity), 0.0)


def stored(fact: Fact, vector: tuple[float, ...] = E1) -> Stored:
    return Stored(fact, vector)


def candidate(content: str = "Works on a compiler", **fields: Any) -> Candidate:
    base: dict[str, Any] = {
        "user_id": "u1",
        "category": "preference",
        "confidence": 0.8,
        "vector": E2,
        "session_id": "s2",
    }
    base.update(fields)
    return Candidate(content=content, **base)


def draws(*hexes: str) -> Callable[[], str]:
    """A ``rand`` for ``new_fact_id`` returning these hex strings in order."""
    it = iter(hexes)
    return lambda: next(it)


def apply(
    existing: Iterable[Stored],
    cand: Candidate,
    policy: FactPolicy = POLICY,
    rand: Callable[[], str] | None = None,
) -> Changes:
    return apply_candidate(
        list(existing), cand, policy=policy, now=NOW, rand=rand or draws("0000aaaa", "0000bbbb")
    )


def only_added(changes: Changes) -> Fact:
    assert len(changes.added) == 1
    return changes.added[0].fact
