"""The rule-based fallback extractor: exact facts for English and Chinese, and what it refuses."""

# Chinese test sentences use full-width punctuation on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

import msgspec
import pytest

from memory.rules_extractor import extract_facts
from schemas.llm import ExtractedFact

#: (content, category, predicate, value) of the single fact each sentence gives.
ENGLISH = {
    "name": ("My name is Ada Lovelace.", "User's name is Ada Lovelace", "identity", "name",
             "Ada Lovelace"),
    "i-am-name": ("Hi, I'm Ada!", "User's name is Ada", "identity", "name", "Ada"),
    "call-me": ("Call me Ishmael.", "User's name is Ishmael", "identity", "name", "Ishmael"),
    "age": ("I'm 34 years old", "User is 34 years old", "identity", "age", "34"),
    "live-in": ("I live in Lyon with my wife.", "User lives in Lyon", "identity", "location",
                "Lyon"),
    "from": ("I'm from Porto, Portugal.", "User is from Porto", "identity", "location", "Porto"),
    "moved": ("I moved to Berlin last year", "User moved to Berlin", "identity", "location",
              "Berlin"),
    "work-at-as": ("I work at Acme as an engineer.", "User works at Acme as an engineer",
                   "project", "employer", "Acme"),
    "work-for-myself": ("I work for myself", "User works for themselves", "project", "employer",
                        "myself"),
    "work-as": ("I work as a nurse at the city hospital",
                "User works as a nurse at the city hospital", "project", "role", "nurse"),
    "i-am-a": ("I'm a software engineer at Google.", "User is a software engineer at Google",
               "project", "role", "software engineer"),
    "working-on": ("I'm working on a compiler for Lua", "User is working on a compiler for Lua",
                   "project", "working_on", "a compiler for Lua"),
    "like": ("I like green tea.", "User likes green tea", "preference", "likes", "green tea"),
    "really-love": ("I really love hiking in the mountains!",
                    "User loves hiking in the mountains", "preference", "likes",
                    "hiking in the mountains"),
    "like-my": ("I like my job a lot", "User likes their job", "preference", "likes", "my job"),
    "favourite": ("My favourite food is ramen", "User's favourite food is ramen", "preference",
                  "likes", "ramen"),
    "dont-like": ("I don't like cilantro.", "User dislikes cilantro", "preference", "dislikes",
                  "cilantro"),
    "hate": ("I hate Mondays", "User hates Mondays", "preference", "dislikes", "Mondays"),
    "cant-stand": ("I can\u2019t stand loud music", "User dislikes loud music", "preference",
                   "dislikes", "loud music"),
    "prefer-over": ("I prefer dark mode over light mode.",
                    "User prefers dark mode over light mode", "preference", "prefers",
                    "dark mode"),
    "prefer-to": ("I prefer to work at night", "User prefers to work at night", "preference",
                  "prefers", "to work at night"),
    "want-to": ("I want to learn Portuguese.", "User wants to learn Portuguese", "goal", "goal",
                "learn Portuguese"),
    "plan-to": ("I plan to run a marathon", "User plans to run a marathon", "goal", "goal",
                "run a marathon"),
    "trying-to": ("I'm trying to quit sugar", "User is trying to quit sugar", "goal", "goal",
                  "quit sugar"),
    "goal-is": ("My goal is to ship v1 by June.", "User's goal is to ship v1 by June", "goal",
                "goal", "ship v1 by June"),
}  # fmt: skip

CHINESE = {
    "name": ("我叫小明。", "用户叫小明", "identity", "name", "小明"),
    "name-is": ("我的名字是王小红，今年25岁", "用户叫王小红", "identity", "name", "王小红"),
    "latin-name": ("我叫Ada", "用户叫Ada", "identity", "name", "Ada"),
    "age": ("我今年三十岁", "用户三十岁", "identity", "age", "三十"),
    "live-in": ("我住在上海", "用户住在上海", "identity", "location", "上海"),
    "from": ("我来自北京，但是现在住在深圳", "用户来自北京", "identity", "location", "北京"),
    "work-at": ("我在腾讯工作", "用户在腾讯工作", "project", "employer", "腾讯"),
    "role": ("我是一名软件工程师", "用户是一名软件工程师", "project", "role", "软件工程师"),
    "working-on": ("我正在做一个聊天机器人", "用户在做一个聊天机器人", "project", "working_on",
                   "一个聊天机器人"),
    "like": ("我喜欢喝茶", "用户喜欢喝茶", "preference", "likes", "喝茶"),
    "love": ("我很爱猫！", "用户爱猫", "preference", "likes", "猫"),
    "favourite": ("我最喜欢的颜色是蓝色", "用户最喜欢的颜色是蓝色", "preference", "likes", "蓝色"),
    "dont-like": ("我不喜欢香菜", "用户不喜欢香菜", "preference", "dislikes", "香菜"),
    "hate": ("我讨厌下雨天", "用户讨厌下雨天", "preference", "dislikes", "下雨天"),
    "prefer": ("我更喜欢深色模式", "用户更喜欢深色模式", "preference", "prefers", "深色模式"),
    "want": ("我想学日语", "用户想学日语", "goal", "goal", "学日语"),
    "plan": ("我打算明年去日本。", "用户打算明年去日本", "goal", "goal", "明年去日本"),
    "goal-is": ("我的目标是成为一名医生", "用户的目标是成为一名医生", "goal", "goal",
                "成为一名医生"),
}  # fmt: skip


