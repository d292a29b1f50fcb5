"""Entities, pure: type validation, the update semantics, and resolution's tiers and boosts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from memory.entities import entity_type, resolve, trigram_similarity, updated
from memory.entity_merge import merge
from memory.predicates import Vocabulary
from schemas.records import Entity, EntityType, Fact
from testing.records import a_fact

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entity(entity_id: str, name: str, kind: str = "person", **changes: object) -> Entity:
    made = Entity(
        id=entity_id,
        user_id="u1",
        canonical_name=name,
        entity_type=entity_type(kind),
        created_at=T0,
        updated_at=T0,
    )
    return msgspec.structs.replace(made, **changes)


ANA = entity("ent_00000001", "Ana Souza", aliases=["Ana", "my sister"])
ANNA = entity("ent_00000002", "Anna Berg")
ACME = entity("ent_00000003", "Acme", "organization", aliases=["ACME Corp"])
OLD = entity("ent_00000004", "Ana", meta={"merged_into": "ent_00000001"})
EVERYONE = [ANA, ANNA, ACME, OLD]


def found(
    name: str, *, kind: EntityType | None = None, enable_fuzzy: bool = False
) -> list[tuple[str, str, float]]:
    ranked = resolve(EVERYONE, name, kind=kind, enable_fuzzy=enable_fuzzy)
    return [(r.entity.id, r.name_match, r.score) for r in ranked]


def test_an_unknown_entity_type_is_refused_naming_the_valid_ones() -> None:
    assert entity_type("place") == "place"
    with pytest.raises(ValueError, match="person, organization, place, other"):
        entity_type("animal")


def test_an_update_replaces_the_name_and_aliases_and_merges_the_metadata() -> None:
    before = entity("ent_00000009", "Bob", aliases=["Bobby"], meta={"a": 1, "b": 2})
    after = updated(before, T0 + timedelta(days=1), aliases=["Rob"], metadata={"b": 3, "c": 4})
    assert (after.canonical_name, after.aliases) == ("Bob", ["Rob"])
    assert after.meta == {"a": 1, "b": 3, "c": 4}
    assert after.updated_at == T0 + timedelta(days=1)
    renamed = updated(before, T0, canonical_name="Robert")
    assert (renamed.canonical_name, renamed.aliases, renamed.meta) == (
        "Robert",
        ["Bobby"],
        {"a": 1, "b": 2},
    )


def test_the_canonical_name_matches_exactly_at_100_an_alias_at_80_case_aside() -> None:
    assert found("ana souza") == [("ent_00000001", "exact", 100.0)]
    assert found("MY SISTER") == [("ent_00000001", "alias", 80.0)]


def test_a_name_inside_a_name_or_alias_matches_as_prefix_at_50() -> None:
    # "Ana" is an alias of Ana Souza (its best tier only), and not inside "Anna Berg".
    assert found("Ana") == [("ent_00000001", "alias", 80.0)]
    assert found("Ann") == [("ent_00000002", "prefix", 50.0)]
    assert found("corp") == [("ent_00000003", "prefix", 50.0)]
    assert found("Souza") == [("ent_00000001", "prefix", 50.0)]


def test_fuzzy_matching_is_opt_in_for_names_over_two_characters() -> None:
    assert found("Anna Berk") == []
    assert found("Anna Berk", enable_fuzzy=True) == [("ent_00000002", "fuzzy", 20.0)]
    assert found("Ab", enable_fuzzy=True) == []


def test_trigram_similarity_is_pg_trgms() -> None:
    assert trigram_similarity("word", "word") == 1.0
    # pg_trgm: similarity('word', 'two words') = 4 / 11 (0.363636).
    assert trigram_similarity("word", "two words") == pytest.approx(4 / 11)
    assert trigram_similarity("", "x") == 0.0


def test_a_merged_entity_and_other_types_are_never_found() -> None:
    assert [r[0] for r in found("Ana")] == ["ent_00000001"]  # not the tombstone
    assert found("Acme", kind="person") == []
    assert found("   ") == []


def test_results_order_by_score_then_name_and_domain_scores_add_to_them() -> None:
    both = [entity("ent_0000000b", "Sam Lee"), entity("ent_0000000a", "Sam Cho")]
    ordered = resolve(both, "sam")
    assert [r.entity.canonical_name for r in ordered] == ["Sam Cho", "Sam Lee"]
    boosted = resolve(both, "sam", hints={"domain_scores": {"ent_0000000b": 7.5}})
    assert [(r.entity.canonical_name, r.score) for r in boosted] == [
        ("Sam Lee", 57.5),
        ("Sam Cho", 50.0),
    ]
    assert boosted[0].view() == {
        "entity_id": "ent_0000000b",
        "canonical_name": "Sam Lee",
        "entity_type": "person",
        "score": 57.5,
        "name_match": "prefix",
        "aliases": [],
    }


def fact(entity_id: str, content: str, predicate: str) -> Fact:
    return a_fact(content=content, predicate=predicate, entity_id=entity_id)


def test_a_topic_hint_boosts_the_candidate_whose_facts_share_its_words() -> None:
    both = [entity("ent_0000000a", "Sam Cho"), entity("ent_0000000b", "Sam Lee")]
    facts = {"ent_0000000b": [fact("ent_0000000b", "Sam plays cello in an orchestra", "hobby")]}
    ranked = resolve(both, "sam", hints={"topic": "cello orchestra"}, facts_of=facts)
    assert ranked[0].entity.id == "ent_0000000b"
    assert 50.0 < ranked[0].score <= 70.0
    assert ranked[1].score == 50.0


def test_a_merge_moves_facts_keeps_the_surer_of_a_one_valued_pair_and_tombstones_the_source() -> (
    None
):
    source = entity("ent_0000000a", "Ana", aliases=["Sis", "ana souza"], meta={"a": 1, "b": 1})
    target = entity("ent_0000000b", "Ana Souza", aliases=["Annie"], meta={"b": 2})

    def about(entity_id: str, n: int, predicate: str, confidence: float) -> Fact:
        return a_fact(
            f"fact_0000000{n}", predicate=predicate, entity_id=entity_id, confidence=confidence
        )

    facts = [
        about("ent_0000000a", 1, "lives_in", 0.9),  # surer: moves, supersedes fact 4
        about("ent_0000000a", 2, "employer", 0.5),  # less sure: superseded by fact 5
        about("ent_0000000a", 3, "likes", 0.5),  # many-valued: moves beside fact 6
        about("ent_0000000b", 4, "lives_in", 0.6),
        about("ent_0000000b", 5, "employer", 0.5),
        about("ent_0000000b", 6, "likes", 0.9),
    ]
    merged = merge(source, target, facts, Vocabulary(), T0)
    changed = {f.id: f for f in merged.facts}
    assert (changed["fact_00000001"].entity_id, changed["fact_00000001"].supersedes_id) == (
        "ent_0000000b",
        "fact_00000004",
    )
    assert changed["fact_00000004"].validity == "superseded"
    assert (changed["fact_00000002"].validity, changed["fact_00000002"].superseded_by) == (
        "superseded",
        "fact_00000005",
    )
    assert changed["fact_00000003"].entity_id == "ent_0000000b"
    assert sorted(changed) == ["fact_00000001", "fact_00000002", "fact_00000003", "fact_00000004"]
    assert [(f.id, f.superseded_by) for f in merged.facts if f.validity == "superseded"] == [
        ("fact_00000004", "fact_00000001"),  # the supersedes links, carried by the facts
        ("fact_00000002", "fact_00000005"),
    ]
    assert merged.target.aliases == ["Annie", "Ana", "Sis"]  # "ana souza" is its own name
    assert merged.target.meta == {"a": 1, "b": 2}
    assert merged.source.meta["merged_into"] == "ent_0000000b"
    assert merged.payload() == {
        "source_entity_id": "ent_0000000a",
        "target_entity_id": "ent_0000000b",
        "facts_repointed": 2,
        "facts_superseded": 2,
        "aliases_added": ["Ana", "Sis"],
    }


def test_a_merge_into_itself_or_of_a_merged_entity_is_refused() -> None:
    with pytest.raises(ValueError, match="into itself"):
        merge(ANA, ANA, [], Vocabulary(), T0)
    with pytest.raises(ValueError, match="source entity ent_00000004 was merged into"):
        merge(OLD, ANA, [], Vocabulary(), T0)
    with pytest.raises(ValueError, match="target entity ent_00000004 was merged into"):
        merge(ANNA, OLD, [], Vocabulary(), T0)
