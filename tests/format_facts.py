"""Facts as the context formats (``memory.formats``) get them: user u1's, stated at ``T0``."""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.records import Fact

__all__ = ["T0", "fact"]


T0 = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


def fact(
    fact_id: str,
    content: str,
    category: str = "preference",
    confidence: float = 0.9,
    *,
    created: datetime = T0,
    subject: str | None = None,
    predicate: str | None = None,
) -> Fact:
    return Fact(
        id=fact_id,
        user_id="u1",
        content=content,
        category=category,
        confidence=confidence,
        created_at=created,
        updated_at=created,
        last_seen=created,
        last_confirmed_at=None,
        subject=subject,
        predicate=predicate,
    )
