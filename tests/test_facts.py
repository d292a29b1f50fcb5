"""Fact rules of seeds 000, 002, 004: ids, categories, threshold, duplicates, conflicts, cap."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import msgspec
import pytest

from memory.facts import (
    SKIP_DUPLICATE,
    SKIP_LOW_CONFIDENCE,
    Candidate,
    Changes,
    FactPolicy,
    Stored,
    apply_candidates,
    candidate_from_extracted,
    new_fact_id,
    normalize_category,
)
from schemas.llm import ExtractedFact
from schemas.records import Fact
from schemas.settings import Settings
from schemas.taxonomy import DEFAULT_CATEGORIES, CategorySpec
from testing.records import DAY, NOW, make_fact
from tests.fact_rules import (
    E1,
    E2,
    E3,
    POLICY,
    apply,
    candidate,
    draws,
    only_added,
    stored,
    toward_e1,
)

# -- ids ---------------------------------------------------------------------------------


def test_new_fact_id_is_fact_and_eight_lowercase_hex_digits() -> None:
    made = {new_fact_id(set()) for _ in range(50)}
    assert all(re.fullmatch(r"fact_[0-9a-f]{8}", fact_id) for fact_id in made)
    assert len(made) == 50


def test_new_fact_id_is_drawn_again_while_it_collides_with_a_taken_id() -> None:
    taken = {"fact_0000000a", "fact_0000000b"}
    assert new_fact_id(taken, draws("0000000a", "0000000b", "0000000a", "0000000c")) == (
        "fact_0000000c"
    )


def test_new_fact_id_gives_up_when_rand_only_ever_collides() -> None:
    with pytest.raises(RuntimeError, match="no free fact id"):
        new_fact_id({"fact_00000000"}, lambda: "00000000")


def test_ids_added_in_one_batch_are_unique_and_skip_existing_ones() -> None:
    existing = [stored(make_fact("fact_00000001"))]
    changes = apply_candidates(
        existing,
        [candidate("Likes jazz", vector=E2), candidate("Lives by the sea", vector=E3)],
        policy=POLICY,
        now=NOW,
        rand=draws("00000001", "00000002", "00000002", "00000003"),
    )
    assert [s.fact.id for s in changes.added] == ["fact_00000002", "fact_00000003"]


# -- categories --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("preference", "preference", id="exact"),
        pytest.param("  Preference ", "preference", id="case-and-spaces"),
        pytest.param("PROJECT", "project", id="upper"),
        pytest.param("fact", "knowledge", id="seed-001-fact-alias"),
        pytest.param("Pattern", "behavior", id="seed-001-pattern-alias"),
        pytest.param("correction", "correction", id="seed-000-correction"),
        pytest.param("hobby", None, id="unknown"),
        pytest.param("", None, id="empty"),
    ],
)
def test_category_is_normalized_against_the_taxonomy(name: str, expected: str | None) -> None:
    assert normalize_category(name, DEFAULT_CATEGORIES) == expected


def test_alias_target_missing_from_a_configured_taxonomy_is_rejected() -> None:
    only_project = [CategorySpec(name="project", heading="Work:", priority=1)]
    assert normalize_category("fact", only_project) is None


def test_configured_category_named_like_an_alias_keeps_its_own_name() -> None:
    custom = [CategorySpec(name="fact", heading="Facts:", priority=1)]
    assert normalize_category("Fact", custom) == "fact"


# -- candidates and policy ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param(
            {"permanence": "forever"},
            "valid levels: permanent, stable, standard, volatile, ephemeral",
            id="unknown-permanence",
        ),
        pytest.param({"confidence": 1.2}, "within 0..1", id="confidence-above-one"),
        pytest.param({"confidence": -0.1}, "within 0..1", id="negative-confidence"),
        pytest.param({"content": "  \n "}, "blank", id="blank-content"),
    ],
)
def test_invalid_candidate_is_rejected_with_value_error(
    fields: dict[str, Any], message: str
) -> None:
    fields = dict(fields)  # the parameter's dict outlives one run (mutmut reruns in process)
    content = fields.pop("content", "Likes tea")
    with pytest.raises(ValueError, match=message):
        candidate(content, **fields)


def test_policy_is_read_from_settings() -> None:
    categories = [CategorySpec(name="project", heading="Work:", priority=1)]
    settings = Settings(
        confidence_threshold=0.6,
        max_facts=120,
        max_pinned=3,
        near_duplicate_similarity=0.9,
        duplicate_policy="unchanged",
        reinforce_step=0.1,
        categories=categories,
    )
    assert FactPolicy.from_settings(settings) == FactPolicy(
        confidence_threshold=0.6,
        max_facts=120,
        max_pinned=3,
        near_duplicate_similarity=0.9,
        duplicate_policy="unchanged",
        reinforce_step=0.1,
        categories=tuple(categories),
    )


def test_default_settings_give_the_design_defaults() -> None:
    policy = FactPolicy.from_settings(Settings())
    assert (policy.confidence_threshold, policy.max_facts, policy.max_pinned) == (0.5, 500, 10)
    assert (policy.duplicate_policy, policy.reinforce_step) == ("reinforce", 0.15)


def test_unknown_duplicate_policy_is_rejected() -> None:
    with pytest.raises(ValueError, match="valid: reinforce, unchanged"):
        FactPolicy(duplicate_policy="merge")


def test_extracted_fact_becomes_a_candidate_with_all_its_fields() -> None:
    extracted = ExtractedFact(
        content="User is based in London",
        category="Identity",
        confidence=0.9,
        updates_previous=True,
        subject="user",
        predicate="based_in",
        key="city",
        value="London",
        permanence="stable",
    )
    made = candidate_from_extracted(
        extracted, category="identity", vector=E1, user_id="u1", scope="app1", session_id="s9"
    )
    assert made == Candidate(
        user_id="u1",
        content="User is based in London",
        category="identity",
        confidence=0.9,
        vector=E1,
        updates_previous=True,
        subject="user",
        predicate="based_in",
        key="city",
        value="London",
        permanence="stable",
        scope="app1",
        session_id="s9",
    )


def test_extracted_fact_with_unknown_permanence_is_rejected() -> None:
    extracted = ExtractedFact(
        content="x",
        category="goal",
        confidence=0.9,
        subject="user",
        predicate="goal",
        value="x",
        permanence="eternal",
    )
    with pytest.raises(ValueError, match="unknown permanence 'eternal'"):
        candidate_from_extracted(extracted, category="goal", vector=E1, user_id="u1")


# -- confidence threshold ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("confidence", "kept"),
    [
        pytest.param(0.49, False, id="0.49-skipped"),
        pytest.param(0.5, True, id="0.5-kept"),
        pytest.param(0.51, True, id="0.51-kept"),
    ],
)
def test_candidate_below_the_threshold_is_skipped(confidence: float, kept: bool) -> None:
    changes = apply([], candidate("Maybe tries Svelte", confidence=confidence))
    if kept:
        assert only_added(changes).confidence == confidence
        assert changes.skipped == []
    else:
        assert changes == Changes(skipped=[("Maybe tries Svelte", SKIP_LOW_CONFIDENCE)])


def test_low_confidence_duplicate_does_not_reinforce_the_existing_fact() -> None:
    existing = stored(make_fact(content="Likes tea"))
    changes = apply([existing], candidate("likes tea", confidence=0.3))
    assert changes == Changes(skipped=[("likes tea", SKIP_LOW_CONFIDENCE)])


def test_configured_threshold_is_used() -> None:
    policy = FactPolicy(confidence_threshold=0.8)
    assert apply([], candidate(confidence=0.79), policy).skipped == [
        ("Works on a compiler", SKIP_LOW_CONFIDENCE)
    ]


# -- duplicates --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stored_text", "new_text"),
    [
        pytest.param("I like Tea", "i like tea", id="casing"),
        pytest.param("I like Tea", "  I   LIKE\ttea ", id="casing-and-whitespace"),
        pytest.param("Straße ist breit", "STRASSE IST BREIT", id="casefold-not-lower"),
    ],
)
def test_casefolded_duplicate_reinforces_the_existing_fact(stored_text: str, new_text: str) -> None:
    existing = stored(make_fact(content=stored_text), E1)
    changes = apply([existing], candidate(new_text, vector=E2))  # orthogonal: text decides
    assert changes.added == []
    [updated] = changes.updated
    assert (updated.id, updated.content, updated.mention_count) == ("fact_00000001", stored_text, 2)


@pytest.mark.parametrize(
    ("similarity", "duplicate"),
    [
        pytest.param(0.99, True, id="0.99"),
        pytest.param(0.92, True, id="0.92-at-threshold"),
        pytest.param(0.91, False, id="0.91-below"),
    ],
)
def test_near_duplicate_is_found_by_vector_similarity(similarity: float, duplicate: bool) -> None:
    existing = stored(make_fact(content="Drinks green tea daily"), E1)
    changes = apply([existing], candidate("Has green tea every day", vector=toward_e1(similarity)))
    assert len(changes.updated) == (1 if duplicate else 0)
    assert len(changes.added) == (0 if duplicate else 1)


@pytest.mark.parametrize(
    ("stored_vector", "new_vector"),
    [
        pytest.param((1.0, 0.0), E1, id="other-embedder-length"),
        pytest.param(E1, (), id="no-vector"),
    ],
)
def test_vectors_of_different_lengths_are_never_near_duplicates(
    stored_vector: tuple[float, ...], new_vector: tuple[float, ...]
) -> None:
    existing = stored(make_fact(content="Drinks green tea daily"), stored_vector)
    changes = apply([existing], candidate("Has green tea every day", vector=new_vector))
    assert (len(changes.added), changes.updated) == (1, [])


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(0.7, 0.85, id="0.7-to-0.85"),
        pytest.param(0.5, 0.65, id="0.5-to-0.65"),
        pytest.param(0.9, 1.0, id="0.9-to-1.0"),
        pytest.param(0.95, 1.0, id="0.95-capped-at-1.0"),
        pytest.param(1.0, 1.0, id="1.0-stays"),
    ],
)
def test_reinforcement_adds_0_15_confidence_capped_at_one(before: float, after: float) -> None:
    existing = stored(make_fact(content="Likes tea", confidence=before))
    [updated] = apply([existing], candidate("likes tea")).updated
    assert updated.confidence == after


def test_reinforcement_counts_the_mention_and_refreshes_seen_and_confirmed() -> None:
    old = make_fact(content="Likes tea", mention_count=3, status="fading")
    [updated] = apply([stored(old)], candidate("Likes tea", session_id="s7")).updated
    assert updated == msgspec.structs.replace(
        old,
        confidence=0.85,
        mention_count=4,
        last_seen=NOW,
        last_confirmed_at=NOW,
        updated_at=NOW,
        session_id="s7",
        status=None,
    )


def test_reinforcement_without_a_session_keeps_the_last_one() -> None:
    old = make_fact(content="Likes tea", session_id="s1")
    [updated] = apply([stored(old)], candidate("Likes tea", session_id=None)).updated
    assert updated.session_id == "s1"


def test_configured_reinforce_step_is_used() -> None:
    old = make_fact(content="Likes tea", confidence=0.6)
    policy = FactPolicy(reinforce_step=0.25)
    [updated] = apply([stored(old)], candidate("Likes tea"), policy).updated
    assert updated.confidence == 0.85


def test_unchanged_policy_skips_the_duplicate_and_leaves_the_fact_alone() -> None:
    policy = FactPolicy(duplicate_policy="unchanged")
    existing = stored(make_fact(content="I like Tea"))
    changes = apply([existing], candidate("i like tea"), policy)
    assert changes == Changes(skipped=[("i like tea", SKIP_DUPLICATE)])


@pytest.mark.parametrize(
    ("stored_confidence", "new_confidence", "expected"),
    [
        pytest.param(0.6, 0.8, 0.8, id="llm-more-confident"),
        pytest.param(0.6, 0.55, 0.6, id="rules-more-confident"),
    ],
)
def test_rules_fact_seen_again_by_the_llm_is_upgraded_not_counted(
    stored_confidence: float, new_confidence: float, expected: float
) -> None:
    old = make_fact(content="Likes tea", extractor="rules", confidence=stored_confidence)
    [updated] = apply(
        [stored(old)], candidate("Likes tea", extractor="llm", confidence=new_confidence)
    ).updated
    assert updated == msgspec.structs.replace(
        old, extractor="llm", confidence=expected, updated_at=NOW
    )


@pytest.mark.parametrize(
    ("stored_by", "seen_by", "confidence"),
    [
        pytest.param("llm", "llm", 0.85, id="llm-twice"),
        pytest.param("llm", "rules", 0.85, id="llm-then-rules"),
        pytest.param("rules", "rules", 0.85, id="rules-twice"),
        # Seed 004: a fact added by hand is boosted faster on repetition (+0.25, not +0.15).
        pytest.param("manual", "llm", 0.95, id="manual-then-llm"),
        pytest.param("llm", "manual", 0.95, id="llm-then-manual"),
        pytest.param("manual", "manual", 0.95, id="manual-twice"),
    ],
)
def test_other_extractor_pairs_reinforce(stored_by: str, seen_by: str, confidence: float) -> None:
    old = make_fact(content="Likes tea", extractor=stored_by)
    [updated] = apply([stored(old)], candidate("Likes tea", extractor=seen_by)).updated
    assert (updated.extractor, updated.mention_count) == (stored_by, 2)
    assert updated.confidence == pytest.approx(confidence)


def test_duplicate_flagged_updates_previous_is_still_only_a_duplicate() -> None:
    old = make_fact(content="Based in Copenhagen", category="identity")
    changes = apply(
        [stored(old, E1)],
        candidate("based in copenhagen", category="identity", updates_previous=True, vector=E1),
    )
    assert (changes.added, changes.superseded) == ([], [])
    assert changes.updated[0].mention_count == 2


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"user_id": "u2"}, id="other-user"),
        pytest.param({"scope": "app1"}, id="other-scope"),
        pytest.param({"validity": "superseded"}, id="superseded"),
        pytest.param({"validity": "expired"}, id="expired"),
        pytest.param({"validity": "retracted"}, id="retracted"),
    ],
)
def test_only_an_active_fact_of_the_same_user_and_scope_is_a_duplicate(
    fields: dict[str, Any],
) -> None:
    existing = stored(make_fact(content="Likes tea", **fields), E2)
    changes = apply([existing], candidate("Likes tea", vector=E2))
    assert changes.updated == []
    assert only_added(changes).content == "Likes tea"


def test_pinned_duplicate_pins_the_existing_fact_when_there_is_room() -> None:
    old = make_fact(content="Likes tea")
    [updated] = apply([stored(old)], candidate("Likes tea", pinned=True)).updated
    assert updated.pinned


def test_pinned_duplicate_at_the_pin_cap_leaves_the_fact_unpinned() -> None:
    others = [
        stored(make_fact(f"fact_0000000{i}", content=f"pin {i}", pinned=True), E3) for i in (2, 3)
    ]
    old = stored(make_fact(content="Likes tea"))
    policy = FactPolicy(max_pinned=2)
    [updated] = apply([old, *others], candidate("Likes tea", pinned=True), policy).updated
    assert not updated.pinned
    assert updated.mention_count == 2


def test_two_identical_candidates_in_one_batch_add_one_fact_mentioned_twice() -> None:
    changes = apply_candidates(
        [],
        [candidate("Likes tea", confidence=0.7), candidate("LIKES TEA", confidence=0.7)],
        policy=POLICY,
        now=NOW,
        rand=draws("00000010"),
    )
    assert (changes.updated, changes.skipped) == ([], [])
    fact = only_added(changes)
    assert (fact.id, fact.content, fact.mention_count, fact.confidence) == (
        "fact_00000010",
        "Likes tea",
        2,
        0.85,
    )


# -- conflicts ---------------------------------------------------------------------------


def test_updates_previous_supersedes_the_most_similar_fact_of_its_category() -> None:
    copenhagen = make_fact("fact_0000000a", content="Based in Copenhagen", category="identity")
    aarhus = make_fact("fact_0000000b", content="Grew up in Aarhus", category="identity")
    project = make_fact("fact_0000000c", content="Builds a city map", category="project")
    existing = [
        stored(copenhagen, toward_e1(0.8)),
        stored(aarhus, (0.6, 0.0, 0.8)),
        stored(project, toward_e1(0.9)),
    ]
    changes = apply(
        existing,
        candidate("Based in London", category="identity", updates_previous=True, vector=E1),
    )
    assert [f.id for f in changes.superseded] == ["fact_0000000a"]


def test_supersession_links_both_ways_resets_confidence_and_deletes_nothing() -> None:
    old = make_fact(
        "fact_0000000a", content="Based in Copenhagen", category="identity", confidence=0.95
    )
    old = msgspec.structs.replace(old, mention_count=4)
    changes = apply(
        [stored(old, toward_e1(0.7))],
        candidate(
            "Based in London",
            category="identity",
            updates_previous=True,
            confidence=0.75,
            vector=E1,
        ),
        rand=draws("0000000b"),
    )
    new = only_added(changes)
    assert changes.superseded == [
        msgspec.structs.replace(
            old, validity="superseded", superseded_by="fact_0000000b", updated_at=NOW
        )
    ]
    assert (new.id, new.supersedes_id, new.confidence, new.mention_count) == (
        "fact_0000000b",
        "fact_0000000a",
        0.75,
        1,
    )
    assert (changes.removed, changes.updated) == ([], [])


@pytest.mark.parametrize(
    ("similarity", "superseded"),
    [
        pytest.param(0.5, True, id="0.5-supersedes"),
        pytest.param(0.49, False, id="0.49-only-adds"),
    ],
)
def test_updates_previous_needs_similarity_of_at_least_one_half(
    similarity: float, superseded: bool
) -> None:
    old = make_fact(content="Based in Copenhagen", category="identity")
    changes = apply(
        [stored(old, toward_e1(similarity))],
        candidate("Based in London", category="identity", updates_previous=True, vector=E1),
    )
    assert len(changes.superseded) == (1 if superseded else 0)
    assert only_added(changes).supersedes_id == ("fact_00000001" if superseded else None)


def test_updates_previous_ignores_facts_of_other_categories() -> None:
    old = make_fact(content="Based in Copenhagen", category="project")
    changes = apply(
        [stored(old, toward_e1(0.9))],
        candidate("Based in London", category="identity", updates_previous=True, vector=E1),
    )
    assert changes.superseded == []


@pytest.mark.parametrize(
    ("stored_key", "new_key", "superseded"),
    [
        pytest.param(("user", "lives_in"), ("user", "lives_in"), True, id="same"),
        pytest.param(("User", " Lives_In "), ("user", "lives_in"), True, id="casefolded"),
        pytest.param(("user", "lives_in"), ("user", "works_at"), False, id="other-predicate"),
        pytest.param(("", ""), ("", ""), False, id="empty"),
        pytest.param((None, None), (None, None), False, id="none"),
    ],
)
def test_same_subject_and_predicate_supersedes_in_any_category(
    stored_key: tuple[str | None, str | None],
    new_key: tuple[str | None, str | None],
    superseded: bool,
) -> None:
    old = make_fact(
        content="Lives in Copenhagen",
        category="identity",
        subject=stored_key[0],
        predicate=stored_key[1],
    )
    changes = apply(
        [stored(old, E1)],
        candidate(
            "Lives in London",
            category="knowledge",
            subject=new_key[0],
            predicate=new_key[1],
            vector=E2,
        ),
    )
    new = only_added(changes)
    if superseded:
        # seed 002: the old fact is superseded and both rows link to each other.
        [old_now] = changes.superseded
        assert (old_now.id, old_now.validity, old_now.superseded_by) == (
            old.id,
            "superseded",
            new.id,
        )
        assert new.supersedes_id == old.id
    else:
        assert (changes.superseded, new.supersedes_id) == ([], None)


def test_every_active_fact_with_the_statement_key_is_superseded_newest_linked() -> None:
    older = make_fact("fact_0000000a", content="Lives in Oslo", subject="u", predicate="lives_in")
    newer = make_fact(
        "fact_0000000b",
        content="Lives in Bergen",
        subject="u",
        predicate="lives_in",
        updated_at=NOW - DAY,
    )
    changes = apply(
        [stored(older, E1), stored(newer, E3)],
        candidate("Lives in London", subject="u", predicate="lives_in", vector=E2),
        rand=draws("0000000c"),
    )
    assert [f.id for f in changes.superseded] == ["fact_0000000b", "fact_0000000a"]
    assert {f.superseded_by for f in changes.superseded} == {"fact_0000000c"}
    assert only_added(changes).supersedes_id == "fact_0000000b"


@pytest.mark.parametrize(
    ("similarity", "superseded"),
    [
        pytest.param(0.6, True, id="0.6-supersedes"),
        pytest.param(0.59, False, id="0.59-only-adds"),
    ],
)
def test_correction_supersedes_a_similar_fact_of_any_category(
    similarity: float, superseded: bool
) -> None:
    old = make_fact(content="Prefers tabs", category="preference")
    changes = apply(
        [stored(old, toward_e1(similarity))],
        candidate("Actually prefers spaces", category="correction", vector=E1),
    )
    assert len(changes.superseded) == (1 if superseded else 0)
    assert only_added(changes).category == "correction"


def test_conflicts_only_look_at_the_same_user_and_scope() -> None:
    other_user = make_fact("fact_0000000a", user_id="u2", subject="u", predicate="lives_in")
    other_scope = make_fact("fact_0000000b", scope="app1", subject="u", predicate="lives_in")
    changes = apply(
        [stored(other_user, E1), stored(other_scope, E3)],
        candidate("Lives in London", subject="u", predicate="lives_in", vector=E2),
    )
    assert changes.superseded == []


def test_moving_back_is_not_a_duplicate_of_the_superseded_fact() -> None:
    london = make_fact("fact_0000000a", content="Based in London", category="identity")
    copenhagen = make_fact(
        "fact_0000000b",
        content="Based in Copenhagen",
        category="identity",
        validity="superseded",
        superseded_by="fact_0000000a",
    )
    changes = apply(
        [stored(london, toward_e1(0.8)), stored(copenhagen, E1)],
        candidate("Based in Copenhagen", category="identity", updates_previous=True, vector=E1),
        rand=draws("0000000c"),
    )
    assert [f.id for f in changes.superseded] == ["fact_0000000a"]
    assert only_added(changes).supersedes_id == "fact_0000000a"


# -- adding ------------------------------------------------------------------------------


def test_new_fact_gets_an_id_timestamps_and_every_candidate_field() -> None:
    made = candidate(
        "  Works on a compiler  ",
        category="project",
        confidence=0.9,
        subject="user",
        predicate="works_on",
        key="project",
        value="compiler",
        permanence="volatile",
        source="user_stated",
        extractor="manual",
        scope="app1",
        session_id="s3",
        vector=E3,
    )
    changes = apply([], made, rand=draws("0123abcd"))
    assert changes.added == [
        Stored(
            Fact(
                id="fact_0123abcd",
                user_id="u1",
                content="Works on a compiler",
                category="project",
                confidence=0.9,
                created_at=NOW,
                updated_at=NOW,
                last_seen=NOW,
                last_confirmed_at=NOW,
                scope="app1",
                subject="user",
                predicate="works_on",
                key="project",
                value="compiler",
                source="user_stated",
                extractor="manual",
                permanence="volatile",
                decay_rate=0.03,
                session_id="s3",
            ),
            E3,
        )
    ]


@pytest.mark.parametrize(
    ("permanence", "stored_as", "rate"),
    [
        pytest.param(None, "standard", 0.008, id="default-standard"),
        pytest.param("permanent", "permanent", 0.0, id="permanent"),
        pytest.param("stable", "stable", 0.002, id="stable"),
        pytest.param("standard", "standard", 0.008, id="standard"),
        pytest.param("volatile", "volatile", 0.03, id="volatile"),
        pytest.param("ephemeral", "ephemeral", 0.1, id="ephemeral"),
    ],
)
def test_new_fact_decay_rate_follows_its_permanence(
    permanence: str | None, stored_as: str, rate: float
) -> None:
    fact = only_added(apply([], candidate(permanence=permanence)))
    assert (fact.permanence, fact.decay_rate) == (stored_as, rate)


@pytest.mark.parametrize(
    ("already_pinned", "pinned"),
    [
        pytest.param(0, True, id="none-pinned"),
        pytest.param(1, True, id="one-below-cap"),
        pytest.param(2, False, id="at-cap"),
    ],
)
def test_new_fact_is_pinned_only_below_the_pin_cap(already_pinned: int, pinned: bool) -> None:
    existing = [
        stored(make_fact(f"fact_0000000{i}", content=f"pin {i}", pinned=True), E3)
        for i in range(already_pinned)
    ]
    changes = apply(existing, candidate(pinned=True), FactPolicy(max_pinned=2))
    assert only_added(changes).pinned is pinned


def test_pins_of_other_users_and_inactive_facts_do_not_count() -> None:
    existing = [
        stored(make_fact("fact_00000001", content="a", pinned=True, user_id="u2"), E3),
        stored(make_fact("fact_00000002", content="b", pinned=True, validity="expired"), E3),
    ]
    changes = apply(existing, candidate(pinned=True), FactPolicy(max_pinned=1))
    assert only_added(changes).pinned


# -- the cap -----------------------------------------------------------------------------


def _aged(fact_id: str, category: str, days: float, confidence: float, **fields: Any) -> Stored:
    seen = NOW - timedelta(days=days)
    fact = make_fact(
        fact_id,
        content=f"fact {fact_id}",
        category=category,
        confidence=confidence,
        created_at=seen,
        last_seen=seen,
        **fields,
    )
    return stored(fact, E3)


# Scores (age_days * weight / confidence): a 10*0.8/0.8 = 10, b 100*0.3/0.5 = 60, c 40*0.5/0.5 = 40
CAPPED = [
    _aged("fact_0000000a", "project", 10, 0.8),
    _aged("fact_0000000b", "preference", 100, 0.5),
    _aged("fact_0000000c", "identity", 40, 0.5),
]


def test_cap_evicts_the_fact_with_the_highest_eviction_score() -> None:
    changes = apply(CAPPED, candidate(), FactPolicy(max_facts=3))
    assert [f.id for f in changes.removed] == ["fact_0000000b"]
    assert len(changes.added) == 1


def test_cap_never_evicts_a_pinned_fact() -> None:
    existing = [*CAPPED[:1], _aged("fact_0000000b", "preference", 100, 0.5, pinned=True), CAPPED[2]]
    changes = apply(existing, candidate(), FactPolicy(max_facts=3))
    assert [f.id for f in changes.removed] == ["fact_0000000c"]


def test_cap_below_the_limit_evicts_nothing() -> None:
    changes = apply(CAPPED, candidate(), FactPolicy(max_facts=4))
    assert changes.removed == []


def test_lowered_cap_evicts_until_the_count_is_back_at_the_limit() -> None:
    changes = apply(CAPPED, candidate(), FactPolicy(max_facts=2))
    assert [f.id for f in changes.removed] == ["fact_0000000b", "fact_0000000c"]


def test_low_confidence_raises_the_eviction_score() -> None:
    # a: 10*0.8/0.1 = 80 beats b's 60; confidence 0 is floored at 0.01.
    existing = [_aged("fact_0000000a", "project", 10, 0.1), *CAPPED[1:]]
    changes = apply(existing, candidate(), FactPolicy(max_facts=3))
    assert [f.id for f in changes.removed] == ["fact_0000000a"]


def test_equal_scores_evict_the_older_fact_then_the_lower_id() -> None:
    seen = NOW - 10 * DAY
    facts = [
        make_fact("fact_0000000c", content="c", created_at=NOW - 30 * DAY, last_seen=seen),
        make_fact("fact_0000000b", content="b", created_at=NOW - 40 * DAY, last_seen=seen),
        make_fact("fact_0000000a", content="a", created_at=NOW - 30 * DAY, last_seen=seen),
    ]
    changes = apply([stored(f, E3) for f in facts], candidate(), FactPolicy(max_facts=1))
    assert [f.id for f in changes.removed] == ["fact_0000000b", "fact_0000000a", "fact_0000000c"]


def test_just_added_fact_is_kept_while_another_fact_can_go() -> None:
    # Both score 0 (seen just now); the new fact still stays.
    existing = [_aged("fact_0000000a", "project", 0, 0.9)]
    changes = apply(existing, candidate(), FactPolicy(max_facts=1))
    assert [f.id for f in changes.removed] == ["fact_0000000a"]
    assert len(changes.added) == 1


def test_just_added_fact_goes_when_every_other_fact_is_pinned() -> None:
    existing = [_aged("fact_0000000a", "project", 50, 0.5, pinned=True)]
    changes = apply(existing, candidate(), FactPolicy(max_facts=1))
    assert changes == Changes()


def test_cap_counts_only_the_users_active_facts() -> None:
    existing = [
        _aged("fact_0000000a", "project", 10, 0.8),
        _aged("fact_0000000b", "project", 10, 0.8, user_id="u2"),
        _aged("fact_0000000c", "project", 10, 0.8, validity="superseded"),
        _aged("fact_0000000d", "project", 10, 0.8, scope="app1"),
    ]
    changes = apply(existing, candidate(), FactPolicy(max_facts=3))
    assert changes.removed == []
    changes = apply(existing, candidate(), FactPolicy(max_facts=2))
    assert [f.id for f in changes.removed] == ["fact_0000000a"]


def test_category_outside_the_taxonomy_is_weighted_like_the_default_half() -> None:
    # z: 20*0.5/0.5 = 20 (default weight) beats a's 10.
    existing = [CAPPED[0], _aged("fact_0000000z", "retired-category", 20, 0.5)]
    changes = apply(existing, candidate(), FactPolicy(max_facts=2))
    assert [f.id for f in changes.removed] == ["fact_0000000z"]


def test_configured_eviction_weights_are_used() -> None:
    heavy = CategorySpec(name="preference", heading="P:", priority=1, eviction_weight=5.0)
    light = CategorySpec(name="project", heading="W:", priority=2, eviction_weight=0.1)
    existing = [
        _aged("fact_0000000a", "project", 100, 0.5),
        _aged("fact_0000000b", "preference", 10, 0.5),
    ]
    changes = apply(existing, candidate(), FactPolicy(max_facts=2, categories=(heavy, light)))
    assert [f.id for f in changes.removed] == ["fact_0000000b"]


# -- batches -----------------------------------------------------------------------------


def test_each_fact_appears_once_in_its_final_state_across_a_batch() -> None:
    old = make_fact("fact_0000000a", content="Based in Copenhagen", category="identity")
    changes = apply_candidates(
        [stored(old, toward_e1(0.8))],
        [
            candidate("based in copenhagen", category="identity", vector=toward_e1(0.8)),
            candidate("Based in London", category="identity", updates_previous=True, vector=E1),
            candidate(
                "Based in Paris", category="identity", updates_previous=True, vector=(0.8, 0, 0.6)
            ),
        ],
        policy=POLICY,
        now=NOW,
        rand=draws("0000000b", "0000000c"),
    )
    assert changes.updated == []
    [superseded] = changes.superseded
    assert (superseded.id, superseded.mention_count, superseded.superseded_by) == (
        "fact_0000000a",
        2,
        "fact_0000000b",
    )
    london, paris = (s.fact for s in changes.added)
    assert (london.validity, london.superseded_by, london.supersedes_id) == (
        "superseded",
        "fact_0000000c",
        "fact_0000000a",
    )
    assert (paris.validity, paris.supersedes_id) == ("active", "fact_0000000b")


def test_updated_then_evicted_fact_is_only_removed() -> None:
    existing = [CAPPED[1]]
    changes = apply_candidates(
        existing,
        [candidate("fact fact_0000000b", vector=E3), candidate("New one", vector=E2)],
        policy=FactPolicy(max_facts=1),
        now=NOW,
        rand=draws("0000000d"),
    )
    assert changes.updated == []
    assert [f.id for f in changes.removed] == ["fact_0000000b"]
    assert changes.removed[0].mention_count == 2


def test_fact_added_then_evicted_in_one_batch_is_never_reported() -> None:
    early = candidate("First", vector=E2)
    later = candidate("Second", vector=E3)
    changes = apply_candidates(
        [],
        [early, later],
        policy=FactPolicy(max_facts=1),
        now=NOW,
        rand=draws("00000001", "00000002"),
    )
    assert [s.fact.id for s in changes.added] == ["fact_00000002"]
    assert changes.removed == []


def test_batch_reports_skips_in_order_with_reasons() -> None:
    existing = [stored(make_fact(content="Likes tea"))]
    changes = apply_candidates(
        existing,
        [
            candidate("Maybe", confidence=0.2),
            candidate("likes tea"),
            candidate("Perhaps", confidence=0.1),
        ],
        policy=FactPolicy(duplicate_policy="unchanged"),
        now=NOW,
    )
    assert changes.skipped == [
        ("Maybe", SKIP_LOW_CONFIDENCE),
        ("likes tea", SKIP_DUPLICATE),
        ("Perhaps", SKIP_LOW_CONFIDENCE),
    ]


# -- what a new fact row carries, and imports -------------------------------------------


def test_a_category_name_of_several_words_is_matched_across_spacing_and_case() -> None:
    side = [CategorySpec(name="side project", heading="Side projects:", priority=1)]
    assert normalize_category("  Side   Project ", side) == "side project"


@pytest.mark.parametrize(
    ("at", "created"),
    [(NOW - 3 * DAY, NOW - 3 * DAY), (NOW + 3 * DAY, NOW), (None, NOW)],
    ids=["past-kept", "future-clipped-to-now", "unknown-is-now"],
)
def test_a_fact_is_created_when_it_was_said_never_in_the_future(
    at: datetime | None, created: datetime
) -> None:
    added = only_added(apply([], candidate(at=at)))
    assert (added.created_at, added.updated_at) == (created, NOW)


@pytest.mark.parametrize(
    ("subject", "stored_subject"),
    [("I", "user"), ("User", "user"), ("Ana", "Ana"), (None, None)],
    ids=["pronoun", "user", "other-person", "none"],
)
def test_every_way_of_naming_the_user_is_stored_as_user(
    subject: str | None, stored_subject: str | None
) -> None:
    assert only_added(apply([], candidate(subject=subject))).subject == stored_subject


def test_a_new_fact_keeps_the_relation_meta_and_source_of_its_candidate() -> None:
    added = only_added(
        apply(
            [],
            candidate(
                "Sister Ana lives in Rome",
                subject="Ana",
                relation="sister",
                meta={"k": "v"},
                source_id="msg_1",
            ),
        )
    )
    assert (added.relation, added.meta, added.source_id) == ("sister", {"k": "v"}, "msg_1")


def test_an_imported_fact_is_kept_below_the_threshold_and_never_reinforces() -> None:
    imported = candidate("Likes tea", extractor="import", confidence=0.2)
    assert only_added(apply([], imported)).confidence == 0.2
    existing = stored(make_fact(content="Likes tea"))
    assert apply([existing], imported) == Changes(skipped=[("Likes tea", SKIP_DUPLICATE)])


def test_a_pinned_contradicted_fact_does_not_stop_the_others_being_replaced() -> None:
    facts = [
        stored(
            make_fact(
                f"fact_0000000{n}",
                content=f"Lives in {city}",
                subject="user",
                predicate="lives_in",
                value=city,
                pinned=pinned,
                updated_at=NOW - n * DAY,
            )
        )
        for n, (city, pinned) in enumerate([("Lisbon", True), ("Madrid", False)], start=1)
    ]
    changes = apply(
        facts, candidate("Lives in Porto", subject="user", predicate="lives_in", value="Porto")
    )
    assert [f.id for f in changes.superseded] == ["fact_00000002"]
    assert [c.kept_id for c in changes.conflicts] == ["fact_00000001"]


def test_a_candidate_keeps_who_polarity_and_cardinality_and_defaults_to_global() -> None:
    extracted = ExtractedFact(
        content="User's sister Ana no longer lives in Rome",
        category="knowledge",
        confidence=0.8,
        subject="Ana",
        relation="sister",
        predicate="lives_in",
        value="Rome",
        negated=True,
        cardinality="one",
    )
    made = candidate_from_extracted(extracted, category="knowledge", vector=E1, user_id="u1")
    assert (made.relation, made.negated, made.cardinality, made.scope) == (
        "sister",
        True,
        "one",
        "global",
    )
