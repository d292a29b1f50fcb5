"""What mnemo sends a model as an answer's shape and length, and how it reads the answer.

``answer_schema`` is the ``format`` of a structured call; ``answer_tokens`` caps each
call at what its answer can need (a small model that rambles stops there instead of at
the end of its context); ``read_extraction`` decodes an extraction item by item, so
that one bad fact drops that fact, not the whole answer.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import msgspec

from schemas.llm import ExtractedFact, Extraction, MemoryUpdate, SessionAnalysis

__all__ = ["FACT_TOKENS", "ExtractionRead", "answer_schema", "answer_tokens", "read_extraction"]

#: Tokens one extracted fact takes as JSON (content, subject, predicate, value, flags),
#: measured on SmolLM2's and Qwen2.5's tokenizers with a margin.
FACT_TOKENS = 120
#: The answer around the facts: braces, ``memory_update``, ``analysis``.
_FRAME_TOKENS = 160
#: Facts one user message can state (a list, "I like tea and coffee", is several).
_FACTS_PER_TURN = 4
_MAX_EXTRACTION_TOKENS = 2048
#: Answers other than extraction, by the schema's title: their longest sensible length
#: (a note is at most 1,000 characters, about 300 tokens).
_TOKENS_BY_TITLE = {
    "NoteText": 512,
    "NoteDecision": 512,
    "ProfileSummary": 768,
    "Consolidation": 1536,
}
_DEFAULT_TOKENS = 256
_T = TypeVar("_T")


def answer_schema(kind: type) -> dict[str, Any]:
    """msgspec's JSON schema of ``kind`` with its root ``$ref`` replaced by the definition
    it names. llama.cpp's schema-to-grammar converter (the one Ollama runs) leaves the
    nested ``$ref``s of a ``$ref`` root unresolved, and then no answer decodes. The other
    definitions stay under ``$defs``."""
    schema = msgspec.json.schema(kind)
    ref = schema.pop("$ref", None)
    if not isinstance(ref, str):
        return schema
    defs: dict[str, Any] = schema.pop("$defs", {})
    name = ref.removeprefix("#/$defs/")
    root: dict[str, Any] = {**defs[name], **schema}
    others = {k: v for k, v in defs.items() if k != name}
    if others:
        root["$defs"] = others
    return root


def answer_tokens(schema: dict[str, Any], *, turns: int = 1) -> int:
    """The ``num_predict`` of a call answering ``schema``: an extraction of ``turns`` user
    messages gets room for ``_FACTS_PER_TURN`` facts each; other answers their title's cap."""
    title = schema.get("title")
    if title == "Extraction":
        wanted = _FRAME_TOKENS + FACT_TOKENS * _FACTS_PER_TURN * max(1, turns)
        return min(wanted, _MAX_EXTRACTION_TOKENS)
    return _TOKENS_BY_TITLE.get(str(title), _DEFAULT_TOKENS)


class _Loose(msgspec.Struct, frozen=True, kw_only=True):
    facts: list[msgspec.Raw] = []
    memory_update: msgspec.Raw = msgspec.Raw()
    analysis: msgspec.Raw = msgspec.Raw()


class ExtractionRead(msgspec.Struct, frozen=True, kw_only=True):
    """An extraction answer as far as it could be read."""

    extraction: Extraction
    #: Why each fact that could not be read was dropped, one entry per fact.
    dropped: list[str] = []


def read_extraction(answer: str | bytes) -> ExtractionRead:
    """Decode an extraction answer fact by fact. A confidence outside 0..1 is clamped into
    it (grammars bound no numbers: a model may write 10.2); a fact that still does not fit
    ``ExtractedFact`` is dropped and said why; an ``analysis`` or ``memory_update`` that does
    not fit is left at its default.

    Raises ``msgspec.DecodeError`` when the answer is not a JSON object with a ``facts``
    list (a truncated answer, or another shape altogether)."""
    loose = msgspec.json.decode(answer, type=_Loose)
    facts: list[ExtractedFact] = []
    dropped: list[str] = []
    for raw in loose.facts:
        try:
            item = msgspec.json.decode(raw)
            if isinstance(item, dict):
                item = _clamped(item)
            facts.append(msgspec.convert(item, ExtractedFact))
        except msgspec.DecodeError as exc:  # ValidationError included
            dropped.append(str(exc))
    return ExtractionRead(
        extraction=Extraction(
            facts=facts,
            memory_update=_or_default(loose.memory_update, MemoryUpdate),
            analysis=_or_default(loose.analysis, SessionAnalysis),
        ),
        dropped=dropped,
    )


def _clamped(item: dict[str, Any]) -> dict[str, Any]:
    confidence = item.get("confidence")
    if isinstance(confidence, int | float) and not isinstance(confidence, bool):
        if math.isfinite(confidence) and not 0.0 <= confidence <= 1.0:
            return {**item, "confidence": min(1.0, max(0.0, float(confidence)))}
    return item


def _or_default(raw: msgspec.Raw, kind: type[_T]) -> _T:
    if raw:  # an empty Raw: the field was left out
        try:
            return msgspec.json.decode(raw, type=kind)
        except msgspec.DecodeError:
            pass
    return kind()
