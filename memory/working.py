"""Seed 001's working memory: created on the first message, updated on every message."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from schemas.records import WorkingMemory

__all__ = [
    "MAX_VARIABLES",
    "MAX_VARIABLES_BYTES",
    "apply_set",
    "new_working_memory",
    "record_message",
    "set_problem",
]

#: Bounds on a session's context variables (what ``set`` merges in), so that a client
#: cannot grow its working memory, snapshotted every few seconds, without end.
MAX_VARIABLES = 100
MAX_VARIABLES_BYTES = 65536
_encoder = msgspec.json.Encoder()


def new_working_memory(session_id: str, now: datetime) -> WorkingMemory:
    """An empty working memory; ``turn_count`` becomes 1 with the first message."""
    return WorkingMemory(
        session_id=session_id,
        current_topic=None,
        context_variables={},
        turn_count=0,
        last_emotion=None,
        created_at=now,
        updated_at=now,
    )


def record_message(memory: WorkingMemory | None, session_id: str, now: datetime) -> WorkingMemory:
    """Count one user message: creates the memory on the first (``turn_count`` 1)."""
    base = memory if memory is not None else new_working_memory(session_id, now)
    return msgspec.structs.replace(base, turn_count=base.turn_count + 1, updated_at=now)


def apply_set(
    memory: WorkingMemory | None,
    session_id: str,
    now: datetime,
    *,
    topic: str | None = None,
    variables: dict[str, Any] | None = None,
    emotion: str | None = None,
) -> WorkingMemory:
    """Set the topic / last emotion and merge context variables (a ``None`` value removes one)."""
    base = memory if memory is not None else new_working_memory(session_id, now)
    merged = dict(base.context_variables)
    for key, value in (variables or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return msgspec.structs.replace(
        base,
        current_topic=topic if topic is not None else base.current_topic,
        last_emotion=emotion if emotion is not None else base.last_emotion,
        context_variables=merged,
        updated_at=now,
    )


def set_problem(memory: WorkingMemory | None, variables: dict[str, Any]) -> str | None:
    """Why merging ``variables`` (a client's ``set``) would break the bounds on context
    variables, or None when it fits."""
    if not variables:
        return None
    merged = dict(memory.context_variables) if memory is not None else {}
    for key, value in variables.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    if len(merged) > MAX_VARIABLES:
        return f"a session holds at most {MAX_VARIABLES} context variables"
    if len(_encoder.encode(merged)) > MAX_VARIABLES_BYTES:
        return f"a session's context variables take at most {MAX_VARIABLES_BYTES} bytes of JSON"
    return None
