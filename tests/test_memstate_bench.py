"""The memory-state benchmark's data and scoring (``bench.memstate``), without a server."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from bench.memstate import (
    DATA,
    GoldModel,
    Tally,
    default_data,
    extractor_cost,
    has,
    histogram_quantiles,
    load_gold,
    missing_gold,
    score,
    user_turns,
)
from memory.model_answers import answer_schema
from memory.prompts import Exchange, extraction_prompt, note_decision_prompt
from schemas.llm import ExtractedFact, Extraction, NoteDecision, NoteText, ProfileSummary
from schemas.predicates import DEFAULT_PREDICATES
from schemas.records import AppNote
from schemas.taxonomy import DEFAULT_CATEGORIES

GOLD = load_gold(DATA / "gold.json")
DIALOGUES = [d for path in default_data() for d in json.loads(path.read_text())]
GOLD_FACTS = [(text, fact) for text, facts in GOLD.items() for fact in facts]


def _cjk(text: str) -> bool:
    return any("\u3400" <= c <= "\u9fff" for c in text)


def test_the_default_data_includes_the_dev_dialogues() -> None:
    assert DATA / "dev.json" in default_data()
    assert len(DIALOGUES) >= 12


def test_every_gold_fact_decodes_strictly_as_an_extracted_fact() -> None:
    fields = set(ExtractedFact.__struct_fields__)
    categories = {c.name for c in DEFAULT_CATEGORIES}
    for text, fact in GOLD_FACTS:
        assert set(fact) <= fields, (text, set(fact) - fields)
        decoded = msgspec.json.decode(json.dumps(fact), type=ExtractedFact, strict=True)
        assert decoded.category in categories, (text, decoded.category)
        assert 0.9 <= decoded.confidence <= 0.95, text
        assert decoded.subject == "user" or decoded.relation, (
            text,
            "someone else needs a relation",
        )


def test_every_user_turn_of_the_dialogue_files_has_gold() -> None:
    assert missing_gold(DIALOGUES, GOLD) == []


def test_every_gold_entry_is_a_user_turn_of_a_dialogue_file() -> None:
    texts = {text for _, text in user_turns(DIALOGUES)}
    assert [text for text in GOLD if text not in texts] == []


def test_gold_predicates_are_written_by_their_vocabulary_names_not_by_aliases() -> None:
    names = {spec.name for spec in DEFAULT_PREDICATES}
    aliases = {alias: spec.name for spec in DEFAULT_PREDICATES for alias in spec.aliases}
    for text, fact in GOLD_FACTS:
        predicate = fact["predicate"]
        assert predicate == predicate.lower().replace(" ", "_").replace("-", "_"), text
        if predicate not in names:
            assert predicate not in aliases, f"{text}: {predicate} is {aliases[predicate]}"


def test_gold_of_a_chinese_turn_is_written_in_chinese() -> None:
    for text, fact in GOLD_FACTS:
        if _cjk(text):
            assert _cjk(fact["content"]), text
            # Latin letters only in what the user typed ("lily_chen88", "iPhone 13"), never
            # an English rendering of their Chinese.
            words = re.findall(r"[A-Za-z][\w.@-]*", fact["value"])
            assert all(w in text for w in words), text


def test_a_turn_that_is_only_a_question_gives_at_most_what_it_takes_for_granted() -> None:
    """ "what's a good film?" gives nothing; "is it normal to be burnt out after 5 years in
    marketing?" takes for granted that the user works in marketing, and a careful model
    says so. What is asked about is never a fact: no gold content is a question."""
    questions = [
        text
        for text in GOLD
        if text.rstrip().endswith(("?", "\uff1f")) and not re.search(r"[.!\u3002\uff01]\s*\S", text)
    ]
    assert questions
    assert sum(GOLD[text] == [] for text in questions) > 0.9 * len(questions)
    for text in questions:
        for fact in GOLD[text]:
            assert not fact["content"].rstrip().endswith(("?", "\uff1f")), text
            assert fact["subject"] == "user", text


def test_missing_gold_names_the_dialogue_session_and_turn() -> None:
    dialogue = {"id": "x1", "sessions": [[{"user": "I like tea."}], [{"user": "I fly kites."}]]}
    assert missing_gold([dialogue], {"I like tea.": []}) == ["x1 session 1 turn 0: 'I fly kites.'"]


@pytest.mark.parametrize(
    ("text", "group", "expected"),
    [
        ("User likes Green Tea", ["tea"], True),
        ("User likes green tea", ["green", "coffee"], False),
        ("User likes green tea", ["green", "coffee|tea"], True),
        ("用户住在北京", ["北京|Beijing"], True),
        ("User lives in Shanghai", ["上海|Beijing"], False),
    ],
    ids=["casefolded", "every-keyword", "either-spelling", "chinese", "neither-spelling"],
)
def test_a_keyword_group_needs_every_keyword_and_a_bar_means_either(
    text: str, group: list[str], expected: bool
) -> None:
    assert has(text, group) is expected


def test_a_hand_made_state_scores_every_check() -> None:
    dialogue: dict[str, Any] = {
        "id": "h1",
        "expect": {
            "active": [["Porto"], ["tea", "green"], ["jazz"]],
            "not_active": [["Lisbon"], ["opera"]],
            "history": [["Lisbon"], ["Rome"]],
            "max_active_matching": [[["Acme"], 1], [["tea"], 2]],
        },
        "probes": [
            {"query": "where do I live?", "expect": ["Porto"]},
            {"query": "what do I drink?", "expect": ["tea|coffee", "green"]},
        ],
    }
    active = [
        "User lives in Porto",
        "User lives in Lisbon",
        "User likes green tea",
        "User works at Acme",
        "User works at Acme Corp",
    ]
    history = ["User lived in Lisbon"]
    probes = ["## About user\n- User lives in Porto", "- User likes coffee"]
    assert score(dialogue, active, history, probes) == {
        "active": [True, True, False],
        "not_active": [False, True],
        "history": [True, False],
        "dupes": [False, True],
        "probes": [True, False],
    }


def test_a_dialogue_without_expectations_scores_nothing() -> None:
    result = score({"id": "h2", "expect": {}}, ["User likes tea"], [], [])
    assert result == {"active": [], "not_active": [], "history": [], "dupes": [], "probes": []}


def test_the_overall_score_is_the_mean_of_the_five_check_rates() -> None:
    tally = Tally()
    tally.add({"phenomena": ["update", "zh"]}, {"active": [True, False], "history": [True]})
    tally.add({}, {"not_active": [False], "dupes": []})
    assert tally.rates() == {
        "active": 0.5,
        "not_active": 0.0,
        "history": 1.0,
        "dupes": 1.0,  # nothing asked: counts as passed
        "probes": 1.0,
    }
    assert tally.overall() == pytest.approx(3.5 / 5)
    summary = tally.summary()
    assert summary["by_phenomenon"] == {
        "other": {"passed": 0, "total": 1, "rate": 0.0},
        "update": {"passed": 2, "total": 3, "rate": 2 / 3},
        "zh": {"passed": 2, "total": 3, "rate": 2 / 3},
    }
    assert summary["by_check"]["active"] == {"passed": 1, "total": 2, "rate": 0.5}


def _body(schema: type[msgspec.Struct], system: str, prompt: str) -> dict[str, Any]:
    return {
        "model": "llama3.2",
        "format": answer_schema(schema),
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
    }


def test_the_gold_model_answers_an_extraction_with_the_gold_of_each_turn_in_order() -> None:
    texts = ["I live in Lisbon these days.", "Do you like opera?", "我住在上海。"]
    system, prompt = extraction_prompt(
        [Exchange(i + 1, text, "OK.") for i, text in enumerate(texts)],
        categories=[c.name for c in DEFAULT_CATEGORIES],
    )
    model = GoldModel(GOLD)
    answer = model("/api/chat", _body(Extraction, system, prompt))
    extraction = msgspec.json.decode(json.dumps(answer), type=Extraction, strict=True)
    assert [f.value for f in extraction.facts] == ["Lisbon", "上海"]
    assert extraction.memory_update.should_store
    assert model.seen == set(texts)
    assert model.missing == []
    assert model.calls == {"Extraction": 1}


def test_the_gold_model_records_a_turn_it_has_no_gold_for() -> None:
    system, prompt = extraction_prompt(
        [Exchange(1, "I like oolong tea.", ""), Exchange(2, "I collect stamps.", "")],
        categories=["preference"],
    )
    model = GoldModel(GOLD)
    answer = model("/api/chat", _body(Extraction, system, prompt))
    assert [f["value"] for f in answer["facts"]] == ["oolong tea"]
    assert model.missing == ["I collect stamps."]


def test_the_gold_model_answers_notes_decisions_and_profiles_with_valid_structs() -> None:
    at = datetime(2025, 1, 1, tzinfo=UTC)
    notes = [
        AppNote(
            id=f"note_{i}", user_id="u", app_id="a", content=f"n{i}", created_at=at, updated_at=at
        )
        for i in range(3)
    ]
    system, prompt = note_decision_prompt(notes[:2], notes[2], keep=2)
    model = GoldModel(GOLD)
    decision = msgspec.convert(
        model("/api/chat", _body(NoteDecision, system, prompt)), NoteDecision
    )
    assert decision.target_id == "note_0"
    msgspec.convert(model("/api/chat", _body(NoteText, "s", "p")), NoteText, strict=True)
    msgspec.convert(model("/api/chat", _body(ProfileSummary, "s", "p")), ProfileSummary)
    assert model("/api/chat", {"model": "llama3.2", "messages": []}) == "OK."


def test_the_extractor_cost_times_every_turn_on_every_pass() -> None:
    cost = extractor_cost(["I live in Lisbon.", "我住在上海。"], repeat=3)
    assert (cost["turns"], cost["repeat"]) == (2, 3)
    us = cost["us_per_turn"]
    assert 0 < us["p50"] <= us["p95"] <= us["max"]


def test_histogram_quantiles_are_the_upper_bounds_of_the_buckets_they_fall_in() -> None:
    text = "\n".join(
        [
            "# TYPE mnemo_extraction_ms histogram",
            'mnemo_extraction_ms_bucket{le="100.0"} 2.0',
            'mnemo_extraction_ms_bucket{le="1000.0"} 9.0',
            'mnemo_extraction_ms_bucket{le="10000.0"} 10.0',
            'mnemo_extraction_ms_bucket{le="+Inf"} 10.0',
            "mnemo_extraction_ms_count 10.0",
        ]
    )
    assert histogram_quantiles(text, "mnemo_extraction_ms") == {
        "count": 10,
        "p50_at_most": 1000.0,
        "p95_at_most": 10000.0,
    }
    assert histogram_quantiles("", "mnemo_extraction_ms")["count"] == 0
