"""Importing JSON lines: splitting a byte stream into lines, checking each, and the records
an imported line becomes. Pure: the route feeds bytes in, the importer writes what comes out."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec

from memory.facts import Candidate, normalize_category
from memory.json_bounds import check_depth, check_integers
from schemas.records import ArchivedMessage
from schemas.taxonomy import PERMANENCE_DECAY, CategorySpec
from schemas.transfer import FACT_ID, FactLine, ImportLine, RuleLine, TurnLine, decode_line
from schemas.wire import text_problem

__all__ = [
    "LineSplitter",
    "candidate_from_line",
    "imported_message_id",
    "message_from_line",
    "parse_line",
    "transfer_id",
]

_S = TypeVar("_S", bound=msgspec.Struct)

#: A numbered line, or None in place of one longer than the splitter's limit.
Numbered = tuple[int, bytes | None]


class LineSplitter:
    """Splits chunks of a body into numbered lines (from 1), holding at most ``limit`` bytes.

    A line longer than ``limit`` comes out as None and its bytes are dropped as
    they arrive, so a body without newlines never fills memory. Blank lines are
    counted but not returned.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._pending = bytearray()
        self._too_long = False
        self._number = 0

    @property
    def count(self) -> int:
        """How many lines ended so far, blank ones included."""
        return self._number

    def feed(self, chunk: bytes) -> list[Numbered]:
        out: list[Numbered] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._take(chunk[start:end])
            self._emit(out)
            start = end + 1
        self._take(chunk[start:])
        return out

    def finish(self) -> list[Numbered]:
        """The last line, when the body does not end with a newline."""
        out: list[Numbered] = []
        if self._pending or self._too_long:
            self._emit(out)
        return out

    def _take(self, part: bytes) -> None:
        if self._too_long:
            return
        if len(self._pending) + len(part) > self._limit:
            self._too_long = True
            self._pending.clear()
        else:
            self._pending += part

    def _emit(self, out: list[Numbered]) -> None:
        self._number += 1
        if self._too_long:
            out.append((self._number, None))
        elif self._pending.strip():
            out.append((self._number, bytes(self._pending)))
        self._pending.clear()
        self._too_long = False


def _utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _in_utc(line: _S) -> _S:
    """``line`` with every time in UTC (naive ones taken as UTC), a rule's applications'
    too."""
    changes: dict[str, Any] = {}
    for name in line.__struct_fields__:
        value = getattr(line, name)
        if isinstance(value, datetime):
            changes[name] = _utc(value)
    if isinstance(line, RuleLine) and line.applications:
        changes["applications"] = [_in_utc(a) for a in line.applications]
    return msgspec.structs.replace(line, **changes) if changes else line


def parse_line(raw: bytes, categories: Sequence[CategorySpec]) -> ImportLine:
    """Decode and check one line: nesting and integers within ``memory.json_bounds``, times
    in UTC (naive ones taken as UTC), texts not blank, a fact's category in the
    taxonomy's spelling, a permanence seed 002 knows. Raises ``ValueError`` with a
    message for the client."""
    check_depth(raw)  # first: the decoder never recurses past the bound
    try:
        line = decode_line(raw)
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None
    check_integers(raw)
    line = _in_utc(line)
    for name in ("text", "content"):
        text = getattr(line, name, None)
        if text is not None and (problem := text_problem(text)) is not None:
            raise ValueError(f"{name} {problem}")
    permanence = getattr(line, "permanence", None)
    if permanence is not None and permanence not in PERMANENCE_DECAY:
        raise ValueError(f"permanence must be one of {', '.join(PERMANENCE_DECAY)}")
    if not isinstance(line, FactLine):
        return line
    if line.updated_at is not None and not re.match(FACT_ID, line.id):
        raise ValueError("a fact of an export (with updated_at) has an id fact_ and 8 hex digits")
    category = normalize_category(line.category, categories)
    if category is None:
        known = ", ".join(spec.name for spec in categories)
        raise ValueError(f"unknown category {line.category!r}; known: {known}")
    return msgspec.structs.replace(line, category=category)


def imported_message_id(user_id: str, client_id: str) -> str:
    """The message id of an imported line: ``msg_`` + 16 hex, the same for the same user and
    client id, so importing a line again finds the message it made."""
    digest = hashlib.sha256(f"{user_id}\x00{client_id}".encode()).hexdigest()
    return f"msg_{digest[:16]}"


def transfer_id(message: ArchivedMessage) -> str:
    """The id an export gives a message: the client's id for an imported one, so that
    exporting and importing again (into any user) never imports it twice."""
    if message.source_id and message.id == imported_message_id(message.user_id, message.source_id):
        return message.source_id
    return message.id


def message_from_line(line: TurnLine, user_id: str, context: str = "") -> ArchivedMessage:
    """The archived message of a checked turn line (see ``parse_line``); ``context`` is the
    message before it in its session (``speaker: text``)."""
    return ArchivedMessage(
        id=imported_message_id(user_id, line.id),
        user_id=user_id,
        session_id=line.session_id,
        scope=line.scope,
        turn=line.turn,
        role=line.role,
        speaker=line.speaker,
        text=line.text,
        at=line.at,
        meta=line.meta,
        source_id=line.id,
        context=context,
    )


def candidate_from_line(line: FactLine, *, vector: Sequence[float], user_id: str) -> Candidate:
    """The candidate of a checked fact line (see ``parse_line``)."""
    return Candidate(
        user_id=user_id,
        content=line.content,
        category=line.category,
        confidence=line.confidence,
        vector=vector,
        subject=line.subject,
        predicate=line.predicate,
        extractor="import",
        scope=line.scope,
        pinned=line.pinned,
        at=line.at,
        source_id=line.id,
        meta=line.meta,
    )
