"""``memory.when``: the time a query is anchored to; ``memory.ranking``'s readings of a
query: ``asks_assistant`` and ``gathers``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.ranking import asks_assistant, gathers
from memory.when import anchor_of

NOW = datetime(2024, 3, 18, 12, tzinfo=UTC)


def day(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("query", "inside", "outside"),
    [
        ("What did I cook two weeks ago?", "2024-03-04", "2024-02-01"),
        ("What did I buy last month?", "2024-02-10", "2023-12-01"),
        ("Which books did I read in the past three months?", "2024-01-01", "2023-11-01"),
        ("Who did I meet yesterday?", "2024-03-17T09:00", "2024-03-10"),
        ("Which sports events did I watch in January?", "2024-01-20", "2024-02-20"),
        ("Where did I travel in 2023?", "2023-06-01", "2024-02-01"),
        ("三天前我吃了什么?", "2024-03-15", "2024-03-01"),
        ("上个月我去了哪里?", "2024-02-10", "2023-12-01"),
        ("两周前我见了谁?", "2024-03-04", "2024-02-01"),
    ],
)
def test_a_query_naming_a_time_is_anchored_to_that_span(
    query: str, inside: str, outside: str
) -> None:
    anchor = anchor_of(query, NOW)
    assert anchor.holds(day(inside))
    assert not anchor.holds(day(outside))


@pytest.mark.parametrize(
    "query",
    [
        "Where do I currently live?",
        "How many pages have I read so far?",
        "我最近在读什么书?",
        "我现在住在哪里?",
    ],
)
def test_a_query_asking_what_is_true_now_is_recent_without_a_span(query: str) -> None:
    anchor = anchor_of(query, NOW)
    assert anchor.recent
    assert not anchor.spans


@pytest.mark.parametrize(
    "query",
    [
        "What is the order of the museums I visited from earliest to latest?",
        "How many days ago did I go rafting?",
        "What is my favourite tea?",
    ],
)
def test_a_query_without_time_words_has_no_anchor(query: str) -> None:
    anchor = anchor_of(query, NOW)
    assert not anchor.spans
    assert not anchor.recent


@pytest.mark.parametrize(
    ("query", "about_assistant"),
    [
        ("What name did you suggest for my puppy?", True),
        ("Remind me what you told me about the Eiffel Tower", True),
        ("Can you remind me of your recommendation for a hotel in Rome?", True),
        ("你建议我读哪本书?", True),
        ("Where does my sister live?", False),
        ("Can you suggest some activities for my commute?", False),
        ("What did I tell you about my job?", False),
    ],
)
def test_questions_about_what_the_assistant_said_are_told_apart(
    query: str, about_assistant: bool
) -> None:
    assert asks_assistant(query) is about_assistant


@pytest.mark.parametrize(
    ("query", "several"),
    [
        ("How many bikes have I bought in total?", True),
        ("How much more did I spend in Tokyo compared to Osaka?", True),
        ("Which did I start first, the pottery class or the choir?", True),
        ("What is the order of the trips I took this spring?", True),
        ("What is the average price of the hotels I booked?", True),
        ("我一共去过几次巴黎?", True),
        ("How many days ago did I go hiking?", False),
        ("Where does my sister live?", False),
        ("What did I order at the Thai place?", False),
        ("In what order did I visit the museums?", True),
        ("Which book did I finish last week?", False),
        ("我妹妹住在哪里?", False),
    ],
)
def test_questions_that_gather_several_conversations_are_told_apart(
    query: str, several: bool
) -> None:
    assert gathers(query) is several


@pytest.mark.parametrize(
    ("query", "past"),
    [
        ("When did Caroline go to the support group?", True),
        ("What was my previous goal?", True),
        ("我上周买了什么?", True),
        ("How many bikes do I have?", False),
        ("How much did I earn on my most recent visit?", False),
        ("Where do I currently keep my old sneakers?", False),
    ],
)
def test_a_question_in_the_past_tense_asks_about_the_past_unless_it_asks_what_is_recent(
    query: str, past: bool
) -> None:
    assert anchor_of(query, NOW).past is past


def test_have_had_is_the_present_perfect_not_the_past() -> None:
    assert not anchor_of("How long have I had my cat, Luna?", NOW).past
    assert anchor_of("What pet had I as a child?", NOW).past
