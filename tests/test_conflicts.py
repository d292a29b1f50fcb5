"""Update semantics: what a new fact does to stored ones (replace, accumulate, retract, keep)."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
import pytest

from memory.conflicts import (
    KEPT_PINNED,
    KEPT_STATED,
    find_contradicted,
    find_duplicate,
    kept_because,
    similarity,
)
from memory.facts import Conflict, FactPolicy, apply_candidates
from memory.facts import Stored as StoredFact
from memory.predicates import Vocabulary
from schemas.predicates import PredicateSpec
from schemas.settings import Settings
from testing.records import NOW, make_fact
from tests.fact_rules import E1, E2, apply, candidate, draws, only_added, stored, toward_e1


def said(
    fact_id: str, content: str, predicate: str | None, value: str, **fields: Any
) -> StoredFact:
    """A stored, user-stated fact about the user with this structure (vector E1)."""
    vector = fields.pop("vector", E1)
    base: dict[str, Any] = {
        "content": content,
        "subject": "user",
        "predicate": predicate,
        "value": value,
        "source": "user_stated",
        "category": "identity",
    }
    return stored(make_fact(fact_id, **(base | fields)), vector)


def says(content: str, predicate: str | None, value: str, **fields: Any) -> Any:
    """A candidate stated by the user (rule-extracted) with this structure (vector E2)."""
    base: dict[str, Any] = {
        "subject": "user",
        "predicate": predicate,
        "value": value,
        "source": "user_stated",
        "extractor": "rules",
        "category": "identity",
    }
    return candidate(content, **(base | fields))


def test_a_new_value_of_a_one_valued_predicate_supersedes_the_old_one() -> None:
    lisbon = said("fact_0000000a", "User lives in Lisbon", "lives_in", "Lisbon")
    changes = apply([lisbon], says("User lives in Porto", "lives_in", "Porto"))
    [old] = changes.superseded
    new = only_added(changes)
    assert (old.id, old.validity, old.superseded_by) == ("fact_0000000a", "superseded", new.id)
    assert new.supersedes_id == "fact_0000000a"


@pytest.mark.parametrize(
    ("predicate", "first", "second"),
    [
        pytest.param("likes", "green tea", "jazz", id="likes"),
        pytest.param("allergic_to", "peanuts", "shellfish", id="allergies"),
        pytest.param("has_pet", "two cats", "a dog", id="pets"),
        pytest.param("speaks", "Portuguese", "German", id="languages"),
        pytest.param("collects", "stamps", "coins", id="unknown-predicate"),
    ],
)
def test_values_of_a_many_valued_predicate_accumulate(
    predicate: str, first: str, second: str
) -> None:
    old = said("fact_0000000a", f"User {predicate} {first}", predicate, first)
    changes = apply([old], says(f"User {predicate} {second}", predicate, second))
    assert changes.superseded == []
    assert only_added(changes).value == second


def test_seven_ordinary_statements_are_seven_active_facts() -> None:
    statements = [
        ("User likes green tea", "likes", "green tea"),
        ("User likes jazz", "likes", "jazz"),
        ("User loves hiking", "likes", "hiking"),
        ("User is allergic to peanuts", "allergic_to", "peanuts"),
        ("User has two cats", "has_pet", "two cats"),
        ("User's sister Ana is a nurse", "occupation", "nurse"),
        ("User is vegetarian", "diet", "vegetarian"),
    ]
    cands = []
    for i, (content, predicate, value) in enumerate(statements):
        extra: dict[str, Any] = {"vector": (1.0, 0.0, 0.0)} if i % 2 else {}
        if "sister" in content:
            extra |= {"subject": "Ana", "relation": "sister"}
        cands.append(says(content, predicate, value, **extra))
    changes = apply_candidates(
        [], cands, policy=FactPolicy(), now=NOW, rand=draws(*(f"0000000{i}" for i in range(7)))
    )
    assert [s.fact.content for s in changes.added] == [c for c, _, _ in statements]
    assert changes.superseded == []


def test_a_predicate_outside_the_vocabulary_is_one_valued_when_the_model_says_so() -> None:
    old = said("fact_0000000a", "User's lucky number is 7", "lucky_number", "7")
    changes = apply([old], says("User's lucky number is 9", "lucky_number", "9", cardinality="one"))
    assert [f.id for f in changes.superseded] == ["fact_0000000a"]


def test_predicate_spellings_and_aliases_are_stored_by_their_canonical_name() -> None:
    changes = apply([], says("User lives in Lyon", "Lives In", "Lyon"))
    assert only_added(changes).predicate == "lives_in"
    old = said("fact_0000000a", "User lives in Lyon", "location", "Lyon")
    changes = apply([old], says("User lives in Paris", "livesIn", "Paris"))
    assert [f.id for f in changes.superseded] == ["fact_0000000a"]


def test_a_negation_retracts_exactly_the_fact_it_negates() -> None:
    meat = said("fact_0000000a", "User eats meat pretty much every day", "eats", "meat")
    fish = said("fact_0000000b", "User eats fish on Fridays", "eats", "fish")
    changes = apply([meat, fish], says("User no longer eats meat", "eats", "meat", negated=True))
    [gone] = changes.superseded
    assert (gone.id, gone.validity) == ("fact_0000000a", "retracted")
    assert only_added(changes).negated


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(("likes", "running"), ("hobby", "running"), id="family"),
        pytest.param(("likes", "a glass of red wine"), ("drinks", "alcohol"), id="kind"),
        pytest.param(("drinks", "coffee every day"), ("drinks", "coffee"), id="value-words"),
    ],
)
def test_a_negation_reaches_across_a_predicate_family_and_a_kind(
    old: tuple[str, str], new: tuple[str, str]
) -> None:
    stored_fact = said("fact_0000000a", "User " + " ".join(old), *old)
    changes = apply([stored_fact], says("User no longer " + " ".join(new), *new, negated=True))
    assert [f.id for f in changes.superseded] == ["fact_0000000a"]


def test_a_positive_statement_replaces_its_own_negation() -> None:
    negated = said("fact_0000000a", "User no longer eats meat", "eats", "meat", negated=True)
    changes = apply([negated], says("User eats meat again", "eats", "meat"))
    assert [f.id for f in changes.superseded] == ["fact_0000000a"]


def test_disliking_what_was_liked_replaces_the_like() -> None:
    liked = said("fact_0000000a", "User likes jazz", "likes", "jazz")
    changes = apply([liked], says("User dislikes jazz", "dislikes", "jazz"))
    assert [f.id for f in changes.superseded] == ["fact_0000000a"]


def test_a_pinned_fact_is_never_replaced_and_the_contradiction_is_kept_beside_it() -> None:
    pinned = said("fact_0000000a", "User lives in Oslo", "lives_in", "Oslo", pinned=True)
    changes = apply(
        [pinned], says("User lives in Bergen", "lives_in", "Bergen", updates_previous=True)
    )
    new = only_added(changes)
    assert changes.superseded == []
    assert (new.pinned, new.conflicts_with, new.supersedes_id) == (False, "fact_0000000a", None)
    assert changes.conflicts == [Conflict(new.id, "fact_0000000a", KEPT_PINNED)]


def test_a_pinned_fact_is_not_retracted_by_a_negation() -> None:
    pinned = said("fact_0000000a", "User drinks coffee", "drinks", "coffee", pinned=True)
    changes = apply(
        [pinned], says("User no longer drinks coffee", "drinks", "coffee", negated=True)
    )
    assert changes.superseded == []
    assert [c.kept_id for c in changes.conflicts] == ["fact_0000000a"]


def test_a_replacement_of_an_unpinned_fact_is_not_pinned() -> None:
    old = said("fact_0000000a", "User lives in Oslo", "lives_in", "Oslo")
    others = [said(f"fact_0000000{i}", f"pin {i}", "likes", f"v{i}", pinned=True) for i in (2, 3)]
    changes = apply([old, *others], says("User lives in Bergen", "lives_in", "Bergen"))
    assert not only_added(changes).pinned


def test_an_inferred_guess_never_replaces_what_the_user_stated() -> None:
    stated = said("fact_0000000a", "User works at Acme", "employer", "Acme", confidence=0.6)
    guess = says(
        "User works at Initech",
        "employer",
        "Initech",
        source="inferred",
        extractor="llm",
        confidence=0.7,
    )
    changes = apply([stated], guess)
    assert changes.superseded == []
    assert changes.conflicts == [Conflict(only_added(changes).id, "fact_0000000a", KEPT_STATED)]


def test_an_inferred_fact_replaces_what_the_user_stated_when_it_says_it_does() -> None:
    stated = said("fact_0000000a", "User works at Acme", "employer", "Acme")
    update = says(
        "User works at Initech",
        "employer",
        "Initech",
        source="inferred",
        extractor="llm",
        updates_previous=True,
    )
    assert [f.id for f in apply([stated], update).superseded] == ["fact_0000000a"]


def test_a_surer_inferred_fact_replaces_a_weaker_inferred_one() -> None:
    guess = said(
        "fact_0000000a",
        "User works at Acme",
        "employer",
        "Acme",
        source="inferred",
        extractor="llm",
        confidence=0.6,
    )
    surer = says(
        "User works at Initech",
        "employer",
        "Initech",
        source="inferred",
        extractor="llm",
        confidence=0.8,
    )
    assert [f.id for f in apply([guess], surer).superseded] == ["fact_0000000a"]


def test_facts_about_another_person_never_replace_the_users_own() -> None:
    mine = said("fact_0000000a", "User is an engineer", "occupation", "engineer")
    hers = says(
        "User's sister Ana is a nurse", "occupation", "nurse", subject="Ana", relation="sister"
    )
    changes = apply([mine], hers)
    assert changes.superseded == []
    assert only_added(changes).subject == "Ana"


def test_an_unnamed_relative_and_the_same_relative_by_name_are_one_person() -> None:
    unnamed = said(
        "fact_0000000a",
        "User's sister is a nurse",
        "occupation",
        "nurse",
        subject="sister",
        relation="sister",
    )
    named = says(
        "User's sister Ana is a doctor", "occupation", "doctor", subject="Ana", relation="sister"
    )
    assert [f.id for f in apply([unnamed], named).superseded] == ["fact_0000000a"]


@pytest.mark.parametrize(
    ("kept", "repeat"),
    [
        pytest.param(("diet", "vegetarian"), ("eats", "meat"), id="diet"),
        pytest.param(("allergic_to", "seafood"), ("eats", "shrimp"), id="allergy"),
    ],
)
def test_a_negation_a_stored_fact_already_implies_reinforces_it(
    kept: tuple[str, str], repeat: tuple[str, str]
) -> None:
    old = said("fact_0000000a", "User " + " ".join(kept), *kept)
    changes = apply([old], says("User doesn't eat " + repeat[1], *repeat, negated=True))
    assert changes.added == []
    assert [(f.id, f.mention_count) for f in changes.updated] == [("fact_0000000a", 2)]


def test_the_same_slot_and_value_in_other_words_is_one_fact() -> None:
    old = said("fact_0000000a", "User works at Acme Corp as an engineer", "employer", "Acme Corp")
    changes = apply([old], says("User works at Acme", "employer", "Acme"))
    assert changes.added == []
    assert [f.id for f in changes.updated] == ["fact_0000000a"]


def test_look_alike_embeddings_do_not_merge_facts_whose_values_share_nothing() -> None:
    spicy = said("fact_0000000a", "用户不吃辣", "eats", "辣", negated=True, vector=E1)
    changes = apply([spicy], says("用户不喝酒", "drinks", "酒", negated=True, vector=E1))
    assert only_added(changes).value == "酒"
    assert changes.updated == []


def test_look_alike_embeddings_still_merge_a_paraphrase_in_another_predicate() -> None:
    hiking = said("fact_0000000a", "User likes hiking", "likes", "hiking", vector=E1)
    changes = apply([hiking], says("User enjoys hiking", "hobby", "hiking", vector=E1))
    assert changes.added == []


def test_look_alike_embeddings_never_merge_two_different_slots_sharing_a_word() -> None:
    allergy = said("fact_0000000a", "用户对猫毛过敏", "allergic_to", "猫毛", vector=E1)
    changes = apply([allergy], says("用户特别喜欢猫", "likes", "猫", vector=E1))
    assert only_added(changes).predicate == "likes"
    assert changes.updated == []


def test_a_configured_predicate_can_make_an_unknown_one_one_valued() -> None:
    policy = FactPolicy.from_settings(
        Settings(predicates=[PredicateSpec(name="team", cardinality="one", category="identity")])
    )
    old = said("fact_0000000a", "User supports Arsenal", "team", "Arsenal")
    changes = apply([old], says("User supports Spurs", "team", "Spurs"), policy)
    assert [f.id for f in changes.superseded] == ["fact_0000000a"]


def test_only_active_facts_of_the_same_scope_are_compared() -> None:
    other_scope = said("fact_0000000a", "User lives in Oslo", "lives_in", "Oslo", scope="app1")
    history = said("fact_0000000b", "User lives in Rome", "lives_in", "Rome", validity="superseded")
    changes = apply([other_scope, history], says("User lives in Bergen", "lives_in", "Bergen"))
    assert changes.superseded == []


def test_a_pet_that_gets_its_name_later_is_one_fact_that_learns_the_name() -> None:
    dog = said("fact_0000000a", "User has a dog", "has_pet", "a dog")
    changes = apply([dog], says("User has a dog named Rex", "has_pet", "a dog named Rex"))
    assert changes.added == []
    [named] = changes.updated
    assert (named.id, named.content, named.value) == (
        "fact_0000000a",
        "User has a dog named Rex",
        "a dog named Rex",
    )


def test_two_pets_with_different_names_are_two_facts() -> None:
    rex = said("fact_0000000a", "User has a dog named Rex", "has_pet", "a dog named Rex")
    changes = apply([rex], says("User has a dog named Max", "has_pet", "a dog named Max"))
    assert only_added(changes).value == "a dog named Max"


# -- the rules one by one (memory.conflicts), so each clause has a test of its own -------


def _contradicted(old: StoredFact, new: Any, **options: float) -> list[str]:
    limits = {"update_similarity": 0.5, "correction_similarity": 0.6} | options
    return [f.id for f in find_contradicted([old], new, Vocabulary(), **limits)]


def _duplicate(old: StoredFact, new: Any, floor: float = 0.92) -> str | None:
    found = find_duplicate([old], new, Vocabulary(), floor)
    return found.id if found is not None else None


OLD = "fact_0000000a"


@pytest.mark.parametrize(
    ("old", "new", "contradicts"),
    [
        pytest.param(("diet", "vegan"), ("eats", "fish"), True, id="eating-ends-a-diet"),
        pytest.param(("diet", "vegan"), ("drinks", "milk"), True, id="drinking-ends-a-diet"),
        pytest.param(("diet", "vegetarian"), ("eats", "cheese"), False, id="diet-allows-it"),
        pytest.param(("diet", "vegan"), ("likes", "fish"), False, id="liking-is-not-eating"),
        pytest.param(("likes", "Paris"), ("lives_in", "Paris"), False, id="other-slot-same-value"),
        pytest.param(("likes", "jazz"), ("dislikes", "jazz"), True, id="opposite-predicate"),
        pytest.param(("likes", "jazz"), ("dislikes", "opera"), False, id="opposite-other-value"),
        pytest.param(("likes", "running"), ("hobby", "running"), False, id="family-positive"),
        pytest.param(("lives_in", "Lisbon"), ("lives_in", "Porto"), True, id="one-valued"),
        pytest.param(("lives_in", "Lisbon"), ("lives_in", "Lisbon"), False, id="repeated"),
    ],
)
def test_which_structured_statements_contradict_a_stored_one(
    old: tuple[str, str], new: tuple[str, str], contradicts: bool
) -> None:
    stored_fact = said(OLD, f"User {old[0]} {old[1]}", *old)
    cand = says(f"User {new[0]} {new[1]}", *new)
    assert _contradicted(stored_fact, cand) == ([OLD] if contradicts else [])


def test_a_negated_diet_is_not_ended_by_eating() -> None:
    old = said(OLD, "User is not vegan", "diet", "vegan", negated=True)
    assert _contradicted(old, says("User eats fish", "eats", "fish")) == []


@pytest.mark.parametrize(
    ("old", "new", "contradicts"),
    [
        pytest.param("running", "running", True, id="same-value"),
        pytest.param("trail running", "running", True, id="covered-value"),
        pytest.param("chess", "running", False, id="other-value"),
    ],
)
def test_a_negation_in_the_family_retracts_only_the_activity_it_names(
    old: str, new: str, contradicts: bool
) -> None:
    stored_fact = said(OLD, f"User likes {old}", "likes", old)
    cand = says(f"User no longer does {new}", "hobby", new, negated=True)
    assert _contradicted(stored_fact, cand) == ([OLD] if contradicts else [])


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        pytest.param(("Ana", "sister"), ("Eva", "sister"), False, id="two-named-sisters"),
        pytest.param(("sister", "sister"), ("brother", "brother"), False, id="sister-brother"),
        pytest.param(("sister", "sister"), ("Ana", "sister"), True, id="unnamed-then-named"),
        pytest.param(("Ana", "sister"), ("sister", "sister"), True, id="named-then-unnamed"),
        pytest.param(("user", None), ("sister", "sister"), False, id="user-and-sister"),
    ],
)
def test_who_a_fact_is_about_decides_whether_a_new_value_replaces_it(
    old: tuple[str, str | None], new: tuple[str, str | None], same: bool
) -> None:
    stored_fact = said(OLD, "lives in Rome", "lives_in", "Rome", subject=old[0], relation=old[1])
    cand = says("lives in Paris", "lives_in", "Paris", subject=new[0], relation=new[1])
    assert _contradicted(stored_fact, cand) == ([OLD] if same else [])


def test_updates_previous_replaces_the_most_similar_fact_of_the_slot_only() -> None:
    same_slot = said(OLD, "User speaks French", "speaks", "French", vector=E1)
    other_slot = said("fact_0000000b", "User likes French", "likes", "French", vector=E1)
    plain = says("User speaks German", "speaks", "German", vector=E1)
    assert _contradicted(same_slot, plain) == []  # many-valued: it accumulates
    cand = dataclasses.replace(plain, updates_previous=True)
    found = find_contradicted(
        [other_slot, same_slot],
        cand,
        Vocabulary(),
        update_similarity=0.5,
        correction_similarity=0.6,
    )
    assert [f.id for f in found] == [OLD]


def test_a_correction_replaces_the_most_similar_fact_once() -> None:
    old = said(OLD, "User lives in Lisbon", "lives_in", "Lisbon", vector=E1)
    cand = says("User lives in Porto", "lives_in", "Porto", category="correction", vector=E1)
    assert _contradicted(old, cand) == [OLD]
    far = dataclasses.replace(cand, vector=E2, predicate="likes", value="Porto")
    assert _contradicted(old, far) == []


@pytest.mark.parametrize(
    ("old", "new", "duplicate"),
    [
        pytest.param(("likes", "running"), ("hobby", "running"), True, id="family-same"),
        pytest.param(("likes", "running"), ("hobby", "chess"), False, id="family-other"),
        pytest.param(("likes", "fish"), ("eats", "fish"), False, id="taste-is-not-amount"),
        pytest.param(("eats", "fish"), ("likes", "fish"), False, id="amount-is-not-taste"),
        pytest.param(("likes", "jazz"), ("likes", "Jazz"), True, id="many-same-value"),
        pytest.param(("works_at", "Acme"), ("works_at", "Acme Corp"), True, id="one-more-words"),
        pytest.param(("likes", "jazz"), ("likes", "jazz music"), False, id="many-more-words"),
        pytest.param(("has_pet", "a dog"), ("has_pet", "a dog named Rex"), True, id="refines"),
    ],
)
def test_which_structured_statements_repeat_a_stored_one(
    old: tuple[str, str], new: tuple[str, str], duplicate: bool
) -> None:
    stored_fact = said(OLD, f"User {old[0]} {old[1]}", *old, vector=E1)
    cand = says(f"User {new[0]} {new[1]}!", *new, vector=E2)
    assert _duplicate(stored_fact, cand) == (OLD if duplicate else None)


def test_a_negation_is_not_implied_by_another_persons_diet() -> None:
    old = said(OLD, "Ana is vegetarian", "diet", "vegetarian", subject="Ana", vector=E1)
    cand = says("User does not eat meat", "eats", "meat", negated=True, vector=E2)
    assert _duplicate(old, cand) is None


@pytest.mark.parametrize(
    ("old", "new", "implied"),
    [
        pytest.param(("diet", "vegetarian"), ("drinks", "meat"), True, id="drinks"),
        pytest.param(("diet", "vegetarian"), ("likes", "meat"), False, id="not-eating"),
        pytest.param(("allergic_to", "seafood"), ("eats", "shrimp"), True, id="allergy"),
        pytest.param(("likes", "seafood"), ("eats", "shrimp"), False, id="not-an-allergy"),
    ],
)
def test_a_negation_is_implied_only_by_a_diet_or_an_allergy(
    old: tuple[str, str], new: tuple[str, str], implied: bool
) -> None:
    stored_fact = said(OLD, f"User {old[0]} {old[1]}", *old, vector=E1)
    cand = says(f"User does not {new[0]} {new[1]}", *new, negated=True, vector=E2)
    assert _duplicate(stored_fact, cand) == (OLD if implied else None)


@pytest.mark.parametrize(
    ("old_fields", "new_fields", "distinct"),
    [
        pytest.param({}, {}, False, id="look-alike-paraphrase"),
        pytest.param({"subject": "Ana", "relation": "sister"}, {}, True, id="other-person"),
        pytest.param({"negated": True}, {}, True, id="other-polarity"),
        pytest.param({"value": "Lisbon"}, {"value": "Porto"}, True, id="other-value-one-slot"),
        pytest.param(
            {"predicate": "likes", "value": "jazz"},
            {"predicate": "likes", "value": "jazz music"},
            True,
            id="other-value-many-slot",
        ),
        pytest.param(
            {"predicate": "likes", "value": "jazz"},
            {"predicate": "dislikes", "value": "jazz music"},
            True,
            id="opposite-slot",
        ),
        pytest.param(
            {"subject": "Ana", "relation": "sister"},
            {"subject": "sister", "relation": "sister"},
            False,
            id="sister-by-name-and-by-relation",
        ),
        pytest.param({"subject": None}, {"subject": "Ana"}, False, id="subject-unknown"),
        pytest.param(
            {"predicate": "allergic_to", "value": "cats"},
            {"predicate": "likes", "value": "cats"},
            True,
            id="two-named-slots",
        ),
        pytest.param(
            {"predicate": "likes", "value": "cats"},
            {"predicate": "fancies", "value": "cats"},
            False,
            id="a-made-up-predicate",
        ),
    ],
)
def test_look_alike_embeddings_merge_only_what_structure_cannot_tell_apart(
    old_fields: dict[str, Any], new_fields: dict[str, Any], distinct: bool
) -> None:
    old = said(OLD, "User lives in Lisbon", "lives_in", "Lisbon", vector=E1)
    old = StoredFact(msgspec.structs.replace(old.fact, **old_fields), old.vector)
    cand = says("User resides in Lisbon city", "based", "Lisbon", vector=E1)
    if new_fields:
        cand = dataclasses.replace(cand, **({"predicate": "lives_in"} | new_fields))
    assert _duplicate(old, cand) == (None if distinct else OLD)


def test_the_near_duplicate_floor_is_inclusive() -> None:
    # No predicate: structure cannot tell them apart, the embeddings decide.
    old = said(OLD, "User likes tea", None, "tea", vector=toward_e1(0.5))  # exactly 0.5
    cand = says("Tea, always tea", None, "tea", vector=E1)
    assert _duplicate(old, cand, floor=0.5) == OLD
    assert _duplicate(old, cand, floor=0.51) is None


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param((1.0,), (1.0,), 1.0, id="one-dimension"),
        pytest.param((), (), 0.0, id="empty"),
        pytest.param((1.0, 0.0), (1.0,), 0.0, id="other-embedder"),
        pytest.param((0.6, 0.8), (0.8, 0.6), 0.96, id="dot-product"),
    ],
)
def test_similarity_is_the_dot_product_of_same_length_vectors(
    a: tuple[float, ...], b: tuple[float, ...], expected: float
) -> None:
    assert similarity(a, b) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("old_fields", "new_fields", "kept"),
    [
        pytest.param({"source": "inferred", "confidence": 0.8}, {}, KEPT_STATED, id="surer"),
        pytest.param({"source": "inferred", "confidence": 0.7}, {}, None, id="as-sure"),
        pytest.param({"source": "inferred", "extractor": "manual"}, {}, KEPT_STATED, id="manual"),
        pytest.param({}, {"source": "inferred", "extractor": "manual"}, None, id="by-hand"),
    ],
)
def test_who_stated_a_fact_decides_whether_an_inferred_one_replaces_it(
    old_fields: dict[str, Any], new_fields: dict[str, Any], kept: str | None
) -> None:
    old = said(OLD, "User lives in Lisbon", "lives_in", "Lisbon", **old_fields).fact
    fields = {"source": "inferred", "extractor": "llm", "confidence": 0.7} | new_fields
    cand = says("User lives in Porto", "lives_in", "Porto", **fields)
    assert kept_because(cand, old) == kept


@pytest.mark.parametrize(
    ("old_key", "new_key", "contradicts"),
    [("home", "Home", True), ("home", "work", False), (None, None, True)],
    ids=["same-key", "other-key", "no-key"],
)
def test_a_keyed_slot_is_replaced_only_by_a_value_of_the_same_key(
    old_key: str | None, new_key: str | None, contradicts: bool
) -> None:
    old = said(OLD, "User lives in Lisbon", "lives_in", "Lisbon", key=old_key)
    cand = says("User lives in Porto", "lives_in", "Porto", key=new_key)
    assert _contradicted(old, cand) == ([OLD] if contradicts else [])
