"""The shape and length of a model's answers, and reading an extraction fact by fact."""

from __future__ import annotations

import json

import msgspec
import pytest

from memory.model_answers import answer_schema, answer_tokens, extraction_schema, read_extraction
from schemas.llm import Extraction, NoteText


def fact(**changes: object) -> dict[str, object]:
    return {
        "content": "User lives in Lyon",
        "category": "identity",
        "confidence": 0.9,
        "subject": "user",
        "predicate": "lives_in",
        "value": "Lyon",
    } | changes


def test_the_answer_schema_has_no_root_ref_and_keeps_the_nested_definitions() -> None:
    schema = answer_schema(Extraction)
    assert "$ref" not in schema
    assert schema["title"] == "Extraction"
    assert schema["properties"]["facts"]["items"] == {"$ref": "#/$defs/ExtractedFact"}
    assert set(schema["$defs"]) == {"ExtractedFact", "MemoryUpdate", "SessionAnalysis"}


def test_a_schema_without_definitions_has_none_left() -> None:
    schema = answer_schema(NoteText)
    assert "$ref" not in schema
    assert "$defs" not in schema
    assert schema["required"] == ["content"]


def test_an_extraction_may_say_more_for_more_turns_up_to_a_cap() -> None:
    schema = answer_schema(Extraction)
    one, three, many = (answer_tokens(schema, turns=n) for n in (1, 3, 100))
    assert 300 < one < three < many == 2048


def test_a_note_is_capped_at_what_a_note_can_need() -> None:
    assert answer_tokens(answer_schema(NoteText)) == 512


def test_one_bad_fact_is_dropped_alone_and_a_confidence_out_of_range_is_clamped() -> None:
    answer = {
        "facts": [fact(confidence=10.2), fact(value=""), fact(confidence=-1), "not a fact"],
        "memory_update": {"should_store": True},
        "analysis": {"current_topic": "home"},
    }
    read = read_extraction(json.dumps(answer))
    assert [f.confidence for f in read.extraction.facts] == [1.0, 0.0]
    assert len(read.dropped) == 2
    assert read.extraction.memory_update.should_store is True
    assert read.extraction.analysis.current_topic == "home"


def test_a_broken_analysis_is_left_at_its_default_and_the_facts_kept() -> None:
    answer = {"facts": [fact()], "memory_update": "yes", "analysis": {"last_emotion": 3}}
    read = read_extraction(json.dumps(answer))
    assert len(read.extraction.facts) == 1
    assert read.extraction.analysis.last_emotion is None
    assert read.extraction.memory_update.should_store is False


@pytest.mark.parametrize(
    "answer", ['{"facts": [{"content": "Us', '{"facts": "none"}', "[]"], ids=["cut", "type", "list"]
)
def test_an_answer_without_a_facts_list_cannot_be_read(answer: str) -> None:
    with pytest.raises(msgspec.DecodeError):
        read_extraction(answer)


def test_an_extractions_schema_bounds_its_facts_strings_and_categories() -> None:
    schema = extraction_schema(turns=2, categories=["identity", "preference"])
    fact_schema = schema["$defs"]["ExtractedFact"]["properties"]
    assert schema["properties"]["facts"]["maxItems"] == 6
    assert fact_schema["category"] == {"enum": ["identity", "preference"]}
    assert fact_schema["content"]["maxLength"] == 200
    assert fact_schema["relation"]["anyOf"][0] == {"type": "string", "maxLength": 40}
    variables = schema["$defs"]["SessionAnalysis"]["properties"]["context_variables"]
    assert variables["maxProperties"] == 4
    assert answer_schema(Extraction)["properties"]["facts"].get("maxItems") is None  # a copy
