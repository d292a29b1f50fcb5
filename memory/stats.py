"""Seed 002's ``memory_stats``, pure: counts of facts and rules by their state."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from memory.rules import MATURITIES, is_forgotten
from schemas.records import Fact, Rule

__all__ = ["fact_stats", "in_scope", "rule_stats"]


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
