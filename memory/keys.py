"""What an archived message is found by: its search text, and what its speaker says of themselves.

A turn's vector is the embedding of its search text (``memory.recall.search_text``)
mixed with the embedding of its statements: the sentences in which its speaker speaks
of themselves without asking anything ("I just got back from a solo camping trip to
Yosemite"), ``STATEMENT_WEIGHT`` to one. A message often wraps what a person says of
their life in a request ("Can you recommend camping gear? I just got back from a solo
trip to Yosemite and need to upgrade."), and a question later asks about the life, not
the request: one key per turn that leans toward the statements finds it. The
assistant's replies have no statements of their own. Pure: ``actors.writer`` embeds.

LoCoMo dev (two people talking, 760 questions), Recall@10 with the facts the reader
finds at 0.5 (before): 0.744; with statements at 2 without the speaker's name: 0.731
(R@1 0.262 -> 0.243); with it: 0.754 (R@1 0.286).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from memory.recall import said
from memory.tokens import estimate_tokens
from schemas.records import ArchivedMessage

__all__ = ["MIN_STATEMENT_TOKENS", "STATEMENT_WEIGHT", "mixed", "statement_text"]

#: The statements' share of a turn's vector, against 1 for its search text. LongMemEval
#: dev (100 questions, one index, in-process), turn recall_all@5: 0.700 on the text
#: alone, 0.720 at 0.5, 0.750 at 1, 0.770 at 1.5, 0.780 at 2, 0.770 at 3 (the facts the
#: rule-based reader finds, at 0.5 instead: 0.730); said by the speaker, with the floor
#: below: 0.740 at 1, 0.780 at 2, 0.770 at 3.
STATEMENT_WEIGHT = 2.0
#: Statements shorter than this (``memory.tokens.estimate_tokens``) add nothing: "Yes, I
#: did!" says nothing on its own, and a short message is mostly its statement already;
#: their turn keeps the key of its text and the message it answered. LoCoMo dev,
#: Recall@10 (statements without the speaker's name): 0.731 without, 0.738 at 10 or 16.
MIN_STATEMENT_TOKENS = 10

_SENTENCE = re.compile(r"(?<=[.!?;])\s+|(?<=[\u3002\uff01\uff1f\uff1b])|\n+")
_FIRST_PERSON = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|our)\b|我", re.IGNORECASE
)
_ASKS = re.compile(
    r"[?\uff1f]\s*$|[吗呢]\W*$"
    r"|\b(?:can|could|would|will) you\b|\bdo you\b|\bplease\b|\b(?:recommend|suggest)\b"
    r"|\bhelp me\b|\bi(?:'m| am) (?:looking for|wondering|trying to find)\b|\bwhat (?:are|is)\b"
    r"|请|能不能|可不可以|能否|推荐|建议|帮我|有没有",
    re.IGNORECASE,
)


def statement_text(message: ArchivedMessage) -> str:
    """The sentences of ``message`` in the first person that neither ask nor request,
    said by its speaker (``"Caroline: I moved to Porto."``): a question names the person
    it is about. "" for none, for fewer than ``MIN_STATEMENT_TOKENS``, and for the
    assistant's messages."""
    if message.role == "assistant":
        return ""
    sentences = [s.strip() for s in _SENTENCE.split(message.text)]
    kept = " ".join(s for s in sentences if _FIRST_PERSON.search(s) and not _ASKS.search(s))
    if estimate_tokens(kept) < MIN_STATEMENT_TOKENS:
        return ""
    return said(message.speaker, kept)


def mixed(
    text_vectors: Sequence[Sequence[float]], statement_vectors: Sequence[Sequence[float] | None]
) -> list[list[float]]:
    """Each text vector plus ``STATEMENT_WEIGHT`` of its statements' vector (None: none),
    unit length."""
    out = []
    for text, statements in zip(text_vectors, statement_vectors, strict=True):
        if statements is None:
            out.append(list(text))
            continue
        vector = np.asarray(text, dtype=np.float32) + STATEMENT_WEIGHT * np.asarray(
            statements, np.float32
        )
        norm = float(np.linalg.norm(vector))
        out.append([float(x) for x in (vector / norm if norm > 0.0 else vector)])
    return out
