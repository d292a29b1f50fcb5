"""Pure domain logic: working memory, token estimate, recalled-context text, rate limiting,
the bounds on client JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.json_bounds import (
    INT_MAX,
    INT_MIN,
    MAX_DEPTH,
    check_bounds,
    check_depth,
    depth_bound,
)
from memory.keys import STATEMENT_WEIGHT, mixed, statement_text
from memory.ratelimit import TokenBucket
from memory.recall import (
    ALONE_CHARS,
    CONTEXT_CHARS,
    HEADING,
    KEY_CHARS,
    format_recalled,
    key_text,
    key_text_of_stored,
    search_text,
)
from memory.rules_extractor import extract_facts
from memory.tokens import estimate_tokens, is_cjk
from memory.working import (
    MAX_VARIABLES,
    MAX_VARIABLES_BYTES,
    apply_set,
    new_working_memory,
    record_message,
    set_problem,
)
from schemas.records import ArchivedMessage, WorkingMemory
from tests.hostile import nested
from tests.statements import YOGA, archived_turn

T0 = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


def test_working_memory_has_exactly_seed_001_fields() -> None:
    memory = new_working_memory("s1", T0)
    assert set(memory.__struct_fields__) == {
        "session_id",
        "current_topic",
        "context_variables",
        "turn_count",
        "last_emotion",
        "created_at",
        "updated_at",
    }


def test_first_message_creates_memory_with_turn_one_and_equal_timestamps() -> None:
    memory = record_message(None, "s1", T0)
    assert (memory.session_id, memory.turn_count) == ("s1", 1)
    assert memory.created_at == memory.updated_at == T0
    assert memory.current_topic is None
    assert memory.context_variables == {}


def test_a_new_working_memory_is_created_and_updated_at_the_moment_given() -> None:
    memory = new_working_memory("s1", T0)
    assert (memory.created_at, memory.updated_at, memory.turn_count) == (T0, T0, 0)


def test_each_message_increments_turn_and_updates_only_updated_at() -> None:
    later = T0 + timedelta(minutes=3)
    memory = record_message(record_message(None, "s1", T0), "s1", later)
    assert memory.turn_count == 2
    assert (memory.created_at, memory.updated_at) == (T0, later)


def test_set_merges_variables_removes_nulls_and_keeps_turn_count() -> None:
    memory = apply_set(record_message(None, "s1", T0), "s1", T0, variables={"a": 1, "b": 2})
    memory = apply_set(memory, "s1", T0, topic="tea", variables={"b": None, "c": [3]})
    assert memory.context_variables == {"a": 1, "c": [3]}
    assert memory.current_topic == "tea"
    assert memory.turn_count == 1
    emotional = apply_set(memory, "s1", T0, emotion="happy")
    assert (emotional.last_emotion, emotional.current_topic) == ("happy", "tea")


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("abcd", 1), ("abcde", 2), ("我喜欢茶", 4), ("我喜欢 Python", 3 + 2)],
    ids=["empty", "four-latin", "five-latin", "four-han", "mixed"],
)
def test_token_estimate_counts_han_characters_and_latin_quarters(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def _message(n: int, text: str) -> ArchivedMessage:
    return ArchivedMessage(
        id=f"msg_{n:016x}",
        user_id="u",
        session_id="s",
        scope="global",
        turn=n,
        role="user",
        speaker="user",
        text=text,
        at=T0,
    )


def test_recalled_block_lists_dated_lines_in_given_order() -> None:
    block = format_recalled(
        [_message(2, "I like  tea\nvery much"), _message(1, "I live in Oslo")], 100
    )
    assert block.text == (
        f"{HEADING}\n- [2026-05-01] user: I like tea very much\n- [2026-05-01] user: I live in Oslo"
    )
    assert block.memory_ids == ["msg_0000000000000002", "msg_0000000000000001"]
    assert block.tokens == estimate_tokens(HEADING) + sum(
        estimate_tokens(line) + 1 for line in block.text.split("\n")[1:]
    )


def test_recalled_block_shows_a_superseded_message_as_the_earlier_state() -> None:
    newer = msgspec.structs.replace(
        _message(2, "I have four bikes now"), at=T0 + timedelta(days=60)
    )
    older = msgspec.structs.replace(_message(1, "I have three bikes"), superseded_by=newer.id)
    block = format_recalled([newer, older], 100)
    assert block.text.split("\n")[1:] == [
        "- [2026-06-30] user: I have four bikes now",
        "- [2026-05-01] user (earlier: said otherwise on 2026-06-30): I have three bikes",
    ]
    alone = format_recalled([older], 100)
    assert alone.text.split("\n")[1] == (
        "- [2026-05-01] user (earlier: said otherwise since): I have three bikes"
    )


def test_recalled_block_skips_what_does_not_fit_and_never_exceeds_budget() -> None:
    long, short = _message(1, "x" * 400), _message(2, "short")
    block = format_recalled([long, short], 30)
    assert block.memory_ids == ["msg_0000000000000002"]
    assert block.tokens <= 30


def test_recalled_block_is_empty_without_messages() -> None:
    block = format_recalled([], 500)
    assert (block.text, block.tokens, block.memory_ids) == ("", 0, [])


def test_token_bucket_allows_a_burst_then_the_rate() -> None:
    bucket = TokenBucket(rate=2.0, burst=3.0, now=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.take(0.5)
    assert not bucket.take(0.5)
    assert [bucket.take(100.0) for _ in range(4)] == [True, True, True, False]


def test_spending_goes_into_debt_and_says_how_long_until_it_is_repaid() -> None:
    bucket = TokenBucket(rate=10.0, burst=15.0, now=0.0)
    assert bucket.spend(0.0, 25.0, limit=0.5) is None  # would owe 1 s: nothing spent
    assert bucket.spend(0.0, 10.0) == 0.0  # 5 left: no debt
    assert bucket.spend(0.0, 10.0, limit=0.5) == pytest.approx(0.5)  # 5 owed, the limit
    assert bucket.spend(1.0, 5.0) == 0.0  # repaid after 0.5 s, 5 more saved since
    assert bucket.spend(1.0, 10.0) == pytest.approx(1.0)
    assert TokenBucket(rate=0.5, burst=1.0, now=0.0).spend(0.0, 2.0) == pytest.approx(2.0)


def test_a_bucket_that_never_refills_spends_without_a_wait() -> None:
    bucket = TokenBucket(rate=0.0, burst=5.0, now=0.0)
    assert bucket.spend(0.0, 10.0) == 0.0
    assert not bucket.take(9.0)


def test_a_search_text_says_when_who_spoke_and_what_it_answered() -> None:
    answered = ArchivedMessage(
        id="msg_0000000000000001",
        user_id="u1",
        session_id="s1",
        scope="global",
        turn=2,
        role="other",
        speaker="Caroline",
        text="Yes,\n last   week!",
        at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        context="Melanie: " + "Did you go camping? " * 30,
    )
    text = search_text(answered)
    head = "[8 May 2023] Caroline: Yes, last week! (after "
    assert text.startswith(head + "Melanie: Did you go camping?")
    assert len(text) == len(head) + CONTEXT_CHARS + 1
    alone = msgspec.structs.replace(answered, context="")
    assert search_text(alone) == "[8 May 2023] Caroline: Yes, last week!"


def test_an_assistants_reply_is_keyed_by_its_opening_alone() -> None:
    text = "Here are ten museums in Vienna. " + "The Albertina has prints. " * 40
    reply = msgspec.structs.replace(
        archived_turn(text, role="assistant", speaker="assistant"),
        at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        context="user: Which museums should I see in Vienna?",
    )
    key = key_text(reply)
    assert key == "[8 May 2023] assistant: " + " ".join(text[:KEY_CHARS].split())
    # The full-text index keeps all of it, and what it answered.
    assert search_text(reply).endswith("(after user: Which museums should I see in Vienna?)")
    assert "The Albertina has prints. " * 10 in search_text(reply)
    # Read back, the message has lost its context; its key never had it.
    read_back = msgspec.structs.replace(reply, context="")
    assert key_text_of_stored(read_back, search_text(reply)) == key
    # A short reply is keyed by all its words, still without what it answered.
    short = msgspec.structs.replace(reply, text="Try the Albertina.")
    assert key_text(short) == "[8 May 2023] assistant: Try the Albertina."
    assert key_text_of_stored(short, search_text(short)) == key_text(short)


def test_the_users_long_message_is_keyed_by_all_its_words_without_what_it_answered() -> None:
    asked = "assistant: Anything else you would like to see?"
    long = msgspec.structs.replace(
        archived_turn("I went to the Albertina twice. " * 12), context=asked
    )
    assert len(long.text) > ALONE_CHARS
    assert key_text(long) == "[12 March 2024] Ann: " + " ".join(long.text.split())
    assert search_text(long).endswith(f"(after {asked})")  # the full-text index keeps it
    read_back = msgspec.structs.replace(long, context="")
    assert key_text_of_stored(read_back, search_text(long)) == key_text(long)
    # A short one means what it answered, and keeps it.
    short = msgspec.structs.replace(long, text="Yes, last week!")
    assert key_text(short) == search_text(short)
    assert key_text(short).endswith(f"(after {asked})")
    assert key_text_of_stored(short, search_text(short)) == search_text(short)


_CJK_RANGES = [
    (0x4E00, 0x9FFF),  # unified ideographs
    (0x3400, 0x4DBF),  # extension A
    (0x3040, 0x30FF),  # hiragana, katakana
    (0xAC00, 0xD7AF),  # hangul syllables
    (0xF900, 0xFAFF),  # compatibility ideographs
    (0x3000, 0x303F),  # CJK punctuation
    (0xFF00, 0xFFEF),  # full-width forms
]


@pytest.mark.parametrize(("first", "last"), _CJK_RANGES, ids=[hex(a) for a, _ in _CJK_RANGES])
def test_each_cjk_range_counts_from_its_first_to_its_last_character(first: int, last: int) -> None:
    assert is_cjk(chr(first))
    assert is_cjk(chr(last))
    # Both ends count one token each, as the estimator's character class says.
    assert estimate_tokens(chr(first) + chr(last)) == 2
    outside = [c for c in (first - 1, last + 1) if not any(a <= c <= b for a, b in _CJK_RANGES)]
    assert outside
    for code in outside:
        assert not is_cjk(chr(code))


def test_a_set_on_a_new_session_starts_its_working_memory_and_stamps_it() -> None:
    now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    memory = apply_set(None, "s7", now, variables={"city": "Oslo", "gone": None})
    assert (memory.session_id, memory.created_at, memory.updated_at) == ("s7", now, now)
    assert memory.context_variables == {"city": "Oslo"}
    later = now + timedelta(minutes=5)
    again = apply_set(memory, "s7", later, emotion="calm", variables={"city": None})
    assert (again.context_variables, again.last_emotion, again.updated_at) == ({}, "calm", later)
    assert apply_set(again, "s7", later).last_emotion == "calm"


def _holding(count: int) -> WorkingMemory:
    variables = {f"k{i}": i for i in range(count)}
    return apply_set(None, "s1", T0, variables=variables)


def test_a_set_is_refused_only_past_the_number_of_variables_a_session_holds() -> None:
    assert set_problem(None, {}) is None
    assert set_problem(None, {"new": 1}) is None
    assert set_problem(_holding(MAX_VARIABLES - 1), {"new": 1}) is None
    full = _holding(MAX_VARIABLES)
    assert (
        set_problem(full, {"new": 1})
        == f"a session holds at most {MAX_VARIABLES} context variables"
    )
    too_many = {f"n{i}": i for i in range(MAX_VARIABLES + 1)}
    assert set_problem(None, too_many) is not None


def test_a_null_in_a_set_frees_the_place_of_the_variable_it_removes() -> None:
    full = _holding(MAX_VARIABLES)
    assert set_problem(full, {"k0": None, "new": 1}) is None
    assert set_problem(full, {"absent": None}) is None
    assert set_problem(None, {"absent": None}) is None
    assert set_problem(full, {"k0": 5}) is None  # a new value of one held: no new place


def test_a_set_is_refused_past_the_bytes_of_json_its_variables_take() -> None:
    fits = "x" * (MAX_VARIABLES_BYTES - len(b'{"a":""}'))  # exactly the bound
    assert set_problem(None, {"a": fits}) is None
    assert set_problem(_holding(1), {"k0": None, "a": fits}) is None
    too_big = f"a session's context variables take at most {MAX_VARIABLES_BYTES} bytes of JSON"
    assert set_problem(None, {"a": fits + "x"}) == too_big
    assert set_problem(_holding(1), {"a": fits}) == too_big  # what it holds counts too


def _about(text: str) -> list[tuple[str, str, str]]:
    return [(f.subject, f.predicate, f.value) for f in extract_facts(text)]


def test_a_relative_named_earlier_in_a_message_is_found_again_by_the_name_alone() -> None:
    facts = extract_facts("My sister Ana lives in Lyon. Ana likes tea.")
    assert [(f.subject, f.content) for f in facts] == [
        ("Ana", "User's sister Ana lives in Lyon"),
        ("Ana", "User's sister Ana likes tea"),
    ]


def test_two_people_of_one_name_keep_the_relation_each_was_introduced_with() -> None:
    facts = extract_facts("My sister Ana lives in Lyon. My friend Ana loves jazz.")
    assert [f.content for f in facts] == [
        "User's sister Ana lives in Lyon",
        "User's friend Ana loves jazz",
    ]


def test_a_chinese_clause_after_an_english_one_about_a_relative_is_about_that_relative() -> None:
    # The full-width comma (RUF001) is the point: Chinese punctuation after English text.
    assert ("Ana", "likes", "猫") in _about("My sister Ana lives in Lyon，喜欢猫。")  # noqa: RUF001


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (INT_MAX, True),
        (INT_MIN, True),
        (INT_MAX + 1, False),
        (INT_MIN - 1, False),
        (10**40, False),
        (-(10**40), False),
        (nested(MAX_DEPTH - 1), True),
        (nested(MAX_DEPTH), False),
        (nested(200), False),
        ({"text": "[" * 100 + "12345678901234567890123"}, True),
        ([1.5e300, 1.2345678901234567890123e10, 12345678901234567.5], True),
    ],
    ids=[
        "max-int",
        "min-int",
        "max-int-plus-1",
        "min-int-minus-1",
        "huge",
        "huge-negative",
        "deepest",
        "one-deeper",
        "far-deeper",
        "brackets-and-digits-in-a-string",
        "floats",
    ],
)
def test_json_bounds_take_nesting_and_integers_outside_strings(value: Any, ok: bool) -> None:
    raw = json.dumps([value]).encode()  # the list is level 1
    if ok:
        check_bounds(raw)
    else:
        with pytest.raises(ValueError, match=r"nested deeper|out of range"):
            check_bounds(raw)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


_tricky = st.text(alphabet='[]{}"\\ab\n', max_size=8)
_nestable = st.recursive(
    st.one_of(_tricky, st.integers(), st.none()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_tricky, inner, max_size=3)
    ),
    max_leaves=20,
)


@given(value=_nestable, extra=st.integers(0, 60))
def test_depth_bound_counts_brackets_outside_strings_only(value: Any, extra: int) -> None:
    wrapped: Any = value
    for _ in range(extra):
        wrapped = [wrapped, ']]]\\"[[[']
    real = _depth(wrapped)
    bound = depth_bound(json.dumps(wrapped).encode())
    if real > MAX_DEPTH:
        assert bound == real
    else:
        assert bound <= MAX_DEPTH


@pytest.mark.parametrize(
    "raw",
    [b'"' + b"\\" * 5000 + b"[" * 5000, b'"\\"' * 20000, b"[" * 60000, b"\\" * 60000 + b'"'],
    ids=["backslashes", "escaped-quotes", "brackets", "backslash-run"],
)
def test_depth_bound_takes_any_bytes(raw: bytes) -> None:
    assert depth_bound(raw) >= 0


def test_brackets_in_a_string_do_not_count_wherever_it_starts_and_however_it_ends() -> None:
    brackets = "[" * (MAX_DEPTH + 8)
    check_depth(json.dumps(brackets).encode())  # a string at the very start
    check_depth(json.dumps([brackets]).encode())  # a string right after the first bracket
    with pytest.raises(ValueError, match="nested deeper"):  # a string ending in a backslash
        check_depth(json.dumps(["\\", nested(MAX_DEPTH)]).encode())


def test_nested_objects_count_like_nested_arrays() -> None:
    deep: Any = 1
    for _ in range(MAX_DEPTH):
        deep = {"a": deep}
    assert depth_bound(json.dumps(deep).encode()) == MAX_DEPTH
    with pytest.raises(ValueError, match="nested deeper"):
        check_depth(json.dumps({"a": deep}).encode())


# memory.keys: what an archived turn is found by (its search through a server:
# tests/test_statement_keys.py).


def test_a_users_message_is_keyed_by_what_they_say_of_themselves_and_a_reply_by_none() -> None:
    assert statement_text(archived_turn(YOGA)) == (
        "Ann: I have a report due Friday and a marketing campaign."
        " I attend yoga classes three times a week."
    )
    advice = "I think you should attend yoga classes three times a week."
    reply = archived_turn(advice, "assistant", "x")
    assert statement_text(reply) == ""
    news = "Guess what? I moved to Porto with my family in May!"
    other = archived_turn(news, "other", "Caroline")
    assert statement_text(other) == "Caroline: I moved to Porto with my family in May!"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Questions and requests are no statements, wherever the person is in them.
        ("Can you help me plan my week and my weekend too?", ""),
        ("Could you suggest a gift for my sister, who turns thirty", ""),
        (
            "I'm looking for a good tent. My old one leaks whenever it rains in the mountains.",
            "My old one leaks whenever it rains in the mountains.",
        ),
        (
            "I am wondering which is better; I prefer the light ones for long hikes.",
            "I prefer the light ones for long hikes.",
        ),
        ("Do you know my name and my address by now", ""),
        (
            "Please remind me tomorrow morning. We moved house last weekend, to Leeds.",
            "We moved house last weekend, to Leeds.",
        ),
        (
            "What is my schedule like next week? Mine is busy with two trips to Berlin.",
            "Mine is busy with two trips to Berlin.",
        ),
        ("I would like you to recommend a book about sailing", ""),
        # No one in the first person: nothing said of oneself.
        ("The weather is nice today. It rained a lot yesterday in the city.", ""),
        # Every sentence on its own; a line break ends one too.
        (
            "Thanks!\nI got a puppy last week from a shelter.\nHe is called Rex.",
            "I got a puppy last week from a shelter.",
        ),
        # Too short to say anything on its own.
        ("Yes, I did!", ""),
        ("I finished it myself.", ""),
        # Chinese: 我, and the same questions and requests.
        # Full-width punctuation (RUF001) is the point: it is how Chinese sentences end.
        ("我最近搬到了上海。你能推荐一些餐厅吗？我喜欢吃辣。", "我最近搬到了上海。 我喜欢吃辣。"),  # noqa: RUF001
        ("请帮我订一张去北京的火车票，我明天早上要出发。", ""),  # noqa: RUF001
        ("我下个月该买哪个手机比较好呢", ""),
        ("我有没有说过我的生日是几月几号", ""),
    ],
)
def test_the_statements_are_the_first_person_sentences_that_ask_nothing(
    text: str, expected: str
) -> None:
    assert statement_text(archived_turn(text)) == (f"Ann: {expected}" if expected else "")


def test_the_statements_vector_is_added_at_its_weight_and_the_sum_is_unit_length() -> None:
    text, statements = [1.0, 0.0], [0.0, 1.0]
    [keyed, plain] = mixed([text, text], [statements, None])
    expected = np.array([1.0, STATEMENT_WEIGHT]) / np.hypot(1.0, STATEMENT_WEIGHT)
    assert np.allclose(keyed, expected)
    assert plain == text
    assert mixed([[0.0, 0.0]], [[0.0, 0.0]]) == [[0.0, 0.0]]


@pytest.mark.parametrize(
    ("text", "statements", "vector"),
    [
        ([0.2, 0.0], [0.2, 0.0], [1.0, 0.0]),  # a short sum is stretched to unit length
        ([3.0, 4.0], [0.0, 0.0], [0.6, 0.8]),  # no statements' direction: the text's
        ([1.0, 0.0], [-0.5, 0.0], [0.0, 0.0]),  # a sum of zero stays zero (no division)
        ([0.0, 0.3], None, [0.0, 0.3]),  # no statements: the text's vector as it was
    ],
)
def test_a_keyed_vector_is_unit_length_unless_it_is_zero_or_has_no_statements(
    text: list[float], statements: list[float] | None, vector: list[float]
) -> None:
    [keyed] = mixed([text], [statements])
    assert keyed == pytest.approx(vector)


def test_a_text_vector_without_its_statements_vector_is_refused() -> None:
    with pytest.raises(ValueError, match="zip"):
        mixed([[1.0, 0.0], [0.0, 1.0]], [None])


# memory.recall: the budget a recalled block needs when nothing fits.

RANKED = [_message(1, "x" * 400), _message(2, "I live in Oslo"), _message(3, "Hi")]


@pytest.mark.parametrize(
    ("budget", "ids", "tokens", "needed"),
    [
        # Nothing fits: the heading (8 tokens) and the cheapest line with its newline (7).
        (5, [], 0, 15),
        (14, [], 0, 15),
        (15, ["msg_0000000000000003"], 15, 0),  # a line landing exactly on the budget fits
        (17, ["msg_0000000000000003"], 15, 0),
        (18, ["msg_0000000000000002"], 18, 0),  # the better one first, then no room
        (500, [m.id for m in RANKED], 8 + 107 + 10 + 7, 0),
    ],
)
def test_a_recalled_block_names_the_budget_of_its_cheapest_message_when_none_fits(
    budget: int, ids: list[str], tokens: int, needed: int
) -> None:
    block = format_recalled(RANKED, budget)
    assert (block.memory_ids, block.tokens, block.needed) == (ids, tokens, needed)


def test_no_recalled_message_needs_no_budget() -> None:
    assert format_recalled([], 0).needed == 0
    assert format_recalled([], 5).needed == 0
