"""``memory.when``: the time a query is anchored to; ``memory.ranking``'s readings of a
query: ``asks_assistant`` and ``gathers``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.ranking import asks_assistant, gathers
from memory.when import TimeAnchor, anchor_of, without_relative_time

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


# The spans, to the second. A query's time with minutes, seconds and microseconds: a
# calendar span starts at midnight whatever the time the question is asked.
ASKED = datetime(2024, 3, 18, 12, 34, 56, 789, tzinfo=UTC)
DAY_SECONDS = 86_400.0


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        # "N units ago": N units back for one unit, widened by half its length each side.
        ("What did I do 3 days ago?", 3.5, 1.5),
        ("What did I do 12 days ago?", 12.5, 10.5),
        ("What did I do a few days ago?", 3.5, 1.5),
        ("What did I do several days ago?", 4.5, 2.5),
        ("What did I cook two weeks ago?", 17.5, 3.5),
        ("Who did I meet a couple of weeks ago?", 17.5, 3.5),
        ("What did I buy a month ago?", 45.0, 0.0),  # capped at the query's time
        ("Where was I a year ago?", 547.5, 0.0),
        ("三天前我吃了什么?", 3.5, 1.5),
        ("3天前我吃了什么?", 3.5, 1.5),
        ("几天前我买了什么?", 3.5, 1.5),
        ("十天前我去了哪里?", 10.5, 8.5),
        ("十二天前我去了哪里?", 12.5, 10.5),
        ("二十天前我去了哪里?", 20.5, 18.5),
        ("两个星期前我见了谁?", 17.5, 3.5),
        ("半个月前我买了什么?", 22.5, 0.0),
        ("一年以前我在哪里?", 547.5, 0.0),
        # "the past N units": up to now, widened by half its length.
        ("What did I read in the past week?", 10.5, 0.0),
        ("What did I read over the last 3 months?", 135.0, 0.0),
        ("What did I eat the past two days?", 3.0, 0.0),
        ("What did I buy during the last year?", 547.5, 0.0),
        # "last unit": two of its units back; "this unit": one.
        ("What did I buy last week?", 14.0, 0.0),
        ("What did I buy last month?", 60.0, 0.0),
        ("What did I buy last year?", 730.0, 0.0),
        ("What did I do last weekend?", 14.0, 0.0),
        ("What did I buy this week?", 7.0, 0.0),
        ("What did I buy this month?", 30.0, 0.0),
        ("What did I buy this year?", 365.0, 0.0),
        ("What did I do this weekend?", 7.0, 0.0),
        ("What did I do last Monday?", 14.0, 0.0),
        ("Who did I meet yesterday?", 2.0, 0.0),
        ("前天我做了什么?", 3.0, 0.0),
        ("上周我买了什么?", 14.0, 0.0),
        ("上个月我去了哪里?", 60.0, 0.0),
        ("去年我去了哪里?", 730.0, 0.0),
        ("这个月我读了什么?", 31.0, 0.0),
        ("今年我读了什么书?", 366.0, 0.0),
    ],
)
def test_a_relative_time_spans_that_many_days_before_the_query(
    query: str, start: float, end: float
) -> None:
    anchor = anchor_of(query, ASKED)
    stamp = ASKED.timestamp()
    assert anchor.start == pytest.approx(stamp - start * DAY_SECONDS, abs=1.0)
    assert anchor.end == pytest.approx(stamp - end * DAY_SECONDS, abs=1.0)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("Which sports events did I watch in January?", "2024-01-01", "2024-02-01"),
        ("What did I plant in March?", "2024-03-01", "2024-04-01"),  # this month
        ("Where did I go in April?", "2023-04-01", "2023-05-02"),  # the last April
        ("What did I do during May?", "2023-05-01", "2023-06-01"),
        ("What did I buy in December?", "2023-12-01", "2024-01-01"),
        ("Where did I travel in 2023?", "2023-01-01", "2024-01-02"),
        ("What did I learn in 1999?", "1999-01-01", "2000-01-02"),
    ],
)
def test_a_month_or_a_year_spans_it_from_midnight_on_its_first_day(
    query: str, start: str, end: str
) -> None:
    anchor = anchor_of(query, ASKED)
    assert (anchor.start, anchor.end) == (day(start), day(end))
    assert anchor.holds(day(start))  # said at midnight on the first, asked at 12:34:56.000789


@pytest.mark.parametrize(
    ("at", "held"),
    [(9.5, False), (10.0, True), (15.0, True), (20.0, True), (20.5, False)],
)
def test_a_span_holds_both_its_ends(at: float, held: bool) -> None:
    assert TimeAnchor(10.0, 20.0).holds(at) is held
    assert not TimeAnchor().holds(at)
    assert not TimeAnchor(start=10.0).holds(at)
    assert not TimeAnchor(end=20.0).holds(at)


@pytest.mark.parametrize(
    ("query", "recent", "past"),
    [
        ("Which books am I currently reading this month?", True, False),
        ("这个月我最近在读什么书?", True, False),
        ("What did I buy last week?", False, True),
    ],
)
def test_a_query_naming_a_span_still_says_whether_it_asks_what_is_true_now(
    query: str, recent: bool, past: bool
) -> None:
    anchor = anchor_of(query, NOW)
    assert anchor.spans
    assert (anchor.recent, anchor.past) == (recent, past)


@pytest.mark.parametrize(
    ("query", "left"),
    [
        ("How many times did I bake in the past two weeks?", "how many times did i bake ?"),
        ("Who did I go with to the concert last Saturday?", "who did i go with to the concert ?"),
        ("Which book did I finish a week ago?", "which book did i finish ?"),
        ("How many days ago did I attend the class?", "did i attend the class?"),
        ("What did I cook yesterday", "what did i cook"),
        ("我上个月去了哪里", "我 去了哪里"),
        ("我三天前买了什么", "我 买了什么"),
        ("What did Caroline do in May 2023?", "what did caroline do in may 2023?"),
    ],
)
def test_the_words_that_place_a_query_relative_to_its_time_are_taken_out(
    query: str, left: str
) -> None:
    assert without_relative_time(query) == left
