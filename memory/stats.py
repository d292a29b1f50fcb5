"""Seed 002's ``memory_stats``, pure: counts of facts and rules by their state."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from memory.rules import MATURITIES, is_forgotten
from schemas.records import Episode, Fact, Rule

__all__ = ["episode_stats", "fact_stats", "in_scope", "rule_stats"]


def in_scope(item_scope: str, scope: str | None) -> bool:
    """Seed 002's scope filter: no scope sees everything, a scope sees ``global`` and itself."""
    return scope is None or item_scope in ("global", scope)


def fact_stats(active: Iterable[Fact], others: Mapping[str, int]) -> dict[str, int]:
    """``active`` (not fading) and ``fading`` from the active facts; ``superseded``,
    ``expired`` and ``retracted`` as counted in ``others`` (0 when absent)."""
    facts = list(active)
    fading = sum(1 for f in facts if f.status == "fading")
    counts = {"active": len(facts) - fading, "fading": fading}
    for validity in ("superseded", "expired", "retracted"):
        counts[validity] = others.get(validity, 0)
    return counts


def rule_stats(rules: Iterable[Rule]) -> dict[str, int]:
    """Rules by maturity (forgotten ones apart: ``forgotten`` counts them whatever their
    maturity)."""
    counts = dict.fromkeys([*MATURITIES, "forgotten"], 0)
    for rule in rules:
        counts["forgotten" if is_forgotten(rule) else rule.maturity] += 1
    return counts


def episode_stats(stored: Iterable[Episode], archived: int, now: datetime) -> dict[str, float]:
    """``total`` (episodes stored directly and archived messages), ``unconsolidated``
    (stored ones still pending: archived turns are read by extraction as they come) and
    ``backlog_age_hours`` (since the oldest pending one; 0 without any)."""
    episodes = list(stored)
    pending = [e.created_at for e in episodes if e.consolidation_status == "pending"]
    age = (now - min(pending)).total_seconds() / 3600 if pending else 0.0
    return {
        "total": len(episodes) + archived,
        "unconsolidated": len(pending),
        "backlog_age_hours": round(max(0.0, age), 2),
    }
