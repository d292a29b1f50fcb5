"""The four context formats, to the character, and their budgets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory.formats import (
    FORMATS,
    Block,
    RuleLine,
    about_user,
    about_user_budget,
    app_memories,
    clip_note,
    memory_context,
    newest_notes,
    rank_key,
    user_context,
)
from memory.tokens import estimate_tokens
from schemas.records import AppNote, Fact, UserProfile
from schemas.taxonomy import DEFAULT_CATEGORIES, CategorySpec
from tests.format_facts import T0, fact


def note(note_id: str, content: str, created: datetime) -> AppNote:
    return AppNote(
        id=note_id,
        user_id="u1",
        app_id="mail",
        content=content,
        created_at=created,
        updated_at=created,
    )


FULL_PROFILE = UserProfile(
    user_id="u1",
    work="Backend engineer at a fintech startup",
    personal="Lives in Lyon with two cats",
    top_of_mind="Migrating billing to Postgres",
    recent="Asked about index tuning",
    earlier="Set up CI for the monorepo",
    background="Ten years of Python",
)


def test_format_names_are_the_four_seed_formats() -> None:
    assert FORMATS == ("user-context", "memory-context", "app-memories", "about-user")


def test_rank_key_orders_score_desc_then_newest_then_lowest_id() -> None:
    older = T0 - timedelta(days=1)
    facts = [
        fact("fact_b", "b", created=T0),
        fact("fact_c", "c", created=older),
        fact("fact_a", "a", created=T0),
        fact("fact_d", "d", created=older),
    ]
    scores = {"fact_a": 0.5, "fact_b": 0.5, "fact_c": 0.5, "fact_d": 0.7}
    ranked = sorted(facts, key=lambda f: rank_key(scores[f.id], f))
    assert [f.id for f in ranked] == ["fact_d", "fact_a", "fact_b", "fact_c"]


# -- user-context (seed 000) ---------------------------------------------------------------


def test_user_context_has_all_sections_and_facts_by_confidence_desc() -> None:
    facts = [
        fact("f1", "Prefers tea over coffee", "preference", 0.72),
        fact("f2", "Uses Neovim", "behavior", 0.95),
        fact("f3", "Wants to\n  learn Rust", "goal", 0.8),
    ]
    block = user_context(FULL_PROFILE, facts)
    assert (
        block.text
        == """\
User Context:
- Work: Backend engineer at a fintech startup
- Personal: Lives in Lyon with two cats
- Top of mind: Migrating billing to Postgres

History:
- Recent: Asked about index tuning
- Earlier: Set up CI for the monorepo
- Background: Ten years of Python

Facts:
- [behavior | 0.95] Uses Neovim
- [goal | 0.80] Wants to learn Rust
- [preference | 0.72] Prefers tea over coffee"""
    )
    assert block.memory_ids == ["f2", "f3", "f1"]
    assert block.tokens == estimate_tokens(block.text)


def test_user_context_omits_empty_lines_and_sections() -> None:
    profile = UserProfile(
        user_id="u1", work="Nurse", top_of_mind="  ", background="Grew up in Oslo"
    )
    assert (
        user_context(profile, []).text
        == """\
User Context:
- Work: Nurse

History:
- Background: Grew up in Oslo"""
    )
    only_facts = user_context(None, [fact("f1", "Likes jazz", "preference", 0.6)])
    assert only_facts.text == "Facts:\n- [preference | 0.60] Likes jazz"
    assert user_context(UserProfile(user_id="u1"), []) == Block("", 0, [])
    assert user_context(None, []) == Block("", 0, [])


def test_user_context_breaks_confidence_ties_by_newest_then_lowest_id() -> None:
    facts = [
        fact("f_b", "b", "knowledge", 0.7),
        fact("f_old", "old", "knowledge", 0.7, created=T0 - timedelta(hours=1)),
        fact("f_a", "a", "knowledge", 0.7),
    ]
    block = user_context(None, facts)
    assert (
        block.text
        == """\
Facts:
- [knowledge | 0.70] a
- [knowledge | 0.70] b
- [knowledge | 0.70] old"""
    )
    assert block.memory_ids == ["f_a", "f_b", "f_old"]


def test_user_context_over_budget_drops_facts_from_lowest_confidence_up() -> None:
    profile = UserProfile(user_id="u1", work="Nurse")
    facts = [
        fact("low", "Drinks oat milk", "preference", 0.55),
        fact("high", "Works night shifts", "context", 0.9),
        fact("mid", "Runs on Sundays", "behavior", 0.7),
    ]
    two_facts = """\
