"""Seed 004's two-stage compaction of a chat prompt once it reaches 80 % of the model context.

Stage 1 trims the conversation history middle-out; stage 2, only if that was not
enough, reduces the injected memory. Token counts are ``estimate_tokens`` of the
message and fact contents; the system prompt arrives already counted. A last
stage (3) guarantees seed 004's "never overflows": when the prompt is still over
the model's whole context, the optional blocks go, then older messages, then
every fact, and finally the newest message is clipped in the middle.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from memory.formats import rank_key
from memory.tokens import estimate_tokens
from schemas.llm import PromptMessage
from schemas.records import Fact

__all__ = [
    "DROPPED_CATEGORY",
    "HALVED_CATEGORY",
    "Compacted",
    "clip_middle",
    "compact",
    "trim_history",
]

#: Stage 2 drops this category's unpinned facts entirely ...
DROPPED_CATEGORY = "identity"
#: ... then keeps only the higher-confidence half of this one's; others stay intact.
HALVED_CATEGORY = "preference"


@dataclass(frozen=True, slots=True)
class Compacted:
    """What is left of the prompt, what went, and the last stage that ran (0 to 3).

    ``tokens`` is the final estimate (system + extra + memory + history); after
    stage 2 it may still be at or over the threshold, but never over the context.
    ``keep_extra`` is False when stage 3 left out the optional blocks.
    """

    history: list[PromptMessage]
    facts: list[Fact]
    trimmed_messages: int
    dropped_facts: int
    stage: int
    tokens: int
    keep_extra: bool = True


def trim_history(history: Sequence[PromptMessage], keep_last: int = 6) -> list[PromptMessage]:
    """Keep the first exchange and the last ``keep_last`` messages, in order; drop the middle.

    The first exchange is the first user message and, if the next message is the
    assistant's, that reply. Anything before the first user message counts as middle.
    """
    keep = set(range(max(0, len(history) - keep_last), len(history)))
    for index, message in enumerate(history):
        if message.role == "user":
            keep.add(index)
            if index + 1 < len(history) and history[index + 1].role == "assistant":
                keep.add(index + 1)
            break
    return [message for index, message in enumerate(history) if index in keep]


def _halve_preferences(facts: list[Fact]) -> list[Fact]:
    candidates = [
        index
        for index, fact in enumerate(facts)
        if fact.category == HALVED_CATEGORY and not fact.pinned
    ]
    candidates.sort(key=lambda index: rank_key(facts[index].confidence, facts[index]))
    dropped = set(candidates[math.ceil(len(candidates) / 2) :])
    return [fact for index, fact in enumerate(facts) if index not in dropped]


def _tokens(system_tokens: int, history: Sequence[PromptMessage], facts: Sequence[Fact]) -> int:
    return (
        system_tokens
        + sum(estimate_tokens(message.content) for message in history)
        + sum(estimate_tokens(fact.content) for fact in facts)
    )


def clip_middle(text: str, tokens: int) -> str:
    """``text`` cut in the middle (marked ``…``) to at most ``tokens`` estimated tokens."""
    if estimate_tokens(text) <= tokens:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest head+tail split that fits
        keep = (low + high + 1) // 2
        candidate = text[: keep - keep // 2] + "…" + text[len(text) - keep // 2 :]
        if estimate_tokens(candidate) <= tokens:
            low = keep
        else:
            high = keep - 1
    return text[: low - low // 2] + "…" + text[len(text) - low // 2 :] if low else ""


def _fit(
    messages: list[PromptMessage],
    facts: list[Fact],
    *,
    system_tokens: int,
    extra_tokens: int,
    context_tokens: int,
) -> tuple[list[PromptMessage], list[Fact], bool]:
    """Stage 3: drop what it takes for the prompt to fit the model's whole context."""
    keep_extra = True
    if _tokens(system_tokens + extra_tokens, messages, facts) > context_tokens:
        keep_extra = False
    while len(messages) > 1 and _tokens(system_tokens, messages, facts) > context_tokens:
        messages = messages[1:]
    if _tokens(system_tokens, messages, facts) > context_tokens:
        facts = []
    over = _tokens(system_tokens, messages, facts) - context_tokens
    if over > 0 and messages:
        last = messages[-1]
        room = max(0, estimate_tokens(last.content) - over)
        messages = [*messages[:-1], PromptMessage(last.role, clip_middle(last.content, room))]
    return messages, facts, keep_extra


def compact(
    history: Sequence[PromptMessage],
    memory_facts: Sequence[Fact],
    *,
    system_tokens: int,
    context_tokens: int,
    threshold: float = 0.8,
    keep_last: int = 6,
    extra_tokens: int = 0,
) -> Compacted:
    """Shrink history, then memory, while the prompt is at or over ``threshold * context_tokens``.

    Stage 1: :func:`trim_history`. Stage 2: drop unpinned identity facts; if still
    over, keep the higher-confidence half (rounded up) of the unpinned preferences
    (ties: newer, then lower id). Pinned facts and every other category are never
    removed. Kept facts keep their given order. ``history`` excludes the system
    prompt, counted in ``system_tokens``; ``extra_tokens`` counts optional blocks
    (recalled conversation, app notes) that only stage 3 removes.

    Raises ``ValueError`` for a threshold outside ``(0, 1]`` or a negative ``keep_last``.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if keep_last < 0:
        raise ValueError(f"keep_last must not be negative, got {keep_last}")
    limit = threshold * context_tokens
    messages, facts = list(history), list(memory_facts)
    base = system_tokens + extra_tokens
    used = _tokens(base, messages, facts)
    if used < limit:
        return Compacted(messages, facts, 0, 0, 0, used)

    messages = trim_history(messages, keep_last)
    trimmed = len(history) - len(messages)
    used = _tokens(base, messages, facts)
    if used < limit:
        return Compacted(messages, facts, trimmed, 0, 1, used)

    facts = [fact for fact in facts if fact.pinned or fact.category != DROPPED_CATEGORY]
    used = _tokens(base, messages, facts)
    if used >= limit:
        facts = _halve_preferences(facts)
        used = _tokens(base, messages, facts)
    if used <= context_tokens:
        return Compacted(messages, facts, trimmed, len(memory_facts) - len(facts), 2, used)

    kept = len(messages)
    messages, facts, keep_extra = _fit(
        messages,
        facts,
        system_tokens=system_tokens,
        extra_tokens=extra_tokens,
        context_tokens=context_tokens,
    )
    used = _tokens(system_tokens + (extra_tokens if keep_extra else 0), messages, facts)
    return Compacted(
        messages,
        facts,
        trimmed + kept - len(messages),
        len(memory_facts) - len(facts),
        3,
        used,
        keep_extra,
    )
