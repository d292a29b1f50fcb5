"""The predicate vocabulary and value comparison: spellings, cardinality, kinds, diets."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from memory.facts import FactPolicy
from memory.predicates import (
    Vocabulary,
    canonical_subject,
    covers,
    excluded_by_diet,
    normalize_predicate,
    overlap,
    refines,
    same_value,
)
from schemas.predicates import DEFAULT_PREDICATES, PredicateSpec
from server.config import ConfigError, load_settings

DOCS = Path(__file__).resolve().parent.parent / "docs" / "memory.md"


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("lives_in", "lives_in"),
        ("livesIn", "lives_in"),
        ("Lives in", "lives_in"),
        ("lives-in", "lives_in"),
        ("location", "lives_in"),
        ("user_location", "lives_in"),
        ("works_for", "employer"),
        ("job_title", "occupation"),
        ("favourite", "favorite"),
        ("can't stand", "dislikes"),
        ("collects", "collects"),
    ],
)
def test_every_spelling_of_a_predicate_has_one_canonical_name(
    spelling: str, canonical: str
) -> None:
    assert Vocabulary().canonical(spelling) == canonical


def test_normalizing_keeps_a_name_that_is_only_a_prefix() -> None:
    assert normalize_predicate("user_") == "user"
    assert normalize_predicate("  The Employer ") == "employer"


@pytest.mark.parametrize(
    ("predicate", "stated", "cardinality"),
    [
        ("lives_in", None, "one"),
        ("lives_in", "many", "one"),
        ("likes", "one", "many"),
        ("lucky_number", None, "many"),
        ("lucky_number", "one", "one"),
    ],
)
def test_the_vocabulary_decides_cardinality_and_unknown_predicates_accumulate(
    predicate: str, stated: Any, cardinality: str
) -> None:
    assert Vocabulary().cardinality(predicate, stated) == cardinality


def test_configured_predicates_add_to_and_replace_built_in_ones() -> None:
    vocabulary = Vocabulary(
        [
            PredicateSpec(name="team", cardinality="one", category="identity", aliases=["club"]),
            PredicateSpec(name="likes", cardinality="one", category="preference"),
        ]
    )
    assert (vocabulary.canonical("club"), vocabulary.cardinality("team")) == ("team", "one")
    assert vocabulary.cardinality("likes") == "one"
    assert vocabulary != Vocabulary()


def test_an_alias_never_shadows_another_predicates_own_name() -> None:
    names = {spec.name for spec in DEFAULT_PREDICATES}
    vocabulary = Vocabulary()
    assert all(vocabulary.canonical(name) == name for name in names)


@pytest.mark.parametrize(
    "subject", ["user", "User", "the user", "I", "me", "Myself", "用户", "我", None, "  user ", ""]
)
def test_every_way_of_naming_the_user_is_one_subject(subject: str | None) -> None:
    assert canonical_subject(subject) == "user"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Acme Corp", "acme corp.", True),
        ("July 9th", "the 9th of July", True),
        ("two cats", "Two Cats", True),
        ("Lisbon", "Porto", False),
        ("北京", "北 京", True),
        ("Deutsch", "german", True),
        ("", "x", False),
    ],
)
def test_values_are_the_same_case_articles_plurals_and_word_order_aside(
    a: str, b: str, same: bool
) -> None:
    assert same_value(a, b) is same


@pytest.mark.parametrize(
    ("a", "b", "covered"),
    [
        ("meat", "meat pretty much every day", True),
        ("Acme", "Acme Corp", True),
        ("alcohol", "a glass of red wine", True),
        ("seafood", "shrimp", True),
        ("咖啡", "每天喝咖啡", True),
        ("海鲜", "虾", True),
        ("tea", "coffee", False),
        ("meat", "fish", False),
    ],
)
def test_a_value_covers_one_it_names_with_more_words_or_as_a_kind(
    a: str, b: str, covered: bool
) -> None:
    assert covers(a, b) is covered
    assert covers(b, a) is covered


@pytest.mark.parametrize(
    ("a", "b", "shared"),
    [
        ("green tea", "tea", True),
        ("深圳", "一家电商公司", False),
        ("酒", "辣", False),
        ("喝绿茶", "绿茶", True),
        (None, "x", True),
    ],
)
def test_values_overlap_when_they_share_a_word_or_a_chinese_character(
    a: str | None, b: str, shared: bool
) -> None:
    assert overlap(a, b) is shared


@pytest.mark.parametrize(
    ("diet", "food", "excluded"),
    [
        ("vegetarian", "meat", True),
        ("vegetarian", "bacon", True),
        ("vegetarian", "cheese", False),
        ("vegan", "cheese", True),
        ("素食", "牛肉", True),
        ("keto", "meat", False),
    ],
)
def test_a_diet_says_what_it_leaves_out(diet: str, food: str, excluded: bool) -> None:
    assert excluded_by_diet(diet, food) is excluded


def test_the_documented_vocabulary_table_is_the_vocabulary() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (one|many) \| (\w+) \|", DOCS.read_text(), re.MULTILINE)
    assert rows == [(s.name, s.cardinality, s.category) for s in DEFAULT_PREDICATES]


def test_the_documented_toml_example_extends_the_vocabulary(tmp_path: Path) -> None:
    example = re.search(r"```toml\n(.*?)```", DOCS.read_text(), re.DOTALL)
    assert example is not None
    config = tmp_path / "mnemo.toml"
    config.write_text(example.group(1))
    settings = load_settings({"MNEMO_CONFIG": str(config)})
    vocabulary = FactPolicy.from_settings(settings).vocabulary
    assert (vocabulary.canonical("supports"), vocabulary.cardinality("team")) == ("team", "one")
    assert vocabulary.family("plays_instrument") == "activity"


def test_a_predicate_with_an_unknown_field_stops_the_server_with_its_name(tmp_path: Path) -> None:
    config = tmp_path / "mnemo.toml"
    config.write_text('[[predicates]]\nname = "team"\ncardinality = "two"\ncategory = "identity"\n')
    with pytest.raises(ConfigError, match="cardinality"):
        load_settings({"MNEMO_CONFIG": str(config)})


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("cats", "cat", True),
        ("berries", "berry", True),
        ("skies", "sky", True),
        ("boxes", "box", True),
        ("axes", "ax", True),
        ("buses", "bus", True),
        ("glasses", "glass", True),
        ("ties", "tie", True),
        ("toes", "toe", True),
        ("Red  Wine", "red wine", True),
        ("pies", "py", False),
        ("hoes", "ho", False),
        ("dress", "dres", False),
        ("class", "clas", False),
        ("bus", "bu", False),
        ("yes", "ye", False),
        ("a dog", "", False),
        ("", "", False),
    ],
)
def test_values_are_the_same_across_english_plurals_case_and_spacing_only(
    a: str, b: str, same: bool
) -> None:
    assert same_value(a, b) is same
    assert same_value(b, a) is same


def test_a_person_is_known_by_their_casefolded_name() -> None:
    assert canonical_subject(" Ana ") == "ana"


@pytest.mark.parametrize(
    ("old", "new", "refined"),
    [
        ("a dog", "a dog named Rex", True),
        ("a dog", "a dog", False),
        ("a dog", "", False),
        ("", "a dog named Rex", False),
        ("a dog named Rex", "a dog named Max", False),
    ],
)
def test_a_value_is_refined_only_by_one_that_adds_a_name(old: str, new: str, refined: bool) -> None:
    assert refines(old, new) is refined