User Context:
- Work: Nurse

Facts:
- [context | 0.90] Works night shifts
- [behavior | 0.70] Runs on Sundays"""
    budget = estimate_tokens(two_facts)
    block = user_context(profile, facts, max_tokens=budget)
    assert block.text == two_facts
    assert block.memory_ids == ["high", "mid"]
    assert block.tokens <= budget

    smaller = user_context(profile, facts, max_tokens=budget - 1)
    assert (
        smaller.text
        == """\
User Context:
- Work: Nurse

Facts:
- [context | 0.90] Works night shifts"""
    )
    assert smaller.memory_ids == ["high"]

    no_facts = user_context(profile, facts, max_tokens=estimate_tokens(smaller.text) - 1)
    assert no_facts.text == "User Context:\n- Work: Nurse"
    assert no_facts.memory_ids == []


def test_user_context_truncates_sections_at_a_character_and_the_mark_fits() -> None:
    profile = UserProfile(user_id="u1", work="abcdefghij" * 4)
    full = user_context(profile, [])
    assert full.tokens == 16  # 62 characters
    block = user_context(profile, [fact("f1", "Likes jazz")], max_tokens=10)
    assert block.text == "User Context:\n- Work: abcdefghijabcd\n..."
    assert block.tokens == 10
    assert block.memory_ids == []


def test_user_context_truncation_counts_each_cjk_character_as_a_token() -> None:
    profile = UserProfile(user_id="u1", personal="我住在东京")
    assert user_context(profile, []).tokens == 12
    block = user_context(profile, [], max_tokens=9)
    assert block.text == "User Context:\n- Personal: 我\n..."
    assert block.tokens == 9


def test_user_context_truncation_does_not_leave_trailing_whitespace_before_the_mark() -> None:
    profile = UserProfile(user_id="u1", work="Nurse", personal="Lives in Oslo")
    block = user_context(profile, [], max_tokens=8)  # cut right after "Nurse\n"
    assert block.text == "User Context:\n- Work: Nurse\n..."
    assert block.tokens == 8


def test_user_context_with_no_room_even_for_the_mark_is_empty_and_names_the_room_needed() -> None:
    block = user_context(FULL_PROFILE, [fact("f1", "x")], max_tokens=0)
    assert (block.text, block.tokens, block.memory_ids) == ("", 0, [])
    assert block.needed > 0
    assert user_context(FULL_PROFILE, [fact("f1", "x")], max_tokens=block.needed).text


def test_user_context_default_budget_is_2000_tokens() -> None:
    facts = [fact(f"f{i:03d}", "x" * 76, "knowledge", 0.5 + i / 1000) for i in range(100)]
    block = user_context(None, facts)
    assert 2000 - 25 < block.tokens <= 2000  # one more line would not fit
    assert block.memory_ids[0] == "f099"
    assert len(block.memory_ids) < 100


# -- memory-context (seed 002) -------------------------------------------------------------

KEY_FACTS = [
    fact(
        "fact_alice",
        "Works at Acme",
        "knowledge",
        0.9,
        subject="Alice",
        predicate="works_at",
    ),
    fact("fact_tea", "Likes green tea", "preference", 0.75),
]
RULES = [
    RuleLine(id="rule_fr", content="Answer in French", maturity="established", effectiveness=0.8)
]


def test_memory_context_has_heading_key_facts_and_active_rules() -> None:
    block = memory_context(KEY_FACTS, token_budget=3000, rules=RULES)
    assert (
        block.text
        == """\
# Memory Context

## Key Facts
- [Alice] [works_at]: Works at Acme (confidence: 0.90)
- [user] [preference]: Likes green tea (confidence: 0.75)

## Active Rules
- Answer in French (maturity: established, effectiveness: 0.80)
"""
    )
    assert block.memory_ids == ["fact_alice", "fact_tea", "rule_fr"]
    assert block.tokens == estimate_tokens(block.text)


def test_memory_context_keeps_the_given_order_and_omits_empty_sections() -> None:
    reversed_facts = list(reversed(KEY_FACTS))
    assert (
        memory_context(reversed_facts, token_budget=3000).text
        == """\
# Memory Context

## Key Facts
- [user] [preference]: Likes green tea (confidence: 0.75)
- [Alice] [works_at]: Works at Acme (confidence: 0.90)
"""
    )
    assert (
        memory_context([], token_budget=3000, rules=RULES).text
        == """\
# Memory Context

