"""How one stored fact ages: decay and sweep step (002), eviction score and pins (004), access."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Protocol

import msgspec

from schemas.records import Fact
from schemas.taxonomy import PERMANENCE_DECAY

__all__ = [
    "EXPIRE_BELOW",
    "FADE_BELOW",
    "Decaying",
    "decay_rate_for",
    "effective_confidence",
    "eviction_score",
    "pin",
    "sweep_fact",
    "touch_accessed",
]

#: Seed 002: an effective confidence below this expires the fact.
EXPIRE_BELOW = 0.05
#: Seed 002: below this (and at or above ``EXPIRE_BELOW``) the fact is ``fading``.
FADE_BELOW = 0.2

_SECONDS_PER_DAY = 86400.0


def decay_rate_for(permanence: str) -> float:
    """The decay rate per day of a permanence level (seed 002).

    Raises ``ValueError`` naming the valid levels for an unknown one.
    """
    try:
        return PERMANENCE_DECAY[permanence]
    except KeyError:
        levels = ", ".join(PERMANENCE_DECAY)
        raise ValueError(f"unknown permanence {permanence!r}; valid levels: {levels}") from None


class Decaying(Protocol):
    """What decays: a fact or a rule."""

    @property
    def confidence(self) -> float: ...

    @property
    def decay_rate(self) -> float: ...

    @property
    def last_confirmed_at(self) -> datetime | None: ...


def effective_confidence(memory: Decaying, now: datetime) -> float:
    """``confidence * exp(-decay_rate * days since last confirmed)``; never confirmed: 0.0.

    A confirmation in the future (clock skew) counts as now: decay never raises confidence.
    """
    if memory.last_confirmed_at is None:
        return 0.0
    if memory.decay_rate == 0.0:
        return memory.confidence
    days = max(0.0, (now - memory.last_confirmed_at).total_seconds() / _SECONDS_PER_DAY)
    return memory.confidence * math.exp(-memory.decay_rate * days)


def _never_decays(fact: Fact) -> bool:
    return fact.permanence == "permanent" or fact.decay_rate == 0.0


def sweep_fact(fact: Fact, *, expiry_days: float | None, now: datetime) -> Fact | None:
    """The fact as one sweep leaves it, or None when the sweep does not change it.

    Only active facts that decay are swept; permanent ones keep their row as is.
    Seed 004's category expiry: unseen for more than ``expiry_days`` expires the
    fact. Seed 002's decay: effective confidence below ``EXPIRE_BELOW`` expires it,
    below ``FADE_BELOW`` marks it ``fading``, back at or above clears the mark.
    Pinned facts never expire (seed 004: kept indefinitely); they can still fade.
    """
    if fact.validity != "active" or _never_decays(fact):
        return None
    if (
        not fact.pinned
        and expiry_days is not None
        and now - fact.last_seen > timedelta(days=expiry_days)
    ):
        return msgspec.structs.replace(fact, validity="expired", updated_at=now)
    confidence = effective_confidence(fact, now)
    if confidence < EXPIRE_BELOW and not fact.pinned:
        return msgspec.structs.replace(fact, validity="expired", updated_at=now)
    if confidence < FADE_BELOW:
        if fact.status == "fading":
            return None
        return msgspec.structs.replace(fact, status="fading", updated_at=now)
    if fact.status == "fading":
        return msgspec.structs.replace(fact, status=None, updated_at=now)
    return None


def eviction_score(fact: Fact, weight: float, now: datetime) -> float:
    """Seed 004: ``age_days * category weight / confidence``, age from ``last_seen``.

    Higher goes first; confidence is floored at 0.01.
    """
    age_days = max(0.0, (now - fact.last_seen).total_seconds() / _SECONDS_PER_DAY)
    return age_days * weight / max(fact.confidence, 0.01)


def touch_accessed(facts: Iterable[Fact], now: datetime) -> list[Fact]:
    """Seed 001 access tracking: facts put into a context count one more access."""
    return [
        msgspec.structs.replace(f, access_count=f.access_count + 1, last_accessed=now)
        for f in facts
    ]


def pin(
    fact: Fact,
    pinned: bool,
    pinned_count: int,
    max_pinned: int,
    *,
    now: datetime | None = None,
) -> Fact:
    """The fact pinned or unpinned; ``pinned_count`` is the user's pinned facts now.

    Raises ``ValueError("at most N pinned facts")`` when pinning one more would pass
    the cap. Pinning a pinned fact (or unpinning an unpinned one) returns it unchanged.
    """
    if pinned == fact.pinned:
        return fact
    if pinned and pinned_count >= max_pinned:
        raise ValueError(f"at most {max_pinned} pinned facts")
    return msgspec.structs.replace(
        fact, pinned=pinned, updated_at=now if now is not None else fact.updated_at
    )
