"""Protocol v1: the JSON text frames exchanged on ``/ws/{session_id}``.

Tags are explicit strings: renaming a class never changes the protocol. Every
field added later gets a default, and no field ever changes type.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

__all__ = [
    "MAX_TEXT",
    "NAME_PATTERN",
    "Ack",
    "Chat",
    "ClientMessage",
    "ContextBlock",
    "ContextRequest",
    "Delta",
    "Done",
    "End",
    "ErrorFrame",
    "FactConflict",
    "FactView",
    "MemoryChanged",
    "Ping",
    "Pong",
    "Ready",
    "Remember",
    "ServerMessage",
    "Set",
    "Turn",
    "Usage",
    "decode_client",
    "encode_server",
    "frame_id",
    "is_blank",
    "text_problem",
]

_ID_MAX = 128
#: Session ids, app ids (scopes) and the ids of imported lines: 1-128 of A-Z a-z 0-9 _ . : -
NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}\Z"
#: A message's text or a fact's content: at most 65,536 characters, as a live session's
#: (whose frames are at most 64 KiB by default): indexing costs work in proportion to it.
MAX_TEXT = 65536


def is_blank(text: str) -> bool:
    """Whether ``text`` says nothing (empty or whitespace only): such a side of a turn is
    not archived, and an import line of it is refused."""
    return not text.strip()


def text_problem(text: str) -> str | None:
    """Why a message's text cannot be stored (and so exported and imported again), or None:
    the one check a live session's messages and an import's lines both pass."""
    if is_blank(text):
        return "is blank"
    if len(text) > MAX_TEXT:
        return f"is longer than {MAX_TEXT} characters"
    return None


class _Wire(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


# -- client -> server ------------------------------------------------------


class Chat(_Wire, frozen=True, tag="chat"):
    """A user message; the reply is streamed from the chat model."""

    id: str
    content: str
    meta: dict[str, Any] = {}


class Turn(_Wire, frozen=True, tag="turn"):
    """A finished user/assistant exchange to archive; answered by ``ack`` once durable."""

    id: str
    user: str
    assistant: str
    meta: dict[str, Any] = {}


class ContextRequest(_Wire, frozen=True, tag="context"):
    """Ask for a memory context block for ``query`` within ``budget`` tokens."""

    id: str
    query: str
    budget: int | None = None
    format: str | None = None


class Set(_Wire, frozen=True, tag="set"):
    """Set the working memory's topic and/or merge context variables."""

    topic: str | None = None
    variables: dict[str, Any] = {}
    #: Optional: echoed in the ``error`` frame when the ``set`` is refused.
    id: str | None = None


class Remember(_Wire, frozen=True, tag="remember"):
    """Add a fact by hand; answered by a ``memory`` frame with the same ``id``."""

    id: str
    content: str
    category: str | None = None
    pinned: bool = False


class End(_Wire, frozen=True, tag="end"):
    """Close the session: final archive, then the server closes the socket."""


class Ping(_Wire, frozen=True, tag="ping"):
    pass


ClientMessage = Chat | Turn | ContextRequest | Remember | Set | End | Ping


# -- server -> client ------------------------------------------------------


class Ready(_Wire, frozen=True, tag="ready"):
    session_id: str
    turn_count: int
    resumed: bool
    protocol: int = 1


class Delta(_Wire, frozen=True, tag="delta"):
    id: str
    text: str


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    context_tokens: int = 0
    #: Milliseconds the server spent building the memory context before calling the model.
    context_ms: float = 0.0
    #: Milliseconds the chat waited for its session actor (in its mailbox) before that.
    queued_ms: float = 0.0
    #: Milliseconds from calling the model to its first streamed chunk, as the server saw
    #: it: the model's part of the time to the first ``delta``.
    model_first_ms: float = 0.0


class Done(_Wire, frozen=True, tag="done"):
    id: str
    turn: int
    usage: Usage = Usage()


class Ack(_Wire, frozen=True, tag="ack"):
    id: str
    turn: int


class ContextBlock(_Wire, frozen=True, tag="context", omit_defaults=True):
    id: str
    text: str
    tokens: int
    memory_ids: list[str]
    #: Memories matched but none fit ``budget``: the budget the smallest of them needs
    #: (with its heading). Left out of the frame when the block holds what matched, or
    #: nothing matched.
    budget_needed: int | None = None