## Active Rules
- Answer in French (maturity: established, effectiveness: 0.80)
"""
    )


def test_memory_context_with_nothing_found_is_the_heading_alone() -> None:
    block = memory_context([], token_budget=3000)
    assert block.text == "# Memory Context\n"
    assert block.memory_ids == []


def test_memory_context_drops_rules_when_the_budget_only_allows_facts() -> None:
    # 17 + 69 + 58 = 144 characters = 36 * 4: both facts fit exactly, the rule does not.
    block = memory_context(KEY_FACTS, token_budget=36, rules=RULES)
    assert (
        block.text
        == """\
# Memory Context

## Key Facts
- [Alice] [works_at]: Works at Acme (confidence: 0.90)
- [user] [preference]: Likes green tea (confidence: 0.75)
"""
    )
    assert len(block.text) == 144
    assert block.memory_ids == ["fact_alice", "fact_tea"]
    assert memory_context(KEY_FACTS, token_budget=35, rules=RULES).memory_ids == ["fact_alice"]
    assert memory_context(KEY_FACTS, token_budget=56, rules=RULES).memory_ids == [
        "fact_alice",
        "fact_tea",
    ]
    assert len(memory_context(KEY_FACTS, token_budget=57, rules=RULES).memory_ids) == 3


@pytest.mark.parametrize("budget", range(0, 60), ids=lambda b: f"budget-{b}")
def test_memory_context_never_exceeds_four_characters_per_budget_token(budget: int) -> None:
    block = memory_context(KEY_FACTS, token_budget=budget, rules=RULES)
    assert len(block.text) <= budget * 4
    all_ids = ["fact_alice", "fact_tea", "rule_fr"]
    assert block.memory_ids == all_ids[: len(block.memory_ids)]


def test_memory_context_stops_at_the_first_item_that_does_not_fit() -> None:
    facts = [fact("long", "x" * 200), fact("short", "y")]
    block = memory_context(facts, token_budget=30)
    assert block.text == "# Memory Context\n"
    assert block.memory_ids == []


def test_memory_context_below_the_heading_size_is_empty_and_names_the_budget_needed() -> None:
    small = memory_context(KEY_FACTS, token_budget=4)
    assert (small.text, small.tokens, small.memory_ids) == ("", 0, [])
    assert memory_context(KEY_FACTS, token_budget=5).text == "# Memory Context\n"
    assert memory_context(KEY_FACTS, token_budget=small.needed).memory_ids == [KEY_FACTS[0].id]
    assert memory_context(KEY_FACTS, token_budget=small.needed - 1).memory_ids == []


# -- app-memories (seed 003) ---------------------------------------------------------------


def test_app_memories_matches_seed_003_newest_first() -> None:
    notes = [
        note(
            "n2",
            'User is working on a project called "Phoenix" with deadline Nov 1.',
            datetime(2025, 10, 9, 8, 0, tzinfo=UTC),
        ),
        note(
            "n3",
            "User had database connection issues, resolved by restarting service.",
            datetime(2025, 10, 8, 17, 45, tzinfo=UTC),
        ),
        note(
            "n1",
            "User prefers meetings after 2pm on weekdays.",
            datetime(2025, 10, 10, 12, 0, tzinfo=UTC),
        ),
    ]
    block = app_memories("Mail", notes)
    assert (
        block.text
        == """\
(memories for app: Mail)
The following are memories from previous conversations with this app:

1. [Created: 2025-10-10] User prefers meetings after 2pm on weekdays.
2. [Created: 2025-10-09] User is working on a project called "Phoenix" with deadline Nov 1.
3. [Created: 2025-10-08] User had database connection issues, resolved by restarting service.

Use these memories to provide context-aware responses."""
    )
    assert block.memory_ids == ["n1", "n2", "n3"]
    assert block.tokens == estimate_tokens(block.text)


def test_app_memories_breaks_date_ties_by_lowest_id() -> None:
    day = datetime(2025, 10, 10, tzinfo=UTC)
    block = app_memories("Chat", [note("n_b", "Second.", day), note("n_a", "First.", day)])
    assert (
        block.text
        == """\
(memories for app: Chat)
The following are memories from previous conversations with this app:

1. [Created: 2025-10-10] First.
2. [Created: 2025-10-10] Second.

Use these memories to provide context-aware responses."""
    )
    assert block.memory_ids == ["n_a", "n_b"]


def test_app_memories_without_notes_is_empty() -> None:
    assert app_memories("Mail", []) == Block("", 0, [])


# -- about-user (seed 004) -----------------------------------------------------------------

SEED_004_FACTS = [
    fact("i1", "Solo developer based in Copenhagen", "identity", 0.9),
    fact("p1", "Building a local-first AI chat app with WebLLM", "project", 0.9),
    fact("r1", "Prefers direct answers without preamble", "preference", 0.9),
    fact("p2", "Currently implementing a memory extraction system", "project", 0.8),
    fact("r2", "Uses TypeScript, minimal abstraction", "preference", 0.8),
]


def test_about_user_matches_seed_004_sections_by_priority() -> None:
    block = about_user(SEED_004_FACTS, DEFAULT_CATEGORIES, budget=500)
    assert (
        block.text
        == """\
