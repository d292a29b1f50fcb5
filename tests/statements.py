"""Ann's week: an archived message of hers, for the statement keys of ``memory``."""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.records import ArchivedMessage, Role

__all__ = ["YOGA", "archived_turn"]


def archived_turn(text: str, role: Role = "user", speaker: str = "Ann") -> ArchivedMessage:
    return ArchivedMessage(
        id="m",
        user_id="ann",
        session_id="week",
        scope="global",
        turn=1,
        role=role,
        speaker=speaker,
        text=text,
        at=datetime(2024, 3, 12, 18, tzinfo=UTC),
    )


YOGA = (
    "Can you help me plan my week? I have a report due Friday and a marketing"
    " campaign. I attend yoga classes three times a week."
)