def _summary(facts: list[ExtractedFact]) -> list[tuple[str, str, str | None, str | None]]:
    return [(f.content, f.category, f.predicate, f.value) for f in facts]


@pytest.mark.parametrize(
    ("text", "content", "category", "predicate", "value"),
    list(ENGLISH.values()),
    ids=list(ENGLISH),
)
def test_english_statement_becomes_one_third_person_fact(
    text: str, content: str, category: str, predicate: str, value: str
) -> None:
    assert _summary(extract_facts(text)) == [(content, category, predicate, value)]


@pytest.mark.parametrize(
    ("text", "content", "category", "predicate", "value"),
    list(CHINESE.values()),
    ids=list(CHINESE),
)
def test_chinese_statement_becomes_one_fact_about_the_user(
    text: str, content: str, category: str, predicate: str, value: str
) -> None:
    assert _summary(extract_facts(text)) == [(content, category, predicate, value)]


NOTHING = {
    "tired": "I'm tired.",
    "shouting": "I'M TIRED",
    "nationality": "I'm French",
    "lowercase-name": "i'm ada",
    "call-me-later": "Call me later",
    "like-that-you-asked": "I like that you asked.",
    "like-it": "I like it!",
    "question": "Do I like tea?",
    "request": "I want to know what time it is.",
    "about-listener": "I hope to see you soon",
    "would-like": "I'd like to order a pizza",
    "no-occupation": "I'm a big fan of jazz",
    "work-for-you": "Can I work for you",
    "zh-question": "我叫什么名字？",
    "zh-ask": "我想问一下",
    "zh-want-a-thing": "我想要一杯咖啡",
    "zh-miss-you": "我想你",
    "zh-you-help-me": "我希望你能帮我",
    "zh-spouse": "我爱人很好",
    "zh-we": "我们喜欢猫",
    "zh-i-mean": "我是说这个产品经理不好",
    "zh-name-not-understood": "我是小明",
    "small-talk": "What's the weather like today?",
    "empty": "",
}


@pytest.mark.parametrize("text", list(NOTHING.values()), ids=list(NOTHING))
def test_states_requests_questions_and_pointers_give_no_fact(text: str) -> None:
    assert extract_facts(text) == []


def test_several_facts_come_out_in_text_order() -> None:
    text = (
        "hi, I'm Sam and I'm a teacher. I love jazz but I hate traffic; my goal is to retire early"
    )
    assert [f.content for f in extract_facts(text)] == [
        "User's name is Sam",
        "User is a teacher",
        "User loves jazz",
        "User hates traffic",
        "User's goal is to retire early",
    ]


def test_mixed_language_message_gives_facts_in_both_languages() -> None:
    facts = extract_facts("I live in Lyon。我喜欢喝茶，我讨厌咖啡")
    assert [f.content for f in facts] == ["User lives in Lyon", "用户喜欢喝茶", "用户讨厌咖啡"]


def test_repeated_statements_are_deduplicated_ignoring_case() -> None:
    assert [f.content for f in extract_facts("I'm Ada. I'm Ada! I like Tea. I like tea")] == [
        "User's name is Ada",
        "User likes Tea",
    ]


def test_a_list_keeps_only_its_first_item() -> None:
    assert [f.value for f in extract_facts("I like tea and coffee")] == ["tea"]


def test_every_fact_is_about_the_user_with_the_given_confidence() -> None:
    facts = extract_facts("I live in Oslo and I like skiing. 我想学吉他", confidence=0.35)
    assert len(facts) == 3
    for fact in facts:
        assert fact.subject == "user"
        assert fact.confidence == 0.35
        assert fact.updates_previous is False
        assert fact.predicate is not None
        assert fact.value


@pytest.mark.parametrize("confidence", [-0.1, 1.5, float("nan")], ids=["negative", "over", "nan"])
def test_confidence_outside_zero_to_one_is_rejected(confidence: float) -> None:
    with pytest.raises(ValueError, match="confidence"):
        extract_facts("I like tea", confidence=confidence)


def test_long_captures_are_cut_near_sixty_characters_at_a_word() -> None:
    phrase = "very long phrases " * 20
    (fact,) = extract_facts("I like " + phrase)
    assert fact.value is not None
    assert 30 < len(fact.value) <= 60
    assert phrase.startswith(fact.value + " ")  # whole words only


ODD_INPUTS = [
    "",
    "😀🎉🔥",
    "I like 😀",
    "I like",
    "I'm",
    "我喜欢",
    "我叫",
    "my name is",
    "I like " * 20_000,
    "我喜欢" * 20_000,
    "I live in " + "x" * 100_000,
    "\x00I like\x00tea\x00",
    "I like {value} and {0}",
    "\ud800 I like \ud800",
    "I'm 999 years old",
    "我今年一二三四五六七岁",
    "I prefer over",
    "I work at as",
    "我在工作",
]


@pytest.mark.parametrize("text", ODD_INPUTS, ids=range(len(ODD_INPUTS)))
def test_odd_inputs_never_raise_and_give_valid_facts(text: str) -> None:
    for fact in extract_facts(text):
        # Round-trip through the model's schema: content length and confidence constraints.
        msgspec.convert(msgspec.to_builtins(fact), ExtractedFact)
        assert fact.value is not None
        assert 0 < len(fact.value) <= 60
