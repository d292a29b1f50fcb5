"""Rules: how an assistant should behave, learned from helpful and harmful outcomes (seed 002).

Pure: every function takes a rule and the time and returns the rule as it is after
the event. The maturity ladder::

    candidate --(5 successes, effectiveness >= 0.6)--> established
    established --(15 successes, effectiveness >= 0.8, 30 days old)--> proven
    proven --(harmful, effectiveness < 0.8)--> established
    established --(harmful, effectiveness < 0.6)--> candidate
    any --(3 harms, effectiveness < 0.3: flagged, then inverted)--> anti_pattern

A helpful mark scores ``successes / applications``; a harmful one weighs each harm
four times a success: ``successes / (successes + 4 * harms + 0.01)``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import msgspec

from memory.candidates import Vector
from memory.decay import EXPIRE_BELOW, FADE_BELOW, effective_confidence
from memory.scoring import CompositeWeights, composite_score, recency_score
from schemas.records import Maturity, Rule

__all__ = [
    "MATURITIES",
    "StoredRule",
    "confirm",
    "forget",
    "invert",
    "is_forgotten",
    "mark_harmful",
    "mark_helpful",
    "new_rule",
    "recall_rules",
    "referenced",
    "reinforce",
    "same_rule",
    "sweep_rule",
]

MATURITIES: tuple[Maturity, ...] = ("candidate", "established", "proven", "anti_pattern")

#: Seed 002's thresholds of the ladder.
ESTABLISH_SUCCESSES = 5
ESTABLISH_EFFECTIVENESS = 0.6
PROVE_SUCCESSES = 15
PROVE_EFFECTIVENESS = 0.8
PROVE_AGE = timedelta(days=30)
#: A harm counts this many successes against the rule.
HARM_WEIGHT = 4
INVERT_HARMS = 3
INVERT_BELOW = 0.3
#: ``store_rule``'s starting values.
NEW_CONFIDENCE = 0.5
NEW_DECAY_RATE = 0.01


@dataclass(frozen=True, slots=True)
class StoredRule:
    """A rule with the vector of its content, as the store keeps it."""

    rule: Rule
    vector: Vector


def new_rule(
    rule_id: str,
    user_id: str,
    content: str,
    now: datetime,
    *,
    scope: str = "global",
    tags: list[str] | None = None,
    source_episode_id: str | None = None,
    source_scope: str | None = None,
) -> Rule:
    """A rule as ``store_rule`` makes it: a candidate at confidence 0.5, decay 0.01 a day,
    no applications. Decay counts from now (a rule never confirmed would have an
    effective confidence of 0 and be forgotten by the first sweep)."""
    return Rule(
        id=rule_id,
        user_id=user_id,
        content=content,
        created_at=now,
        updated_at=now,
        scope=scope,
        confidence=NEW_CONFIDENCE,
        decay_rate=NEW_DECAY_RATE,
        last_confirmed_at=now,
        source_episode_id=source_episode_id,
        source_scope=source_scope,
        tags=list(tags or []),
    )


def is_forgotten(rule: Rule) -> bool:
    """Forgotten rules (by ``forget`` or by decay) are never retrieved."""
    return bool(rule.meta.get("forgotten"))


def _promoted(rule: Rule, now: datetime) -> Maturity:
    maturity = rule.maturity
    if (
        maturity == "candidate"
        and rule.success_count >= ESTABLISH_SUCCESSES
        and rule.effectiveness_score >= ESTABLISH_EFFECTIVENESS
    ):
        maturity = "established"
    if (
        maturity == "established"
        and rule.success_count >= PROVE_SUCCESSES
        and rule.effectiveness_score >= PROVE_EFFECTIVENESS
        and now - rule.created_at >= PROVE_AGE
    ):
        maturity = "proven"
    return maturity


def _demoted(rule: Rule) -> Maturity:
    if rule.maturity == "proven" and rule.effectiveness_score < PROVE_EFFECTIVENESS:
        return "established"
    if rule.maturity == "established" and rule.effectiveness_score < ESTABLISH_EFFECTIVENESS:
        return "candidate"
    return rule.maturity


def mark_helpful(rule: Rule, now: datetime) -> Rule:
    """One more application that helped; promotion is evaluated (both steps, so a rule
    that meets the proven bar while a candidate ends proven)."""
    applied, success = rule.applied_count + 1, rule.success_count + 1
    marked = msgspec.structs.replace(
        rule,
        applied_count=applied,
        success_count=success,
        effectiveness_score=success / applied,
        last_applied_at=now,
        last_evaluated_at=now,
        updated_at=now,
    )
    if marked.maturity == "anti_pattern":
        return marked
    return msgspec.structs.replace(marked, maturity=_promoted(marked, now))


def mark_harmful(rule: Rule, now: datetime, reason: str | None = None) -> Rule:
    """One more application that did harm; demotion is evaluated (one step), ``reason``
    is kept in ``harmful_reasons``, and a rule with 3 harms below 0.3 effectiveness is
    flagged ``needs_inversion``."""
    harmful = rule.harmful_count + 1
    score = rule.success_count / (rule.success_count + HARM_WEIGHT * harmful + 0.01)
    meta: dict[str, Any] = dict(rule.meta)
    if reason:
        meta["harmful_reasons"] = [*meta.get("harmful_reasons", []), reason]
    marked = msgspec.structs.replace(
        rule,
        applied_count=rule.applied_count + 1,
        harmful_count=harmful,
        effectiveness_score=score,
        last_applied_at=now,
        last_evaluated_at=now,
        updated_at=now,
    )
    if rule.maturity != "anti_pattern" and harmful >= INVERT_HARMS and score < INVERT_BELOW:
        meta["needs_inversion"] = True
    return msgspec.structs.replace(marked, maturity=_demoted(marked), meta=meta)


def invert(rule: Rule, now: datetime) -> Rule:
    """The rule turned into its anti-pattern: ``ANTI-PATTERN: Do NOT {content}. This
    caused problems because: {reasons}`` (the harmful reasons, ``; ``-joined), the
    original kept in ``original_content``. Its vector must be computed again."""
    reasons = "; ".join(str(r) for r in rule.meta.get("harmful_reasons", []))
    original = rule.content.strip().rstrip(".")
    meta = {k: v for k, v in rule.meta.items() if k != "needs_inversion"}
    meta["original_content"] = rule.content
    content = f"ANTI-PATTERN: Do NOT {original}. This caused problems because: {reasons}"
    return msgspec.structs.replace(
        rule, content=content, maturity="anti_pattern", meta=meta, updated_at=now
    )


def confirm(rule: Rule, now: datetime) -> Rule:
    """Confirmed: decay counts from now again, and a fading mark is cleared."""
    return _unfaded(msgspec.structs.replace(rule, last_confirmed_at=now), now)


def _rule_text(content: str) -> str:
    """What two statements of one rule share: NFKC, case folded, single spaces, no final
    full stop or exclamation mark."""
    text = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return text.rstrip(".!。 ")


def same_rule(content: str, candidates: Sequence[StoredRule], scope: str) -> StoredRule | None:
    """The rule among ``candidates`` that ``content`` states again in ``scope``: same
    scope, not forgotten, the same text up to case, spacing and a final full stop."""
    wanted = _rule_text(content)
    for item in candidates:
        rule = item.rule
        if rule.scope == scope and not is_forgotten(rule) and _rule_text(rule.content) == wanted:
            return item
    return None


def reinforce(rule: Rule, now: datetime, tags: Sequence[str] = ()) -> Rule:
    """Stated again: confirmed (decay counts from now, no fading mark), its tags joined
    by ``tags`` (without repeats)."""
    joined = [*rule.tags, *(t for t in dict.fromkeys(tags) if t not in rule.tags)]
    return confirm(msgspec.structs.replace(rule, tags=joined, updated_at=now), now)


def forget(rule: Rule, now: datetime) -> Rule:
    """Seed 002's ``forget`` of a rule: ``forgotten`` set; the row stays."""
    return msgspec.structs.replace(rule, meta={**rule.meta, "forgotten": True}, updated_at=now)


