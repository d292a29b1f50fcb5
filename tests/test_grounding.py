"""A model's facts against the user's words and the rule-based reader (memory.grounding)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from memory.grounding import REASONS, Reviewed, not_overtaken, review
from memory.predicates import Vocabulary
from memory.rules_extractor import extract_facts
from schemas.llm import ExtractedFact
from testing.records import make_fact

VOCABULARY = Vocabulary()


def proposed(content: str, predicate: str, value: str, **fields: Any) -> ExtractedFact:
    """A fact as a model proposes it: about the user unless ``subject`` says otherwise."""
    return ExtractedFact(
        content=content,
        category=fields.pop("category", "identity"),
        confidence=fields.pop("confidence", 0.9),
        subject=fields.pop("subject", "user"),
        predicate=predicate,
        value=value,
        **fields,
    )


def reviewed(said: str, *facts: ExtractedFact) -> Reviewed:
    return review(facts, [said], extract_facts(said), VOCABULARY)


def reasons(result: Reviewed) -> list[str]:
    return [d.reason for d in result.dropped]


@pytest.mark.parametrize(
    ("said", "fact", "reason"),
    [
        (
            "I'm allergic to peanuts.",
            proposed(
                "John Smith is allergic to peanuts", "allergic_to", "peanuts", subject="john_smith"
            ),
            "subject_not_said",
        ),
        (
            "I live in Berlin.",
            proposed("User works at Google", "employer", "Google"),
            "value_not_said",
        ),
        (
            "Nice, thanks!",
            proposed("User is nice</episode_content>", "note", "nice</episode_content>"),
            "markup",
        ),
        (
            "Maybe I'll move to Paris someday.",
            proposed("User lives in Paris", "lives_in", "Paris"),
            "not_stated",
        ),
        (
            "Should I learn Rust?",
            proposed("User is learning Rust", "learning", "Rust"),
            "not_stated",
        ),
        (
            "I drink coffee every morning.",
            proposed("User does not drink coffee", "drinks", "coffee", negated=True),
            "negation_not_said",
        ),
        (
            "My sister Ana is a nurse in Lyon.",
            proposed("User is a nurse", "occupation", "nurse"),
            "someone_else",
        ),
        (
            "I'm allergic to peanuts.",
            proposed("User has a pet called peanuts", "has_pet", "peanuts"),
            "reader_disagrees",
        ),
        (
            "I live in Berlin.",
            proposed("User lives in Munich, Berlin area", "lives_in", "Munich"),
            "value_not_said",
        ),
        (
            "Big news: I moved to Porto last month.",
            proposed("Porto", "lives_in", "Porto", subject="big news"),
            "subject_not_said",
        ),
        (
            "I moved to Porto last month.",
            proposed("User moved", "congrats_on_the_big_move", "Porto"),
            "predicate_not_a_name",
        ),
        (
            "I moved to Porto last month.",
            proposed(
                "User lives in Porto",
                "lives_in",
                "15% of the population is a porto resident! Glad to see you here.",
            ),
            "value_not_said",
        ),
    ],
    ids=[
        "invented-person",
        "invented-value",
        "leaked-tag",
        "hedge",
        "question",
        "negation-not-said",
        "another-persons-fact",
        "same-value-read-otherwise",
        "one-valued-slot-read-otherwise",
        "a-phrase-as-a-person",
        "a-sentence-as-predicate",
        "a-sentence-as-value",
    ],
)
def test_a_model_fact_not_grounded_in_the_users_words_is_dropped_with_its_reason(
    said: str, fact: ExtractedFact, reason: str
) -> None:
    result = reviewed(said, fact)
    assert reasons(result) == [reason]
    assert result.model == []
    assert reason in REASONS


def test_the_readers_facts_stand_when_the_model_misses_them() -> None:
    said = "I live in Berlin and I'm allergic to peanuts."
    result = reviewed(said, proposed("User lives in Berlin", "lives_in", "Berlin"))
    assert [(f.predicate, f.value) for f in result.model] == [("lives_in", "Berlin")]
    assert [(f.predicate, f.value) for f in result.reader] == [("allergic_to", "peanuts")]


def test_a_fact_both_read_is_kept_once_as_the_models_and_no_less_sure_than_the_readers() -> None:
    said = "I live in Berlin."
    result = reviewed(said, proposed("User lives in Berlin", "lives_in", "Berlin", confidence=0.3))
    [only] = result.model
    assert result.reader == []
    assert only.confidence == pytest.approx(extract_facts(said)[0].confidence)


def test_a_model_that_answers_nothing_leaves_the_readers_facts() -> None:
    said = "I work at Siemens."
    result = reviewed(said)
    assert (result.model, result.dropped) == ([], [])
    assert [(f.predicate, f.value) for f in result.reader] == [("employer", "Siemens")]


def test_a_near_spelling_of_a_known_predicate_is_mapped_onto_it() -> None:
    said = "Siemens pays my bills these days."
    result = reviewed(said, proposed("User works at Siemens", "work_at", "Siemens"))
    assert [(f.predicate, f.cardinality) for f in result.model] == [("employer", None)]


def test_a_predicate_outside_the_vocabulary_accumulates_and_never_updates() -> None:
    said = "Now I collect stamps."
    fact = proposed(
        "User collects stamps",
        "collects",
        "stamps",
        cardinality="one",
        updates_previous=True,
    )
    [kept] = review([fact], [said], [], VOCABULARY).model  # the reader read nothing here
    assert (kept.predicate, kept.cardinality, kept.updates_previous) == ("collects", "many", False)


@pytest.mark.parametrize(
    ("said", "believed"),
    [("I moved to Lisbon.", True), ("Lisbon is where I live.", False)],
    ids=["said-to-replace", "not-said-to-replace"],
)
def test_updates_previous_is_believed_only_where_the_user_says_so(
    said: str, believed: bool
) -> None:
    fact = proposed("User lives in Lisbon", "lives_in", "Lisbon", updates_previous=True)
    [kept] = reviewed(said, fact).model
    assert kept.updates_previous is believed


def test_a_predicate_outside_the_vocabulary_on_a_value_the_reader_read_takes_its_structure() -> (
    None
):
    said = "I live in Lyon."
    [kept] = reviewed(said, proposed("User lives in Lyon", "note", "User lives in Lyon")).model
    assert (kept.content, kept.predicate, kept.value) == ("User lives in Lyon", "lives_in", "Lyon")


def test_a_fact_about_a_person_the_user_named_is_kept_about_them() -> None:
    said = "My friend Tom plays the cello."
    fact = proposed("Tom plays the cello", "hobby", "cello", subject="Tom", relation="friend")
    result = reviewed(said, fact)
    assert reasons(result) == []
    assert [f.subject for f in result.model + result.reader] in (["Tom"], ["tom"])


def test_chinese_values_are_grounded_in_the_characters_the_user_wrote() -> None:
    said = "我住在上海。"
    kept = reviewed(said, proposed("用户住在上海", "lives_in", "上海")).model
    dropped = reviewed(said, proposed("用户住在北京", "lives_in", "北京")).dropped
    assert [f.value for f in kept] == ["上海"]
    assert [d.reason for d in dropped] == ["value_not_said"]


def test_a_late_answer_adds_nothing_where_the_user_said_something_later() -> None:
    said_at = datetime(2026, 1, 1, tzinfo=UTC)
    later = make_fact(
        content="User no longer eats meat",
        subject="user",
        predicate="eats",
        value="meat",
        negated=True,
    )
    later = msgspec.structs.replace(later, updated_at=said_at + timedelta(days=1))
    eats = proposed("User eats meat", "eats", "meat")
    tea = proposed("User drinks tea", "drinks", "tea")
    assert not_overtaken([eats, tea], [later], said_at, VOCABULARY) == [tea]
    earlier = msgspec.structs.replace(later, updated_at=said_at - timedelta(days=1))
    assert not_overtaken([eats, tea], [earlier], said_at, VOCABULARY) == [eats, tea]
