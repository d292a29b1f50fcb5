"""What kind of answer a question asks for, and whether a text states one (``memory.answers``)."""

from __future__ import annotations

import pytest

from memory.answers import FIRST_PERSON, AnswerKind, asked_kind, in_first_person, stated, states


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How many hours have I spent playing games in total?", "amount"),
        ("What is the total number of siblings I have?", "amount"),
        ("How long have I had my cat, Luna?", "amount"),
        ("我一共养了几只猫", "amount"),
        ("我每个月花多少钱", "amount"),
        ("When did Caroline go to the support group?", "time"),
        ("What time do I wake up on Saturdays?", "time"),
        ("How many days ago did I attend the baking class?", "time"),
        ("How many months have passed since the charity run?", "time"),
        ("我什么时候搬到上海的", "time"),
        ("How many times did I bake something this month?", None),
        ("Which book did I finish a week ago?", "name"),
        ("What is the name of my cat?", "name"),
        ("Where did Caroline move from?", "name"),
        ("What books has Melanie read?", "name"),
        ("我读的是哪本书", "name"),
        ("Which day did we meet?", "time"),
        ("What did Ann paint?", None),
        ("Who did I go to the concert with?", None),
        ("我喜欢什么颜色", None),
    ],
)
def test_a_question_asks_for_an_amount_a_time_or_neither(
    question: str, kind: AnswerKind | None
) -> None:
    assert asked_kind(question) == kind


@pytest.mark.parametrize(
    ("text", "amount", "time"),
    [
        ("I have 3 sisters", True, False),
        ("I have two brothers and a dog", True, False),
        ("我有两只猫", True, False),
        ("I went there yesterday", False, True),
        ("We met last Saturday at the market", False, True),
        ("I started in 2019", True, True),
        ("I wake up at 6am on weekdays", True, True),
        ("我上个月搬家了", False, True),
        ("我三月份去了北京", True, True),
        ("I painted a lake at sunrise", False, False),
    ],
)
def test_a_text_states_a_number_a_time_or_neither(text: str, amount: bool, time: bool) -> None:
    assert (states("amount", text), states("time", text)) == (amount, time)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("I just finished The Nightingale by Kristin Hannah", True),
        ('I loved "the little prince" as a kid', True),
        ("我在读《三体》", True),
        ("Thanks, John! That means a lot", False),  # John is one of the people talking
        ("Thanks, Maria! We adopted Luna last year", True),
        ("I read a lovely book about the sea", False),
        ("Books are great. I read every night", False),  # capitals that start a sentence
    ],
)
def test_a_text_names_something_other_than_the_people_talking(text: str, named: bool) -> None:
    assert states("name", text, frozenset({"John", "Maria"})) is named


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("I'm 32, so I'm in my 30s", True),
        ("We went to the lake", True),
        ("我去了北京", True),
        ("Write an expression for how many goals Alexa scored", False),
        ("Give me the same table as above, but add a totals row", False),  # "me": a request
    ],
)
def test_a_text_in_which_its_speaker_speaks_of_themselves(text: str, first: bool) -> None:
    assert bool(stated(text) & FIRST_PERSON) is first


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("What do I paint on Sundays?", True),
        ("Can you remind me of the restaurant?", True),
        ("我上周去了哪里", True),
        ("What did Caroline paint?", False),
        ("sit", False),
    ],
)
def test_a_question_in_the_first_person_is_about_the_one_asking(question: str, first: bool) -> None:
    assert in_first_person(question) is first
