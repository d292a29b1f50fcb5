"""What kind of answer a question asks for, and whether a text states one.

A question asking for an amount ("How many hours...", "the total number of...",
"多少") is answered by a message that states one: a number, in digits or in words. A
question asking when ("When did...", "What time...", "How many days ago...", "什么时候")
is answered by a message that names a time: a date, a weekday, a month, "yesterday",
"last week". A question asking which one by name ("Which book...", "What is the name
of...", "哪本") or where is answered by a message that names it: a capitalized word
inside a sentence, or a quoted title. In the dev conversations the project measures with, 78 %
of the turns that answer an amount question state a number (36 % of the other turns
ranked beside them), 80 % of the turns that answer a "when" question name a time (14 %
of all turns), and 69 % of those that answer a "which" or "what is the name" question
name something other than the two people talking (11 % of all turns).
Pure, English and Chinese.
"""

from __future__ import annotations

import itertools
import re
from typing import Literal

__all__ = [
    "AMOUNT",
    "FIRST_PERSON",
    "NAME",
    "READ",
    "TIME",
    "AnswerKind",
    "asked_kind",
    "bit_of",
    "in_first_person",
    "stated",
    "states",
]

#: ``amount``: a number is asked for; ``time``: when something happened; ``name``: which
#: one, by its name (a book's title, a place, a brand, a person), or where.
AnswerKind = Literal["amount", "time", "name"]

_NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
    "eighty ninety hundred thousand million dozen couple several once twice half"
).split()
_CJK_NUMERALS = "零一二两三四五六七八九十百千万几半"

_ASKS_TIME = re.compile(
    r"^\W*(?:when\b|what (?:date|time|day|year|month)\b|which (?:date|day|year|month)\b)"
    r"|\bhow (?:long ago|many (?:days|weeks|months|years) (?:ago|passed|had passed|have passed"
    r"|before|after|between|since))\b"
    r"|什么时候|哪天|哪一天|几号|哪年|哪一年|几月|几点|多久以前|多久前",
    re.IGNORECASE,
)
_ASKS_AMOUNT = re.compile(
    r"\b(?:how (?:many(?! times\b)|much|long|old)|total number|in total|average)\b"
    r"|多少|多久|多长|平均|总共|一共|几[个次天年岁本只位件种]",
    re.IGNORECASE,
)
_ASKS_NAME = re.compile(
    r"^\W*(?:which\b|where\b|what (?:is|was|'s) the name\b|what (?:"
    + "|".join(
        "book movie film game song band show restaurant city country company brand team "
        "dish artist author album podcast app series novel play store shop".split()
    )
    + r")s?\b)|\b(?:called|named?)\b"
    r"|叫什么|什么名字|哪个|哪家|哪本|哪部|哪首|哪位",
    re.IGNORECASE,
)
_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
#: A message is read for these once (``stated``), word by word: a regular expression
#: of every word at every position took 50-150 us for a LongMemEval turn.
_WORD = re.compile(r"[a-z]+")
_DIGIT = re.compile(r"\d")
_CJK_NUMERAL = re.compile(f"[{_CJK_NUMERALS}]")
_NUMBERS = frozenset(_NUMBER_WORDS)
_TIME_WORDS = frozenset(
    (*_MONTHS, *_DAYS, *"yesterday today tonight tomorrow ago weekend morning evening".split())
) | {"recently", "earlier", "later", "since"}
#: "last week", "next month", "this morning", "years old": the word before, the words after.
_TIME_PAIRS = {
    "last": frozenset("week month year night weekend summer winter spring fall".split() + _DAYS),
    "next": frozenset("week month year".split()),
    "this": frozenset("week month year weekend morning".split()),
}
#: A year, "7am", "7:30 pm", "the 15th" (a digit first: scanning for it is fast).
_TIME_DIGITS = re.compile(
    r"\d(?<!\w\d)(?:\d{3}|\d?(?::\d\d)?\s*(?:am|pm)|\d?(?:st|nd|rd|th))\b", re.IGNORECASE
)
_CJK = re.compile("[\u3400-\u9fff]")
#: A name: a capitalized word inside a sentence, or something quoted or titled.
_NAMED = re.compile(r"(?<=[a-z,;:] )[A-Z][a-zA-Z]+|\"[^\"]+\"|\u201c[^\u201d]+\u201d|《[^》]+》")
_CJK_TIME = re.compile(
    "昨天|今天|明天|前天|后天|今晚|周末|星期|礼拜|早上|上午|中午|下午|晚上|最近|以前|之前|之后"
    rf"|[上下这本今去前]个?(?:周|月|年)|[\d{_CJK_NUMERALS}]+(?:月|号|日|年|点)"
)
_PAIRED = frozenset((*_TIME_PAIRS, "old"))
_YEARS = frozenset(("year", "years"))
#: ``stated``'s bits.
AMOUNT, TIME, READ, NAME, FIRST_PERSON = 1, 2, 4, 8, 16
_FIRST_PERSON = frozenset("i my mine myself we our ours us".split())
_ASKING_SELF = _FIRST_PERSON | {"me"}
_BITS: dict[AnswerKind, int] = {"amount": AMOUNT, "time": TIME, "name": NAME}


