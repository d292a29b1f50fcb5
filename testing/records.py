"""Records for tests and benchmarks: facts with every required field filled, changed where
the caller says."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from schemas.records import Fact

__all__ = ["DAY", "NOW", "T0", "a_fact", "make_fact"]

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def a_fact(fact_id: str = "fact_00000001", **fields: Any) -> Fact:
    """User u1's active fact ``fact_id``, stated, seen and confirmed at ``T0``; ``fields``
    replace any of its values."""
    at = fields.pop("at", T0)
    values: dict[str, Any] = {
        "user_id": "u1",
        "content": "User lives in Lyon",
        "category": "knowledge",
        "confidence": 0.9,
        "created_at": at,
        "updated_at": at,
        "last_seen": at,
        "last_confirmed_at": at,
    }
    return Fact(id=fact_id, **(values | fields))


#: The present of the facts ``make_fact`` builds (ten days after they were stated).
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def make_fact(fact_id: str = "fact_00000001", **fields: Any) -> Fact:
    """User u1's preference ``fact_id``, stated in session s1 ten ``DAY``s before ``NOW``;
    ``fields`` replace any of its values."""
    base: dict[str, Any] = {
        "user_id": "u1",
        "content": "Prefers green tea",
        "category": "preference",
        "confidence": 0.7,
        "created_at": NOW - 10 * DAY,
        "updated_at": NOW - 10 * DAY,
        "last_seen": NOW - 10 * DAY,
        "last_confirmed_at": NOW - 10 * DAY,
        "session_id": "s1",
    }
    base.update(fields)
    return Fact(id=fact_id, **base)
