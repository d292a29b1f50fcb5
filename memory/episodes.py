"""Episodes stored directly (seed 002), pure: making one, forgetting it, and the cleanup.

Cleanup first deletes every episode whose ``expires_at`` has passed; then, if more than
``max_entries`` remain, the oldest *consolidated* ones until ``max_entries`` remain (or
none consolidated is left). An episode not yet consolidated is never deleted for room.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import msgspec

from schemas.records import Episode

__all__ = ["TTL", "Cleanup", "cleanup", "forget", "new_episode", "referenced"]

#: How long an episode stored directly is kept (seed 002's ``expires_at`` default).
TTL = timedelta(days=7)
#: Seed 002's capacity (``max_entries``).
MAX_ENTRIES = 10_000


def new_episode(
    episode_id: str,
    user_id: str,
    content: str,
    scope: str,
    now: datetime,
    *,
    session_id: str | None = None,
    importance: float = 5.0,
) -> Episode:
    """A pending episode, expiring a week from now. Raises ``ValueError`` for blank content
    or an importance outside 0..10."""
    if not content.strip():
        raise ValueError("content must not be blank")
    if not 0.0 <= importance <= 10.0:
        raise ValueError(f"importance must be within 0..10, not {importance}")
    return Episode(
        id=episode_id,
        user_id=user_id,
        scope=scope,
        content=content,
        created_at=now,
        expires_at=now + TTL,
        session_id=session_id,
        importance=importance,
    )


def forget(episode: Episode, now: datetime) -> Episode:
    """Seed 002's ``forget`` of an episode: it expires now (the next cleanup deletes it)."""
    return msgspec.structs.replace(episode, expires_at=min(episode.expires_at, now))


def referenced(episode: Episode, now: datetime) -> Episode:
    return msgspec.structs.replace(
        episode, reference_count=episode.reference_count + 1, last_referenced_at=now
    )


@dataclass(frozen=True, slots=True)
class Cleanup:
    """What a cleanup deletes, and seed 002's three counts."""

    expired: list[str]
    for_capacity: list[str]
    remaining: int

    def counts(self) -> dict[str, int]:
        return {
            "expired_deleted": len(self.expired),
            "capacity_deleted": len(self.for_capacity),
            "remaining": self.remaining,
        }


def cleanup(episodes: Sequence[Episode], now: datetime, max_entries: int) -> Cleanup:
    """The episodes to delete: the expired ones, then the oldest consolidated ones past
    ``max_entries`` (ties by id)."""
    expired = [e.id for e in episodes if e.expires_at < now]
    gone = set(expired)
    kept = [e for e in episodes if e.id not in gone]
    excess = len(kept) - max_entries
    room: list[str] = []
    if excess > 0:
        oldest = sorted((e for e in kept if e.consolidated), key=lambda e: (e.created_at, e.id))
        room = [e.id for e in oldest[:excess]]
    return Cleanup(expired, room, len(kept) - len(room))