class FactView(msgspec.Struct, frozen=True, kw_only=True):
    """A fact as clients see it (REST items and ``memory`` frames)."""

    id: str
    content: str
    category: str
    confidence: float
    scope: str
    validity: str
    pinned: bool
    mention_count: int
    created_at: datetime
    updated_at: datetime
    last_seen: datetime
    source: str
    extractor: str
    status: str | None = None
    subject: str | None = None
    predicate: str | None = None
    key: str | None = None
    value: str | None = None
    relation: str | None = None
    negated: bool = False
    supersedes_id: str | None = None
    superseded_by: str | None = None
    conflicts_with: str | None = None
    access_count: int = 0
    last_accessed: datetime | None = None
    #: Seed 002's fields: importance (0..10), permanence (how fast it decays), tags, the
    #: entity it is about, and when it was last confirmed (decay counts from there).
    importance: float = 5.0
    permanence: str = "standard"
    tags: list[str] = []
    entity_id: str | None = None
    last_confirmed_at: datetime | None = None
    source_scope: str | None = None
    source_episode_id: str | None = None
    kind: str = "fact"


class FactConflict(msgspec.Struct, frozen=True, kw_only=True):
    """A new fact (``id``) that contradicts a kept one (``kept_id``), and why it was kept."""

    id: str
    kept_id: str
    reason: str


class MemoryChanged(_Wire, frozen=True, tag="memory"):
    """Long-term memory changed: pushed after extraction, and the answer to ``remember``."""

    added: list[FactView] = []
    updated: list[FactView] = []
    superseded: list[FactView] = []
    removed: list[str] = []
    id: str | None = None
    #: New facts that contradict a fact kept as it is (pinned, or stated more surely):
    #: both stay active, linked by ``conflicts_with``, for the user to resolve.
    conflicts: list[FactConflict] = []


class ErrorFrame(_Wire, frozen=True, tag="error"):
    code: str
    message: str
    id: str | None = None


class Pong(_Wire, frozen=True, tag="pong"):
    pass


ServerMessage = Ready | Delta | Done | Ack | ContextBlock | MemoryChanged | ErrorFrame | Pong


class _Identified(msgspec.Struct):
    """Any frame, read only for its ``id`` (to answer a frame that is refused)."""

    id: str | None = None


_decoder: msgspec.json.Decoder[ClientMessage] = msgspec.json.Decoder(ClientMessage)
_id_decoder = msgspec.json.Decoder(_Identified)
_encoder = msgspec.json.Encoder()


def decode_client(frame: str | bytes) -> ClientMessage:
    """Decode and validate one client frame.

    Raises ``msgspec.ValidationError`` (a ``DecodeError``) for malformed JSON,
    unknown types, missing or wrong fields, ids that are empty or too long, and
    JSON nested too deeply for the decoder (``RecursionError`` inside it).
    """
    try:
        message = _decoder.decode(frame)
    except RecursionError:
        raise msgspec.ValidationError("JSON nested too deeply") from None
    ident = getattr(message, "id", None)
    if ident is not None and not 0 < len(ident) <= _ID_MAX:
        raise msgspec.ValidationError(f"`id` must be 1 to {_ID_MAX} characters")
    problem = _text_problem(message)
    if problem is not None:
        raise msgspec.ValidationError(problem)
    return message


def _text_problem(message: ClientMessage) -> str | None:
    """A chat's or a fact's content, or a turn's sides, that could not be stored (and so
    exported and imported again): a turn may leave one side blank (that side is not
    archived), never both."""
    if isinstance(message, Chat | Remember):
        problem = text_problem(message.content)
        return None if problem is None else f"`content` {problem}"
    if isinstance(message, Turn):
        if is_blank(message.user) and is_blank(message.assistant):
            return "a turn needs a `user` or an `assistant` message; both are blank"
        for side in ("user", "assistant"):
            text: str = getattr(message, side)
            if len(text) > MAX_TEXT:
                return f"`{side}` is longer than {MAX_TEXT} characters"
    return None


def frame_id(frame: str | bytes) -> str | None:
    """The ``id`` of a frame that is refused (too big, rate-limited, invalid), when it is
    a JSON object whose ``id`` is a string of 1 to 128 characters; otherwise None."""
    try:
        ident = _id_decoder.decode(frame).id
    except (msgspec.DecodeError, RecursionError):
        return None
    return ident if ident is not None and 0 < len(ident) <= _ID_MAX else None


def encode_server(message: ServerMessage) -> str:
    return _encoder.encode(message).decode()
