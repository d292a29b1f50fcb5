"""Records for tests: a fact with every required field filled, changed where a test says."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from schemas.records import Fact

__all__ = ["T0", "a_fact"]

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
