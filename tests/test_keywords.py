"""Seed 001's keyword extraction and the preference/personal hints used by recall."""

# Chinese test sentences use full-width punctuation on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from memory.keywords import expresses_preference, extract_keywords, mentions_personal

ODD_INPUTS = [
    "",
    " \n\t ",
    "😀🎉🔥",
    "。，！？",
    "a" * 100_000,
    "我" * 50_000,
    "Python的代码" * 5_000,
    "\x00\x01\ufeff\u200b",
    "ＡＢＣ１２３",
    "naïve café Zürich",
    "C++++ #### ...",
    "\ud800",  # a lone surrogate
]


def _ascii_id(text: str) -> str:
    """A test id in ASCII (pytest escapes Chinese as \\uXXXX, which mutmut's in-process
    pytest then cannot find by node id): the code points without the backslash."""
    return text.encode("unicode_escape").decode("ascii").replace("\\", "")


def test_seed_001_example_keeps_python_code_and_like_and_drops_stop_words() -> None:
    keywords = extract_keywords("我喜欢用 Python 写代码")
    assert {"Python", "代码", "喜欢"} <= set(keywords)
    assert not {"我", "用", "写"} & set(keywords)
    assert keywords == ["喜欢", "Python", "代码"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I love writing Python code", ["love", "writing", "Python", "code"]),
        (
            "Please help me debug this Node.js app, it keeps crashing!",
            ["help", "debug", "Node.js", "app", "keeps", "crashing"],
        ),
        (
            "I\u2019m learning C++ and C# at the university's lab",
            ["learning", "C++", "C#", "university", "lab"],
        ),
        ("Python3.11 vs PyPy", ["Python3.11", "PyPy"]),
        ("What is the state-of-the-art in NLP?", ["state-of-the-art", "NLP"]),
        ("a b c 1 2 3 42", ["42"]),
        ("naïve café in Zürich", ["naïve", "café", "Zürich"]),
    ],
    ids=["plain", "dotted-name", "plus-and-sharp", "version", "hyphenated", "short", "accents"],
)
def test_english_words_keep_case_and_drop_stop_words_and_single_characters(
    text: str, expected: list[str]
) -> None:
    assert extract_keywords(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我喜欢喝茶", ["喜欢", "喝茶"]),
        ("我不喜欢香菜", ["喜欢", "香菜"]),
        ("我讨厌下雨天", ["讨厌", "下雨天"]),
        ("我想学日语", ["学日语"]),
        ("我们的用户在成都开会", ["用户", "成都开会"]),
        ("我在上海工作，但是我想去北京", ["上海工作", "去北京"]),
        ("我的名字是小明", ["名字", "小明"]),
        ("你能不能帮我看看这个问题", ["看看", "问题"]),
        ("我喜欢深度学习框架", ["喜欢", "深度学习框架", "深度", "度学", "学习", "习框", "框架"]),
        (
            "机器学习模型训练和部署",
            ["机器", "器学", "学习", "习模", "模型", "型训", "训练", "部署"],
        ),
    ],
    ids=[
        "like-tea",
        "dislike-cilantro",
        "hate-rain",
        "want-japanese",
        "protected-user-and-chengdu",
        "work-and-beijing",
        "name",
        "question",
        "six-chars-kept-whole-and-bigrams",
        "eight-chars-only-bigrams",
    ],
)
def test_chinese_runs_are_cut_at_stop_words_and_long_runs_into_bigrams(
    text: str, expected: list[str]
) -> None:
    assert extract_keywords(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "the of and to a in is it you that",
        "I me my myself we our you your",
        "我 你 他 的 了 是 在 用 写 和 吗 呢 吧",
        "什么 怎么 一个 这个 那个 因为 所以 但是",
    ],
    ids=["english-function-words", "english-pronouns", "chinese-particles", "chinese-two-char"],
)
def test_stop_words_alone_give_no_keywords(text: str) -> None:
    assert extract_keywords(text) == []


