"""The audit log's entries for each change of memory (seed 002's ``memory_events``), pure.

Every function takes what changed and returns the events to append. Payloads hold
ids, kinds and states, never a memory's text, so the log keeps no words of a
memory that was deleted.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any

from memory.facts import Changes
from memory.rules import is_forgotten
from schemas.records import Fact, MemoryEvent, Rule

__all__ = ["EventMaker", "fact_events", "new_event_id", "rule_events", "sweep_events"]


def new_event_id() -> str:
    """``evt_`` + 16 random hex digits."""
    return "evt_" + secrets.token_hex(8)


class EventMaker:
    """Makes the events of one user at one time, each with a fresh id from ``new_id``."""

    def __init__(self, user_id: str, actor: str, now: datetime, new_id: Callable[[], str]) -> None:
        self.user_id, self.actor, self.now, self._new_id = user_id, actor, now, new_id
        self.made: list[MemoryEvent] = []

    def __call__(self, event_type: str, **payload: Any) -> None:
        self.made.append(
            MemoryEvent(
                id=self._new_id(),
                user_id=self.user_id,
                event_type=event_type,
                created_at=self.now,
                actor=self.actor,
                payload=payload,
            )
        )


def fact_events(changes: Changes, event: EventMaker) -> list[MemoryEvent]:
    """Events of learning or hand-made facts: created, updated (reinforced or merged),
    superseded or retracted by a newer one, evicted by the cap, in conflict with a kept one."""
    for stored in changes.added:
        fact = stored.fact
        event("fact_created", fact_id=fact.id, category=fact.category, scope=fact.scope)
    for fact in changes.updated:
        event(
            "fact_updated",
            fact_id=fact.id,
            confidence=fact.confidence,
            mention_count=fact.mention_count,
        )
    for fact in changes.superseded:
        kind = "fact_retracted" if fact.validity == "retracted" else "fact_superseded"
        event(kind, fact_id=fact.id, superseded_by=fact.superseded_by)
    for fact in changes.removed:
        event("fact_evicted", fact_id=fact.id)
    for conflict in changes.conflicts:
        event("fact_conflicted", fact_id=conflict.fact_id, kept_id=conflict.kept_id)
    return event.made


def sweep_events(swept: list[Fact], event: EventMaker) -> list[MemoryEvent]:
    """Events of the decay sweep: each fact expired, marked fading, or back from fading."""
    for fact in swept:
        if fact.validity == "expired":
            event("fact_expired", fact_id=fact.id)
        elif fact.status == "fading":
            event("fact_fading", fact_id=fact.id)
        else:
            event("fact_unfaded", fact_id=fact.id)
    return event.made


def rule_events(
    before: Rule | None, after: Rule, event: EventMaker, cause: str | None
) -> list[MemoryEvent]:
    """Events of one change of a rule: ``cause`` (``rule_created``, ``rule_marked_helpful``,
    ``rule_confirmed``...; None for the sweep's) and each transition it made: maturity up
    or down, flagged for inversion, inverted, fading, forgotten."""
    if cause is not None:
        state = {"maturity": after.maturity, "effectiveness_score": after.effectiveness_score}
        event(cause, rule_id=after.id, **state)
    if before is None:
        return event.made
    ladder = ("candidate", "established", "proven")
    if after.maturity == "anti_pattern" and before.maturity != "anti_pattern":
        event("rule_inverted", rule_id=after.id, **{"from": before.maturity})
    elif after.maturity != before.maturity:
        up = ladder.index(after.maturity) > ladder.index(before.maturity)
        transition = {"from": before.maturity, "to": after.maturity}
        event("rule_promoted" if up else "rule_demoted", rule_id=after.id, **transition)
    if after.meta.get("needs_inversion") and not before.meta.get("needs_inversion"):
        event("rule_flagged_for_inversion", rule_id=after.id)
    if after.meta.get("status") == "fading" and before.meta.get("status") != "fading":
        event("rule_fading", rule_id=after.id)
    if is_forgotten(after) and not is_forgotten(before) and cause != "rule_forgotten":
        event("rule_forgotten", rule_id=after.id)
    return event.made
