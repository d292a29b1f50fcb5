"""Turning recalled archive messages into a context block within a token budget."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory.text import indexed_text
from memory.tokens import estimate_tokens
from schemas.records import ArchivedMessage

__all__ = [
    "ALONE_CHARS",
    "CONTEXT_CHARS",
    "CONTEXT_FORMATS",
    "HEADING",
    "KEY_CHARS",
    "RecalledBlock",
    "date_label",
    "format_recalled",
    "key_text",
    "key_text_of_stored",
    "said",
    "search_text",
]

HEADING = "## Relevant past conversation"
#: Names a ``context`` request may ask for in ``format``.
CONTEXT_FORMATS = ("conversation",)


class RecalledBlock:
    """The text of a context block, its token estimate and the ids it contains; ``needed``:
    messages were found but none fits, the budget the shortest of them needs (else 0)."""

    __slots__ = ("memory_ids", "needed", "text", "tokens")

    def __init__(self, text: str, tokens: int, memory_ids: list[str], needed: int = 0) -> None:
        self.text = text
        self.tokens = tokens
        self.memory_ids = memory_ids
        self.needed = needed


#: How much of the message before it a message's search text carries.
CONTEXT_CHARS = 300
#: How much of an assistant's message its vector is computed from (about 45 tokens).
KEY_CHARS = 200
#: A message of the user's longer than this stands on its own: its vector leaves out the
#: message it answered.
ALONE_CHARS = 300


def said(speaker: str, text: str) -> str:
    """``speaker: text`` on one line: how a message reads in a search text."""
    return f"{speaker}: {' '.join(text.split())}"


_MONTHS = (
    "January February March April May June July August September October November December"
).split()


def date_label(at: datetime) -> str:
    """``8 May 2023``: how a message's date reads in its search text (UTC)."""
    return f"{at.day} {_MONTHS[at.month - 1]} {at.year}"


def search_text(message: ArchivedMessage) -> str:
    """What a message is found by in the full-text index, and what its vector is computed
    from as ``key_text`` cuts it: when it was said, who said it, what they said, and the
    message it answered. People ask about time ("in May
    2023"); conversations are about people: a question names them ("When did
    Caroline...?") while their own words rarely do; and a short answer ("Yes, last
    week!") means what the message before it asked. One line, cleaned as indexed text is
    (``memory.text.indexed_text``)."""
    return _searched(message, message.text)


def key_text(message: ArchivedMessage) -> str:
    """What a message's vector is computed from: its search text, except that

    - an assistant's message is keyed by its first ``KEY_CHARS`` characters alone (the
      whole of it, and the message it answered, stay in the full-text index): the
      user's own words carry what they asked, and an assistant's reply is found by how
      it opens. Replies run long (224 tokens on average in LongMemEval); embedding them
      whole took 82 % of an import's embedding work, and the first 500 characters with
      the message they answered still 56 %;
    - a message of the user's longer than ``ALONE_CHARS`` leaves out the message it
      answered: a short answer means what it answered ("Yes, last week!"), a long one
      says what it means, and the assistant's words would dilute the user's own."""
    if message.role == "assistant":
        return _searched(message, message.text[:KEY_CHARS], context="")
    if len(message.text) <= ALONE_CHARS:
        return search_text(message)
    return _searched(message, message.text, context="")


def key_text_of_stored(message: ArchivedMessage, stored: str) -> str:
    """``key_text`` of a message read back with its stored search text, which holds the
    context the message no longer does."""
    if message.role != "assistant" and len(message.text) <= ALONE_CHARS:
        return stored
    return key_text(message)


def _searched(message: ArchivedMessage, text: str, context: str | None = None) -> str:
    """The search text of ``message`` with ``text`` said, after ``context`` (by default
    the message's)."""
    context = message.context if context is None else context
    searched = f"[{date_label(message.at)}] {said(message.speaker, text)}"
    if context:
        searched += f" (after {context[:CONTEXT_CHARS]})"
    return indexed_text(searched)


def _line(message: ArchivedMessage, newer: datetime | None) -> str:
    text = " ".join(message.text.split())
    earlier = ""
    if message.superseded_by:
        since = f" on {newer.date().isoformat()}" if newer is not None else " since"
        earlier = f" (earlier: said otherwise{since})"
    return f"- [{message.at.date().isoformat()}] {message.speaker}{earlier}: {text}"


def format_recalled(messages: Sequence[ArchivedMessage], budget: int) -> RecalledBlock:
    """Best-first messages as dated lines under a heading, stopping before the budget.

    ``messages`` is already ranked; a message that does not fit is skipped and a
    shorter one further down may still go in. A message a newer one superseded (its
    ``superseded_by``) is shown as the earlier state it is, with the newer one's date
    when that one is among ``messages``. No messages: an empty block.
    """
    lines = [HEADING]
    used = estimate_tokens(HEADING)
    ids: list[str] = []
    cheapest = 0
    dates = {message.id: message.at for message in messages}
    for message in messages:
        line = _line(message, dates.get(message.superseded_by))
        cost = estimate_tokens(line) + 1  # the newline
        cheapest = min(cheapest or cost, cost)
        if used + cost > budget:
            continue
        lines.append(line)
        used += cost
        ids.append(message.id)
    if not ids:
        return RecalledBlock("", 0, [], used + cheapest if messages else 0)
    return RecalledBlock("\n".join(lines), used, ids)