def test_duplicates_ignore_case_and_the_first_spelling_wins() -> None:
    assert extract_keywords("Python python PYTHON 代码 代码") == ["Python", "代码"]


def test_keywords_follow_first_occurrence_across_languages() -> None:
    text = "Rust 编译器很快，Go 语言也好，编译器 Rust"
    assert extract_keywords(text) == ["Rust", "编译器", "Go", "语言"]


def test_limit_keeps_the_first_keywords() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron sigma"
    assert extract_keywords(text) == text.split()[:12]
    assert extract_keywords(text, limit=3) == ["alpha", "beta", "gamma"]
    assert extract_keywords(text, limit=0) == []


def test_full_width_letters_and_digits_become_ascii() -> None:
    assert extract_keywords("ＡＢＣ全角Python３") == ["ABC", "全角", "Python3"]


@pytest.mark.parametrize("text", ODD_INPUTS, ids=range(len(ODD_INPUTS)))
def test_odd_inputs_give_a_bounded_list_without_raising(text: str) -> None:
    keywords = extract_keywords(text)
    assert len(keywords) <= 12
    assert all(len(k) >= 2 for k in keywords)
    assert isinstance(expresses_preference(text), bool)
    assert isinstance(mentions_personal(text), bool)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I like green tea", True),
        ("I really LOVE hiking", True),
        ("I prefer dark mode", True),
        ("I enjoy jazz", True),
        ("I hate Mondays", True),
        ("I dislike spam", True),
        ("My favourite colour is blue", True),
        ("My favorite colour is blue", True),
        ("I can't stand loud music", True),
        ("I\u2019d rather walk", True),
        ("我喜欢用 Python 写代码", True),
        ("我爱猫", True),
        ("我偏好深色模式", True),
        ("我更喜欢茶", True),
        ("我讨厌下雨", True),
        ("我不喜欢香菜", True),
        ("我最爱火锅", True),
        ("我宁愿走路", True),
        ("It looks like rain", False),
        ("Something like that", False),
        ("What time is it?", False),
        ("这只猫很可爱", False),
        ("他们在谈恋爱", False),
        ("帮我写代码", False),
        ("", False),
    ],
    ids=lambda value: _ascii_id(value) if isinstance(value, str) else None,
)
def test_preference_is_detected_in_english_and_chinese(text: str, expected: bool) -> None:
    assert expresses_preference(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Where should I eat tonight?", True),
        ("Recommend something for me", True),
        ("What's in my calendar", True),
        ("Good restaurants in my city", True),
        ("Which country is best for hiking", True),
        ("Flights home", True),
        ("I\u2019m hungry", True),
        ("我的猫叫什么", True),
        ("附近哪里有咖啡", True),
        ("住哪儿比较好", True),
        ("回家的路", True),
        ("哪个城市适合旅游", True),
        ("Explain Rust lifetimes", False),
        ("Summarize the article", False),
        ("大家好", False),
        ("请问专家意见", False),
        ("解释一下量子计算", False),
        ("", False),
    ],
    ids=lambda value: _ascii_id(value) if isinstance(value, str) else None,
)
def test_personal_pronouns_and_places_are_detected(text: str, expected: bool) -> None:
    assert mentions_personal(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("机器学习", ["机器学习"]),  # up to four characters: the word only
        ("量子计算机", ["量子计算机", "量子", "子计", "计算", "算机"]),  # five or six: both
        ("计算机视觉研究", ["计算", "算机", "机视", "视觉", "觉研", "研究"]),  # seven: bigrams
    ],
    ids=["four", "five", "seven"],
)
def test_a_chinese_chunk_is_kept_whole_up_to_six_characters_and_cut_in_bigrams_from_five(
    text: str, expected: list[str]
) -> None:
    assert extract_keywords(text) == expected


def test_a_like_after_looks_is_a_simile_but_another_preference_word_still_counts() -> None:
    assert expresses_preference("It looks like rain but I love it")
    assert not expresses_preference("It looks like rain")
    assert expresses_preference("like my new bike it looks")  # "like" first: no word before
