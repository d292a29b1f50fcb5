"""What mnemo sends a model as an answer's shape and length, and how it reads the answer.

``answer_schema`` is the ``format`` of a structured call (``extraction_schema`` the
tighter one of an extraction); ``answer_tokens`` caps each call at what its answer can
need (a small model that rambles stops there instead of at
the end of its context); ``read_extraction`` decodes an extraction item by item, so
that one bad fact drops that fact, not the whole answer.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from schemas.llm import ExtractedFact, Extraction, MemoryUpdate, SessionAnalysis

__all__ = [
    "FACT_TOKENS",
    "ExtractionRead",
    "answer_schema",
    "answer_tokens",
    "extraction_schema",
    "read_extraction",
]

#: Tokens one extracted fact can take as JSON within ``_SHORT`` (its longest strings
#: and every field), with a margin; most take half.
FACT_TOKENS = 150
#: The answer around the facts: braces, ``memory_update``, ``analysis`` within ``_SHORT``.
_FRAME_TOKENS = 200
#: Facts one user message may state (a list, "I like tea and coffee", is several).
_FACTS_PER_TURN = 3
#: The longest strings an extraction's schema lets a model write: shorter than what
#: ``ExtractedFact`` accepts (a fact written by hand may be longer), so that a model that
#: rambles inside a string is stopped by the grammar, not by the token cap.
_SHORT = {
    "content": 200,
    "subject": 60,
    "predicate": 40,
    "value": 80,
    "relation": 40,
    "key": 40,
    "permanence": 20,
    "current_topic": 80,
    "last_emotion": 30,
}
_VARIABLES = 4
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


def extraction_schema(*, turns: int, categories: Sequence[str]) -> dict[str, Any]:
    """The ``format`` of an extraction of ``turns`` user messages: ``Extraction``'s schema
    with at most ``_FACTS_PER_TURN`` facts a turn, the categories as an enum, and strings
    (``_SHORT``) and context variables (``_VARIABLES``) bounded, so that every answer the
    grammar allows fits ``answer_tokens``."""
    schema = copy.deepcopy(_EXTRACTION)
    schema["properties"]["facts"]["maxItems"] = _FACTS_PER_TURN * max(1, turns)
    defs = schema["$defs"]
    facts = defs["ExtractedFact"]["properties"]
    facts["category"] = {"enum": list(categories)}
    analysis = defs["SessionAnalysis"]["properties"]
    for properties in (facts, analysis):
        for name, longest in _SHORT.items():
            if name in properties:
                _bound(properties[name], longest)
    variables = analysis["context_variables"]
    variables["maxProperties"] = _VARIABLES
    _bound(variables["additionalProperties"], _SHORT["current_topic"])
    return schema


def _bound(schema: dict[str, Any], longest: int) -> None:
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "string":
            branch["maxLength"] = min(longest, branch.get("maxLength", longest))


def answer_tokens(schema: dict[str, Any], *, turns: int = 1) -> int:
    """The ``num_predict`` of a call answering ``schema``: an extraction of ``turns`` user
    messages gets room for ``_FACTS_PER_TURN`` facts each; other answers their title's cap."""
    title = schema.get("title")
    if title == "Extraction":
        wanted = _FRAME_TOKENS + FACT_TOKENS * _FACTS_PER_TURN * max(1, turns)
        return min(wanted, _MAX_EXTRACTION_TOKENS)
    return _TOKENS_BY_TITLE.get(str(title), _DEFAULT_TOKENS)


_EXTRACTION = answer_schema(Extraction)


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