def asked_kind(question: str) -> AnswerKind | None:
    """The kind of answer ``question`` asks for, or None (a "what", "why", "who"...).

    "How many times..." asks to count occasions, each told without a number ("I baked
    a cake on Sunday"): None.
    A time distance ("How many days ago...", "How many months have passed since...") asks
    when: the message that answers it says when the thing happened, not how long ago."""
    if _ASKS_TIME.search(question):
        return "time"
    if _ASKS_AMOUNT.search(question):
        return "amount"
    if _ASKS_NAME.search(question):
        return "name"
    return None


def in_first_person(question: str) -> bool:
    """Whether ``question`` speaks in the first person ("what do I...", "my sister",
    "我"): it is about the one asking."""
    words = set(_WORD.findall(question.casefold()))
    return not _ASKING_SELF.isdisjoint(words) or "我" in question


def states(kind: AnswerKind, text: str, people: frozenset[str] = frozenset()) -> bool:
    """Whether ``text`` states an answer of ``kind``: a number, a time, or a name (not one
    of ``people``'s)."""
    return bool(stated(text, people) & _BITS[kind])


def bit_of(kind: AnswerKind) -> int:
    """``stated``'s bit for an answer of ``kind``."""
    return _BITS[kind]


def stated(text: str, people: frozenset[str] = frozenset()) -> int:
    """What ``text`` states, as bits: ``AMOUNT`` (a number in digits or in words, "3",
    "two", "两"), ``TIME`` (a month, a weekday, "yesterday", "last week", a year, "7am",
    "the 15th", "上个月"), ``NAME`` (a capitalized word inside a sentence that is not one
    of ``people``, the names of those talking, who are named all the time: "Thanks,
    John!"; or a quoted or titled name: "The Nightingale", 《三体》), ``FIRST_PERSON``
    (its speaker speaks of themselves: "I", "my", "we", "我"), and ``READ`` always (a
    message's bits are kept once read)."""
    words = _WORD.findall(text.casefold())
    present = set(words)
    digits = _DIGIT.search(text) is not None
    flags = READ
    cjk = _CJK.search(text) is not None
    if digits or not _NUMBERS.isdisjoint(present) or (cjk and _CJK_NUMERAL.search(text)):
        flags |= AMOUNT
    if _time(text, words, present, digits, cjk):
        flags |= TIME
    if any(match.group() not in people for match in _NAMED.finditer(text)):
        flags |= NAME
    if not _FIRST_PERSON.isdisjoint(present) or (cjk and "我" in text):
        flags |= FIRST_PERSON
    return flags


def _time(text: str, words: list[str], present: set[str], digits: bool, cjk: bool) -> bool:
    if not _TIME_WORDS.isdisjoint(present):
        return True
    if not _PAIRED.isdisjoint(present):
        for before, after in itertools.pairwise(words):
            if after in _TIME_PAIRS.get(before, ()) or (after == "old" and before in _YEARS):
                return True
    if "when" in present and "was" in present:
        for n, word in enumerate(words):
            if word == "when" and words[n + 1 : n + 3] == ["i", "was"]:
                return True
    if digits and _TIME_DIGITS.search(text):
        return True
    return cjk and _CJK_TIME.search(text) is not None