## What you know about this user

Current work:
- Building a local-first AI chat app with WebLLM
- Currently implementing a memory extraction system

Preferences:
- Prefers direct answers without preamble
- Uses TypeScript, minimal abstraction

About user:
- Solo developer based in Copenhagen"""
    )
    assert block.memory_ids == ["p1", "p2", "r1", "r2", "i1"]
    assert block.tokens == estimate_tokens(block.text)


def test_about_user_drops_the_worst_ranked_facts_first_whatever_their_section() -> None:
    # Given best first: the identity fact answers the query best, the last preference least.
    without_worst = """\
## What you know about this user

Current work:
- Building a local-first AI chat app with WebLLM
- Currently implementing a memory extraction system

Preferences:
- Prefers direct answers without preamble

About user:
- Solo developer based in Copenhagen"""
    budget = estimate_tokens(without_worst)
    block = about_user(SEED_004_FACTS, DEFAULT_CATEGORIES, budget=budget)
    assert block.text == without_worst
    assert block.memory_ids == ["p1", "p2", "r1", "i1"]

    smaller = about_user(SEED_004_FACTS, DEFAULT_CATEGORIES, budget=budget - 1)
    assert smaller.memory_ids == ["p1", "r1", "i1"]
    assert "Copenhagen" in smaller.text


def test_about_user_puts_the_most_relevant_fact_first_in_its_section() -> None:
    ranked = [SEED_004_FACTS[3], SEED_004_FACTS[1]]  # p2 answers the query better than p1
    block = about_user(ranked, DEFAULT_CATEGORIES, budget=500)
    assert block.memory_ids == ["p2", "p1"]


def test_about_user_follows_category_priority_not_the_given_category_order() -> None:
    categories = [
        CategorySpec(name="goal", heading="Goals:", priority=9),
        CategorySpec(name="habit", heading="Habits:", priority=1),
    ]
    facts = [
        fact("g1", "Run a marathon", "goal"),
        fact("x1", "Unknown category is left out", "mystery"),
        fact("h1", "Walks at dawn", "habit"),
        fact("h2", "Reads\nbefore  bed", "habit"),
    ]
    block = about_user(facts, categories, budget=500)
    assert (
        block.text
        == """\
## What you know about this user

Habits:
- Walks at dawn
- Reads before bed

