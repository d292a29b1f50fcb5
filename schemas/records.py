"""Records kept in the store and working-memory state."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

__all__ = ["ArchivedMessage", "Role", "WorkingMemory"]

Role = Literal["user", "assistant", "other"]


class ArchivedMessage(msgspec.Struct, frozen=True, kw_only=True):
    """One archived chat message: a ``turn`` is two of them (user, then assistant)."""

    id: str
    user_id: str
    session_id: str
    scope: str
    turn: int
    role: Role
    speaker: str
    text: str
    at: datetime
    meta: dict[str, Any] = {}
    #: The client's id of the frame or import line this message came from.
    source_id: str = ""


class WorkingMemory(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 001's working memory, exactly its fields."""

    session_id: str
    current_topic: str | None
    context_variables: dict[str, Any]
    turn_count: int
    last_emotion: str | None
    created_at: datetime
    updated_at: datetime
