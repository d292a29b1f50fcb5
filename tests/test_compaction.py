"""Seed 004's two-stage prompt compaction at 80 % of the model context."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.compaction import Compacted, clip_middle, compact, trim_history
from memory.tokens import estimate_tokens
from schemas.llm import PromptMessage
from schemas.records import Fact

T0 = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


def fact(
    fact_id: str,
    category: str,
    confidence: float = 0.9,
    *,
    pinned: bool = False,
    created: datetime = T0,
    content: str | None = None,
) -> Fact:
    """A fact whose content is 40 characters (10 tokens) unless given."""
    return Fact(
        id=fact_id,
        user_id="u1",
        content=content if content is not None else f"{fact_id:<40}",
        category=category,
        confidence=confidence,
        created_at=created,
        updated_at=created,
        last_seen=created,
        last_confirmed_at=None,
        pinned=pinned,
    )


def exchange(turns: int) -> list[PromptMessage]:
    """``turns`` user/assistant pairs, each message 40 characters (10 tokens)."""
    messages = []
    for turn in range(1, turns + 1):
        messages.append(PromptMessage("user", f"{'u' + str(turn):<40}"))
        messages.append(PromptMessage("assistant", f"{'a' + str(turn):<40}"))
    return messages


def names(messages: list[PromptMessage]) -> list[str]:
    return [message.content.strip() for message in messages]


def ids(facts: list[Fact]) -> list[str]:
    return [f.id for f in facts]


def test_under_the_threshold_nothing_changes() -> None:
    history = exchange(6)  # 120 tokens
    facts = [fact("i1", "identity"), fact("r1", "preference")]
    result = compact(history, facts, system_tokens=100, context_tokens=1000)
    assert result == Compacted(history, facts, 0, 0, 0, 240)


def test_reaching_exactly_the_threshold_compacts() -> None:
    history = exchange(6)  # 120 tokens; 0.8 * 150 = 120
    result = compact(history, [], system_tokens=0, context_tokens=150)
    assert result.stage == 1
    just_under = compact(history, [], system_tokens=0, context_tokens=151)
    assert just_under.stage == 0


def test_stage_one_keeps_first_exchange_and_last_six_messages_in_order() -> None:
    history = exchange(6)
    facts = [fact("i1", "identity")]
    result = compact(history, facts, system_tokens=20, context_tokens=180)  # 150 >= 144
    assert names(result.history) == ["u1", "a1", "u4", "a4", "u5", "a5", "u6", "a6"]
    assert (result.trimmed_messages, result.stage, result.tokens) == (4, 1, 110)
    assert result.facts == facts
    assert result.dropped_facts == 0


def test_keep_last_is_configurable() -> None:
    result = compact(
        exchange(5), [], system_tokens=0, context_tokens=10_000, threshold=0.001, keep_last=2
    )
    assert names(result.history) == ["u1", "a1", "u5", "a5"]
    assert result.trimmed_messages == 6


def test_first_exchange_starts_at_the_first_user_message() -> None:
    greeting = PromptMessage("assistant", "Hi! How can I help?")
    history = [greeting, *exchange(5)]
    assert names(trim_history(history)) == ["u1", "a1", "u3", "a3", "u4", "a4", "u5", "a5"]


def test_first_exchange_without_an_assistant_reply_is_the_user_message_alone() -> None:
    history = [PromptMessage("user", "first"), PromptMessage("user", "again"), *exchange(4)]
    kept = trim_history(history, keep_last=2)
    assert names(kept) == ["first", "u4", "a4"]


def test_short_history_overlapping_first_exchange_is_kept_whole() -> None:
    history = exchange(4)  # first exchange + last 6 cover all 8
    assert trim_history(history) == history
    assert trim_history([]) == []


def test_stage_two_drops_identity_then_halves_preferences_keeping_high_confidence() -> None:
    history = exchange(4)  # 80 tokens, nothing to trim
    facts = [
        fact("i1", "identity"),
        fact("r1", "preference", 0.9),
        fact("r2", "preference", 0.6),
        fact("j1", "project", 0.3),
        fact("r3", "preference", 0.8),
        fact("r4", "preference", 0.5),
        fact("k1", "knowledge", 0.2),
    ]
    # 150 tokens >= 0.8 * 160 = 128; without identity 140, still over; halved 120.
    result = compact(history, facts, system_tokens=0, context_tokens=160)
    assert ids(result.facts) == ["r1", "j1", "r3", "k1"]
    assert (result.stage, result.trimmed_messages, result.dropped_facts) == (2, 0, 3)
    assert result.tokens == 120
    assert result.history == history


def test_stage_two_stops_after_dropping_identity_when_that_is_enough() -> None:
    facts = [fact("i1", "identity"), fact("i2", "identity"), fact("r1", "preference", 0.2)]
    facts += [fact("r2", "preference", 0.1), fact("j1", "project")]
    # 80 + 50 = 130 >= 0.8 * 150 = 120; without identity 110.
    result = compact(exchange(4), facts, system_tokens=0, context_tokens=150)
    assert ids(result.facts) == ["r1", "r2", "j1"]
    assert (result.stage, result.dropped_facts, result.tokens) == (2, 2, 110)


def test_stage_two_runs_after_stage_one_when_trimming_is_not_enough() -> None:
    facts = [fact("i1", "identity"), fact("r1", "preference")]
    result = compact(exchange(6), facts, system_tokens=0, context_tokens=100)
    assert names(result.history) == ["u1", "a1", "u4", "a4", "u5", "a5", "u6", "a6"]
    assert (result.trimmed_messages, result.dropped_facts, result.stage) == (4, 1, 2)
    assert ids(result.facts) == ["r1"]  # one unpinned preference: its half rounds up to 1


def test_pinned_facts_survive_stage_two() -> None:
    facts = [
        fact("i1", "identity", pinned=True),
        fact("i2", "identity"),
        fact("r1", "preference", 0.1, pinned=True),
        fact("r2", "preference", 0.9),
        fact("r3", "preference", 0.2),
    ]
    result = compact(exchange(4), facts, system_tokens=0, context_tokens=10_000, threshold=0.001)
    assert ids(result.facts) == ["i1", "r1", "r2"]
    assert result.dropped_facts == 2
    assert result.stage == 2


def test_halving_breaks_confidence_ties_by_newest_then_lowest_id() -> None:
    older = T0 - timedelta(days=3)
    facts = [
        fact("r_old", "preference", 0.7, created=older),
        fact("r_b", "preference", 0.7),
        fact("r_a", "preference", 0.7),
        fact("r_c", "preference", 0.7, created=older),
    ]
    result = compact([], facts, system_tokens=0, context_tokens=10_000, threshold=0.001)
    assert ids(result.facts) == ["r_b", "r_a"]


def test_memory_that_cannot_shrink_further_is_reported_still_over() -> None:
    facts = [fact("j1", "project"), fact("k1", "knowledge")]
    result = compact(exchange(2), facts, system_tokens=500, context_tokens=600)
    assert result.facts == facts
    assert (result.stage, result.dropped_facts, result.tokens) == (2, 0, 560)


def test_a_prompt_still_over_the_whole_context_drops_extras_then_old_messages() -> None:
    facts = [fact("j1", "project"), fact("k1", "knowledge")]  # 10 tokens each
    result = compact(
        exchange(2), facts, system_tokens=500, context_tokens=545, extra_tokens=300
    )  # exchange(2): 4 messages of 10 tokens
    assert (result.stage, result.keep_extra) == (3, False)
    assert names(result.history) == ["u2", "a2"]  # oldest first until it fits
    assert result.facts == facts
    assert result.tokens == 540


def test_a_single_huge_message_is_clipped_in_the_middle_to_fit() -> None:
    huge = PromptMessage("user", "start " + "word " * 5000 + "end")
    result = compact([huge], [fact("j1", "project")], system_tokens=100, context_tokens=1000)
    assert result.stage == 3
    assert result.facts == []
    [clipped] = result.history
    assert clipped.content.startswith("start word")
    assert clipped.content.endswith("word end")
    assert "…" in clipped.content
    assert result.tokens <= 1000
    assert estimate_tokens(clipped.content) + 100 == result.tokens


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), max_size=30),
    fact_sizes=st.lists(st.integers(1, 200), max_size=20),
    system=st.integers(0, 2000),
    extra=st.integers(0, 2000),
    context=st.integers(2001, 16_000),
)
def test_the_prompt_never_overflows_the_model_context(
    sizes: list[int], fact_sizes: list[int], system: int, extra: int, context: int
) -> None:
    history = [
        PromptMessage("user" if i % 2 == 0 else "assistant", "w " * n) for i, n in enumerate(sizes)
    ]
    facts = [fact(f"f{i}", "project", content="w " * n) for i, n in enumerate(fact_sizes)]
    result = compact(
        history, facts, system_tokens=system, context_tokens=context, extra_tokens=extra
    )
    shown = sum(estimate_tokens(m.content) for m in result.history)
    shown += sum(estimate_tokens(f.content) for f in result.facts)
    total = system + shown + (extra if result.keep_extra else 0)
    assert total == result.tokens <= context
    if history:
        assert result.history, "the newest message always stays"


@pytest.mark.parametrize(
    ("threshold", "keep_last"),
    [(0.0, 6), (1.5, 6), (0.8, -1)],
    ids=["zero-threshold", "threshold-above-one", "negative-keep-last"],
)
def test_invalid_threshold_or_keep_last_is_rejected(threshold: float, keep_last: int) -> None:
    with pytest.raises(ValueError, match="must"):
        compact(
            [], [], system_tokens=0, context_tokens=100, threshold=threshold, keep_last=keep_last
        )


# -- boundaries, one by one --------------------------------------------------------------


def _said(role: Literal["user", "assistant"], tokens: int) -> PromptMessage:
    return PromptMessage(role, "abcd" * tokens)  # four ASCII characters a token


def test_clipping_keeps_the_longest_head_and_tail_that_fit_around_the_ellipsis() -> None:
    text = "0123456789" * 4  # 10 tokens
    # 5 tokens hold 20 characters: 19 of the text (10 head, 9 tail) and the ellipsis.
    assert clip_middle(text, 5) == "0123456789…123456789"
    assert clip_middle(text, 10) == text  # exactly fits: untouched
    assert clip_middle(text, 0) == ""


def test_the_first_message_stays_when_the_history_is_shorter_than_keep_last() -> None:
    history = [_said("assistant", 1), _said("user", 1), _said("assistant", 1)]
    assert trim_history(history, keep_last=6) == history


def test_the_first_exchange_stays_even_with_nothing_else_kept() -> None:
    history = [_said("user", 1), _said("assistant", 2)]
    assert trim_history(history, keep_last=0) == history


def test_a_threshold_of_one_and_keep_last_of_zero_are_allowed() -> None:
    result = compact([], [], system_tokens=0, context_tokens=100, threshold=1.0, keep_last=0)
    assert result.stage == 0


def test_a_prompt_exactly_at_the_threshold_is_compacted() -> None:
    history = [_said("user", 10), *(_said("assistant", 10) for _ in range(8))]  # 90 tokens
    at = compact(history, [], system_tokens=10, context_tokens=125, threshold=0.8)
    assert (at.stage, at.tokens) == (1, 90)  # 100 = 0.8 x 125: the third message goes
    below = compact(history, [], system_tokens=9, context_tokens=125, threshold=0.8)
    assert below.stage == 0


def test_three_unpinned_preferences_are_halved_to_the_two_surest() -> None:
    prefs = [fact(f"p{n}", "preference", confidence=c) for n, c in enumerate([0.9, 0.6, 0.8])]
    result = compact(
        [_said("user", 10)], prefs, system_tokens=60, context_tokens=120, threshold=0.5
    )
    assert [f.id for f in result.facts] == ["p0", "p2"]
    assert result.stage == 2


def test_memory_that_fills_the_context_exactly_stops_at_stage_2() -> None:
    prefs = [fact("p0", "project")]  # 10 tokens, never dropped
    result = compact(
        [_said("user", 10)], prefs, system_tokens=80, context_tokens=100, extra_tokens=0
    )
    assert (result.stage, result.tokens, result.keep_extra) == (2, 100, True)


def test_optional_blocks_that_fill_the_context_exactly_are_kept() -> None:
    result = compact(
        [_said("user", 10), _said("assistant", 10)],
        [],
        system_tokens=70,
        context_tokens=100,
        extra_tokens=30,
    )
    assert result.keep_extra is False  # 110 > 100: they go
    fits = compact(
        [_said("user", 10), _said("assistant", 10)],
        [],
        system_tokens=60,
        context_tokens=100,
        extra_tokens=20,
    )
    assert (fits.keep_extra, fits.tokens, len(fits.history)) == (True, 100, 2)


def test_stage_3_drops_old_messages_until_the_rest_fits_exactly() -> None:
    history = [_said("user", 30), _said("assistant", 30), _said("user", 40)]
    result = compact(history, [], system_tokens=60, context_tokens=100, keep_last=6)
    assert result.stage == 3
    assert result.history == [history[2]]  # 60 + 40 = 100: fits, nothing clipped
    assert (result.tokens, result.trimmed_messages, result.dropped_facts) == (100, 2, 0)


def test_stage_3_keeps_facts_that_fit_exactly_once_the_optional_blocks_are_gone() -> None:
    project = fact("p0", "project")  # 10 tokens
    result = compact(
        [_said("user", 20)], [project], system_tokens=50, context_tokens=80, extra_tokens=20
    )
    assert (result.stage, result.keep_extra, result.facts) == (3, False, [project])
    assert (result.tokens, result.dropped_facts) == (80, 0)


def test_stage_3_drops_every_fact_when_the_newest_message_alone_fills_the_context() -> None:
    facts = [fact("p0", "project"), fact("p1", "project")]
    result = compact([_said("user", 40)], facts, system_tokens=60, context_tokens=100)
    assert (result.facts, result.dropped_facts, result.tokens) == ([], 2, 100)


def test_a_prompt_one_token_over_gets_its_newest_message_clipped() -> None:
    result = compact([_said("user", 41)], [], system_tokens=60, context_tokens=100)
    [last] = result.history
    assert estimate_tokens(last.content) == 40


def test_a_system_prompt_filling_the_context_leaves_the_newest_message_empty() -> None:
    result = compact([_said("user", 10)], [], system_tokens=100, context_tokens=100)
    assert [m.content for m in result.history] == [""]


def test_trimming_down_to_exactly_the_threshold_goes_on_to_stage_2() -> None:
    history = [_said("user", 10), *(_said("assistant", 10) for _ in range(8))]  # 90 tokens
    result = compact(history, [], system_tokens=20, context_tokens=125, threshold=0.8)
    assert (result.stage, result.tokens) == (2, 100)  # 20 + 80 = 100 = 0.8 x 125


def test_stage_3_clips_the_newest_message_to_the_room_left_keeping_its_role() -> None:
    history = [_said("assistant", 30), _said("user", 50)]
    result = compact(history, [], system_tokens=60, context_tokens=100, keep_last=6)
    [last] = result.history
    assert last.role == "user"
    assert estimate_tokens(last.content) == 40
    assert result.tokens == 100


def test_stage_3_stops_dropping_messages_once_the_rest_fits_exactly() -> None:
    history = [_said("user", 30), _said("assistant", 20), _said("user", 20)]
    result = compact(history, [], system_tokens=60, context_tokens=100, keep_last=6)
    assert result.history == history[1:]  # 60 + 20 + 20 = 100
    assert (result.stage, result.tokens, result.trimmed_messages) == (3, 100, 1)


def test_preferences_are_halved_when_dropping_identity_lands_exactly_on_the_threshold() -> None:
    facts = [fact("i0", "identity"), fact("p0", "preference", 0.9), fact("p1", "preference", 0.8)]
    # 50 + 10 + 3 x 10 = 90 >= 80; without identity 80: still at the threshold, so halve.
    result = compact([_said("user", 10)], facts, system_tokens=50, context_tokens=100)
    assert [f.id for f in result.facts] == ["p0"]
    assert (result.stage, result.tokens) == (2, 70)