Goals:
- Run a marathon"""
    )
    assert block.memory_ids == ["h1", "h2", "g1"]


def test_about_user_skips_the_section_entirely_when_empty_or_nothing_fits() -> None:
    assert about_user([], DEFAULT_CATEGORIES, budget=500) == Block("", 0, [])
    only_unknown = [fact("x1", "nothing to show", "mystery")]
    assert about_user(only_unknown, DEFAULT_CATEGORIES, budget=500) == Block("", 0, [])
    nothing_fits = about_user(SEED_004_FACTS, DEFAULT_CATEGORIES, budget=10)
    assert (nothing_fits.text, nothing_fits.tokens, nothing_fits.memory_ids) == ("", 0, [])
    assert nothing_fits.needed > 10  # what matched needs more: the reply says how much


@pytest.mark.parametrize(
    ("context", "used", "reserve", "budget"),
    [
        (8192, 1000, 1024, 500),
        (4096, 2000, 1000, 274),
        (2048, 800, 512, 184),
        (2000, 0, 0, 500),
        (1000, 200, 200, 150),
        (1024, 900, 100, 150),
        (1024, 2000, 512, 150),
        (None, 5000, 1000, 2000),
    ],
    ids=["clamped-max", "quarter", "quarter-small", "exact-max", "exact-min", "clamped-min",
         "overfull", "unknown-context"],
)  # fmt: skip
def test_about_user_budget_is_a_quarter_of_the_remaining_context_within_150_to_500(
    context: int | None, used: int, reserve: int, budget: int
) -> None:
    assert about_user_budget(context, used, reserve) == budget


@pytest.mark.parametrize(
    ("text", "clipped"),
    [
        ("one two three", "one two three"),  # exactly the limit: kept whole
        ("one two, three four", "one two…"),  # cut at the last word, punctuation dropped
        ("abcdefghijklmnop", "abcdefghijkl…"),  # no space in the second half: cut mid-word
        ("abcdefghij klmnopq", "abcdefghij…"),
        ("abcde fghijklmnop", "abcde fghijk…"),  # a space in the first half is not used
        ("abcdefghijkXmnopq", "abcdefghijkX…"),  # only spaces and , ; : are trimmed
    ],
)
def test_a_note_is_clipped_at_a_word_to_the_limit_with_an_ellipsis(text: str, clipped: str) -> None:
    assert clip_note(text, 13) == clipped
    assert len(clip_note(text, 13)) <= 13


def test_an_app_block_exactly_at_its_character_cap_keeps_every_note() -> None:
    day = datetime(2025, 10, 10, tzinfo=UTC)
    notes = [note("n_a", "First.", day), note("n_b", "Second.", day)]
    whole = app_memories("Chat", notes)
    assert app_memories("Chat", notes, max_chars=len(whole.text)).memory_ids == ["n_a", "n_b"]
    assert len(app_memories("Chat", notes, max_chars=len(whole.text) - 1).memory_ids) == 1


def test_newest_notes_break_update_ties_by_newest_creation_then_limit() -> None:
    day = datetime(2025, 10, 10, tzinfo=UTC)
    older = note("n_a", "Older.", day - timedelta(days=1))
    newer = note("n_b", "Newer.", day)
    same_update = [AppNote(**{**_fields(n), "updated_at": day}) for n in (older, newer)]
    assert [n.id for n in newest_notes(same_update)] == ["n_b", "n_a"]
    assert [n.id for n in newest_notes(same_update, limit=1)] == ["n_b"]


def _fields(n: AppNote) -> dict[str, Any]:
    return {f: getattr(n, f) for f in n.__struct_fields__}


def test_the_about_user_budget_is_a_whole_number_of_tokens() -> None:
    budget = about_user_budget(4096, 1000, reserve_for_reply=1024)  # 2072 / 4 = 518 -> 500
    assert budget == 500
    odd = about_user_budget(3000, 1000, reserve_for_reply=1)  # 1999 // 4 = 499
    assert (odd, type(odd)) == (499, int)


# The budget a block names when what matched does not fit (``Block.needed``): the least
# that shows its first part, in whole tokens; 0 when there is nothing to show, or it fits.


@pytest.mark.parametrize(
    ("profile", "facts", "needed"),
    [
        # No profile: the "Facts:" section with the best fact (31 characters, 8 tokens).
        (None, [fact("f1", "x")], 8),
        (None, [fact("f1", "x", confidence=0.5), fact("f2", "y")], 8),
        # A profile: its first character and the cut mark, "U\n..." (2 tokens).
        (UserProfile(user_id="u1", work="Nurse"), [], 2),
        (UserProfile(user_id="u1", work="Nurse"), [fact("f1", "x")], 2),
        (None, [], 0),
    ],
)
def test_user_context_over_its_budget_names_the_budget_of_its_first_part(
    profile: UserProfile | None, facts: list[Fact], needed: int
) -> None:
    assert user_context(profile, facts, max_tokens=1).needed == needed
    if needed:
        assert user_context(profile, facts, max_tokens=needed).text
        assert not user_context(profile, facts, max_tokens=needed - 1).text


@pytest.mark.parametrize(
    ("content", "needed"),
    [
        # The heading line (17 characters) and "\n## Key Facts\n{line}\n": 75 characters.
        ("x", 19),
        ("xy", 19),  # 76: exactly 19 tokens
        ("xyz", 20),  # 77: rounded up
    ],
)
def test_memory_context_names_the_whole_tokens_its_first_fact_needs(
    content: str, needed: int
) -> None:
    facts = [fact("f1", content)]
    assert memory_context(facts, token_budget=1).needed == needed
    enough = memory_context(facts, token_budget=needed)
    assert (enough.memory_ids, enough.needed) == (["f1"], 0)
    assert memory_context(facts, token_budget=needed - 1).memory_ids == []


def test_a_memory_context_filling_its_budget_to_the_character_keeps_its_fact() -> None:
    block = memory_context([fact("f1", "xy")], token_budget=19)
    assert (
        block.text
        == "# Memory Context\n\n## Key Facts\n- [user] [preference]: xy (confidence: 0.90)\n"
    )
    assert len(block.text) == 19 * 4


@pytest.mark.parametrize("budget", [0, 1, 4, 5, 100])
def test_an_empty_memory_context_needs_no_budget(budget: int) -> None:
    assert memory_context([], token_budget=budget).needed == 0