def referenced(rule: Rule, now: datetime) -> Rule:
    """Read by ``get`` or recalled into a context: one more reference."""
    return msgspec.structs.replace(
        rule, reference_count=rule.reference_count + 1, last_referenced_at=now
    )


def sweep_rule(rule: Rule, now: datetime) -> Rule | None:
    """The rule as the maintenance pass leaves it, or None when it does not change it.

    A rule flagged ``needs_inversion`` is inverted. Then seed 002's decay: effective
    confidence below 0.05 forgets the rule, below 0.2 marks it ``fading``, back at or
    above clears the mark. Forgotten rules and rules that do not decay are left alone.
    """
    if is_forgotten(rule):
        return None
    swept = invert(rule, now) if rule.meta.get("needs_inversion") else rule
    if swept.decay_rate > 0.0 and swept.permanence != "permanent":
        confidence = effective_confidence(swept, now)
        status = swept.meta.get("status")
        if confidence < EXPIRE_BELOW:
            swept = forget(swept, now)
        elif confidence < FADE_BELOW and status != "fading":
            meta = {**swept.meta, "status": "fading"}
            swept = msgspec.structs.replace(swept, meta=meta, updated_at=now)
        elif confidence >= FADE_BELOW and status == "fading":
            swept = _unfaded(swept, now)
    return None if swept is rule else swept


def _unfaded(rule: Rule, now: datetime) -> Rule:
    meta = {k: v for k, v in rule.meta.items() if k != "status"}
    return msgspec.structs.replace(rule, meta=meta, updated_at=now)


#: Rules carry no importance of their own: the middle of the 0..10 scale.
RULE_IMPORTANCE = 5.0


def recall_rules(
    rules: Sequence[StoredRule],
    query: Sequence[float] | None,
    now: datetime,
    *,
    limit: int,
    weights: CompositeWeights | None = None,
) -> list[Rule]:
    """The ``limit`` rules to show for a query, best first: seed 002's composite score
    with cosine similarity to the query (unit vectors) as relevance, ties broken by
    ``created_at`` desc, then ``id`` asc. Forgotten rules are never recalled."""
    scored: list[tuple[float, Rule]] = []
    for item in rules:
        rule = item.rule
        if is_forgotten(rule):
            continue
        similarity = 0.0
        if query is not None:
            similarity = sum(a * b for a, b in zip(item.vector, query, strict=True))
        score = composite_score(
            relevance=max(0.0, float(similarity)),
            importance=RULE_IMPORTANCE,
            recency=recency_score(rule.last_referenced_at, now),
            effective_confidence=effective_confidence(rule, now),
            weights=weights or CompositeWeights(),
        )
        scored.append((score, rule))
    scored.sort(key=lambda pair: (-pair[0], -pair[1].created_at.timestamp(), pair[1].id))
    return [rule for _, rule in scored[:limit]]
