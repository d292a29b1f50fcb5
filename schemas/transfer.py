"""Lines of ``POST /memory/import`` (and ``GET /memory/export``): JSON objects tagged on ``kind``.

Unknown fields are ignored, so an export (which carries a few more fields)
imports as it is. Constraints live in the types: a line that breaks one fails
its decode with msgspec's message, which names the field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec

from schemas.records import Role, Validity
from schemas.wire import MAX_TEXT, NAME_PATTERN

__all__ = [
    "MAX_TEXT",
    "DerivedLine",
    "FactLine",
    "ImportLine",
    "ImportReply",
    "LineError",
    "NoteLine",
    "ProfileLine",
    "TurnLine",
    "decode_line",
]

Name = Annotated[str, msgspec.Meta(pattern=NAME_PATTERN)]
_Text = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TEXT)]
_Speaker = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
_Confidence = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
_Turn = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]


class _Tagged(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    pass


class _Line(_Tagged, frozen=True, kw_only=True):
    #: The client's id: importing a line whose id was imported before is a no-op.
    id: Name
    scope: Name = "global"
    meta: dict[str, Any] = {}


class TurnLine(_Line, frozen=True, tag="turn"):
    """One message of a conversation."""

    session_id: Name
    speaker: _Speaker
    role: Role
    text: _Text
    at: datetime
    #: Its exchange's number within the session (exports carry it); 0 when unknown.
    turn: _Turn = 0


class FactLine(_Line, frozen=True, tag="fact"):
    """One long-term fact; ``category`` must name a category of the taxonomy (or an alias)."""

    content: _Text
    category: str
    confidence: _Confidence
    at: datetime | None = None
    pinned: bool = False
    subject: str | None = None
    predicate: str | None = None
    #: Exports carry history too: only ``active`` facts are imported.
    validity: Validity = "active"


class NoteLine(_Tagged, frozen=True, tag="note"):
    """An app note of an export: recognized and skipped (the server writes its own notes)."""


class ProfileLine(_Tagged, frozen=True, tag="profile"):
    """The profile of an export: recognized and skipped (compaction rebuilds it)."""


DerivedLine = NoteLine | ProfileLine
ImportLine = TurnLine | FactLine | NoteLine | ProfileLine

_decoder: msgspec.json.Decoder[ImportLine] = msgspec.json.Decoder(ImportLine)


def decode_line(raw: bytes) -> ImportLine:
    """Decode one line. Raises ``msgspec.DecodeError`` (bad JSON, kind, field or value, or
    nested too deeply for the decoder)."""
    try:
        return _decoder.decode(raw)
    except RecursionError:
        raise msgspec.ValidationError("JSON nested too deeply") from None


class LineError(msgspec.Struct, frozen=True):
    #: 1-based line number within the request body.
    line: int
    message: str


class ImportReply(msgspec.Struct, kw_only=True):
    """The answer to an import: counts, and the lines that failed (the first 1000 of them)."""

    imported: int = 0
    skipped: int = 0
    errors: list[LineError] = []
    #: Failed lines beyond those listed in ``errors``.
    errors_omitted: int = 0
