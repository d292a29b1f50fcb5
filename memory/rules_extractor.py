"""A deterministic fact extractor for when the model is unreachable: first-person patterns.

Each pattern is a first-person trigger (``I live in``, ``我住在``) followed by a
captured phrase. The phrase ends at sentence punctuation (``.,!?;:`` and their
full-width forms), at a conjunction (and, but, because, so, 因为, 但是, ...), or
after about 60 characters. Facts are phrased about the user ("User lives in
Lyon", "用户住在上海") with ``my``/``我的`` turned into ``their``/``自己的``,
subject ``"user"``, and come out in the order they appear in the text.

Deliberately not handled, to keep false facts out of memory:

- Questions: a phrase that ends in ``?`` gives nothing ("Do I like tea?"), and
  neither does a Chinese phrase with 什么/哪里/谁 or ending in 吗.
- Objects that point at the conversation rather than the world: "I like that
  you asked", "I like it", "I don't like this", "我想你帮我" start with a pronoun
  or demonstrative and are dropped, which also drops "I like that song".
- "I'm X" and "call me X" are a name only for a capitalised word that is not a
  nationality or a state ("I'm tired", "I'm French", "call me later" give
  nothing); "I'm a/an X" is a role only when X names an occupation, and so is
  我是X. 我是小明 (a name) and 我是上海人 (an origin) are not understood.
- Requests that look like goals: "I want to know/ask/say ...", "I hope to see
  you soon", "我想问/知道/要...", and any 我想 phrase that mentions 你.
- Lists and clauses: "I like tea and coffee" keeps only "tea"; in "I'm from
  Lyon but live in Paris" the second clause has no subject and is missed.
- 我在X工作 is an employer even when X is a city.
- Tense and negation beyond "don't like"/不喜欢: "I used to live in Rome" and
  "I no longer work at Acme" are missed, not inverted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from schemas.llm import ExtractedFact

__all__ = ["extract_facts"]

_MAX_VALUE = 60
#: Only this much text after a trigger is looked at, which keeps long inputs linear.
_WINDOW = 240

#: Full-width sentence punctuation, the enumeration comma and CJK brackets.
_ZH_PUNCT = "\u3002\uff0c\uff01\uff1f\uff1b\uff1a\u3001\uff08\uff09\u3010\u3011\u300c\u300d"
_END = re.compile(
    r"[,!?;:()\[\]\"\n\u201c\u201d\u2026" + _ZH_PUNCT + "]"
    r"|\.(?=\s|$)"
    r"|\s+(?:and|but|because|although|though|while|whereas|so|which|who)\b"
    r"|因为|但是|所以|而且|不过|可是|然后|并且",
    re.IGNORECASE,
)
_TRAILING_FILLER = re.compile(
    r"(?:\s+(?:a\s+lot|very\s+much|so\s+much|too|as\s+well|also|either|anymore|really))+$"
    r"|[了啊呢吧哦呀嘛]+$",
    re.IGNORECASE,
)
_PLACE_TAIL = re.compile(
    r"\s+(?:with|since|for|now|currently|last|this|next|ago|when|back\s+in|in\s+\d{4}"
    r"|a\s+(?:few|couple))\b.*$",
    re.IGNORECASE,
)
_QUOTES = " \t'\"`\u2018\u2019\u201c\u201d"
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})

#: First words of an object that is about the conversation, not the user.
_POINTERS = frozenset(
    """
    it it's its that that's this these those you your yours you're him her them they he she
    we us what which who when how why where if whether so such both all none there here
    """.split()
)
_CHINESE_POINTERS = ("你", "您", "他", "她", "它", "这", "那", "什么")
_CHINESE_QUESTION = re.compile(r"什么|哪里|哪儿|谁|吗$")
_YOU = frozenset(("you", "your", "yours", "you're", "you'll"))
_REQUEST_VERBS = frozenset("know ask say tell check confirm thank clarify mention".split())
_CHINESE_REQUESTS = (
    *_CHINESE_POINTERS,
    *"问 知道 说 想 请 让 看看 确认 听 了 起 到 要 一下".split(),
)
_NOT_NAMES = frozenset(
    """
    not sorry fine good okay ok here back done ready happy sure just so very really still
    also glad tired busy going trying working looking feeling new home in on at the
    american british english french german italian spanish chinese japanese korean indian
    canadian australian mexican brazilian russian dutch swiss swedish polish irish scottish
    portuguese vietnamese thai turkish greek african european asian muslim christian jewish
    """.split()
)
_OCCUPATIONS = frozenset(
    """
    developer developers engineer engineers programmer coder teacher student designer doctor
    nurse scientist researcher writer author manager lawyer artist musician accountant
    consultant analyst architect chef cook photographer professor lecturer freelancer
    founder cofounder co-founder entrepreneur journalist editor translator pilot farmer
    mechanic electrician plumber carpenter intern ceo cto cfo pm sysadmin admin dev tester
    pharmacist dentist therapist psychologist economist mathematician physicist chemist
    biologist historian librarian tutor instructor coach trainer driver barista waiter
    waitress cashier clerk secretary assistant officer soldier firefighter police
    policeman salesman salesperson marketer recruiter veterinarian vet surgeon paramedic
    """.split()
)
_CHINESE_OCCUPATIONS = (
    *"工程师 程序员 老师 教师 学生 医生 护士 设计师 开发者 开发人员 研究员 经理 律师".split(),
    *"作家 记者 会计 厨师 司机 科学家 教授 分析师 架构师 顾问 创业者 摄影师 翻译".split(),
    *"编辑 艺术家 音乐家 演员 销售 公务员 研究生 博士 大学生 实习生 产品经理 码农".split(),
)
_THIRD_PERSON = (
    (re.compile(r"\bmyself\b", re.IGNORECASE), "themselves"),
    (re.compile(r"\bmine\b", re.IGNORECASE), "theirs"),
    (re.compile(r"\bmy\b", re.IGNORECASE), "their"),
    (re.compile(r"\bme\b", re.IGNORECASE), "them"),
    (re.compile("我的"), "自己的"),
)


def _third_person(value: str) -> str:
    for pattern, replacement in _THIRD_PERSON:
        value = pattern.sub(replacement, value)
    return value


def _clip(text: str, start: int) -> tuple[str, str]:
    """The phrase from ``start`` to its end, tidied, and the character that ended it."""
    window = text[start : start + _WINDOW]
    end = _END.search(window)
    phrase, ender = (window[: end.start()], end.group()) if end else (window, "")
    phrase = phrase.strip(_QUOTES + ".")
    if len(phrase) > _MAX_VALUE:
        phrase = phrase[:_MAX_VALUE]
        space = phrase.rfind(" ")
        if space > _MAX_VALUE // 2:
            phrase = phrase[:space]
    phrase = _TRAILING_FILLER.sub("", phrase.strip()).strip(_QUOTES)
    return phrase, ender


def _meaningful(value: str) -> bool:
    return any(char.isalnum() for char in value)


def _first_word(value: str) -> str:
    words = value.split(maxsplit=1)
    return words[0].casefold() if words else ""


def _english_object(value: str) -> bool:
    return _meaningful(value) and _first_word(value) not in _POINTERS


def _chinese_object(value: str, *, min_length: int = 1) -> bool:
    return (
        len(value) >= min_length
        and _meaningful(value)
        and not value.startswith(_CHINESE_POINTERS)
        and not _CHINESE_QUESTION.search(value)
    )


def _name_like(word: str) -> bool:
    return (
        word[:1].isupper()
        and not (len(word) > 1 and word.isupper())
        and word.casefold() not in _NOT_NAMES
        and all(char.isalpha() or char in "-'" for char in word)
    )


def _leading_name(phrase: str, *, capitalised: bool) -> str | None:
    """Up to three leading name words; the first may be lower case unless ``capitalised``."""
    words: list[str] = []
    for word in phrase.split()[:3]:
        first_loose = not words and not capitalised
        if _name_like(word) or (
            first_loose and word.isalpha() and word.casefold() not in _NOT_NAMES
        ):
            words.append(word)
        else:
            break
    return " ".join(words) or None


#: (trigger match, phrase after it) -> (content, value), or None to drop the match.
_Shape: TypeAlias = Callable[[re.Match[str], str], tuple[str, str] | None]


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    category: str
    predicate: str
    shape: _Shape


def _english(template: str, *, check: Callable[[str], bool] = _english_object) -> _Shape:
    """``template`` gets ``{value}`` and the match's named groups (``None`` as "")."""

    def shape(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
        if not check(phrase):
            return None
        groups = {k: (v or "").lower() for k, v in match.groupdict().items()}
        return template.format(**groups, value=_third_person(phrase)), phrase

    return shape


def _chinese(template: str, *, min_length: int = 1) -> _Shape:
    def shape(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
        if not _chinese_object(phrase, min_length=min_length):
            return None
        groups = {k: (v or "") for k, v in match.groupdict().items()}
        return template.format(**groups, value=_third_person(phrase)), phrase

    return shape


def _name(*, capitalised: bool) -> _Shape:
    def shape(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
        name = _leading_name(phrase, capitalised=capitalised)
        return (f"User's name is {name}", name) if name else None

    return shape


def _chinese_name(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
    phrase = re.split(r"[我是\s]|今年", phrase, maxsplit=1)[0]
    if phrase[:1].isascii():
        name = _leading_name(phrase, capitalised=False)
        return (f"用户叫{name}", name) if name else None
    if 1 <= len(phrase) <= 4 and _chinese_object(phrase):
        return f"用户叫{phrase}", phrase
    return None


def _age(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
    age = match["age"]
    if match.group().startswith("我"):
        return f"用户{age}岁", age
    return f"User is {age} years old", age


def _employer(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
    parts = re.split(r"\s+as\s+", phrase, maxsplit=1, flags=re.IGNORECASE)
    employer, role = _PLACE_TAIL.sub("", parts[0]), (parts[1].strip() if len(parts) > 1 else "")
    if not _english_object(employer):
        return None
    content = f"User works {match['prep'].lower()} {_third_person(employer)}"
    return (f"{content} as {_third_person(role)}" if role else content), employer


def _role_part(phrase: str) -> str:
    return re.split(r"\s+(?:at|for|in|with)\s+", phrase, maxsplit=1, flags=re.IGNORECASE)[0]


def _english_role(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
    role = _role_part(phrase)
    if not _OCCUPATIONS.intersection(role.casefold().split()):
        return None
    return f"User is {match['art'].lower()} {_third_person(phrase)}", role


def _work_as(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
    if not _english_object(phrase):
        return None
    article = (match["art"] or "").lower()
    return f"User works as {article}{_third_person(phrase)}", _role_part(phrase)


def _place(template: str) -> _Shape:
    """A place, without a trailing time or company ("Lyon with my wife since 2019")."""
    english = _english(template)

    def shape(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
        return english(match, _PLACE_TAIL.sub("", phrase))

    return shape


def _chinese_role(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
    # Ends with the occupation: 我是说这个产品经理不好 is not a role.
    if not phrase.endswith(_CHINESE_OCCUPATIONS) or not _chinese_object(phrase):
        return None
    return f"用户是{match['mw'] or ''}{phrase}", phrase


def _preference(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
    """For "prefer X over/to/rather than Y" the value is X; "prefer to X" keeps the "to"."""
    preferred = phrase
    if not phrase.casefold().startswith("to "):
        preferred = re.split(
            r"\s+(?:over|to|rather\s+than|instead\s+of|than)\s+",
            phrase,
            maxsplit=1,
            flags=re.IGNORECASE,
        )[0]
    if not _english_object(preferred):
        return None
    return f"User prefers {_third_person(phrase)}", preferred


def _goal_check(phrase: str) -> bool:
    """No requests ("want to ask") and nothing about the listener ("hope to see you soon")."""
    return (
        _english_object(phrase)
        and _first_word(phrase) not in _REQUEST_VERBS
        and _YOU.isdisjoint(phrase.casefold().split())
    )


def _chinese_goal(template: str) -> _Shape:
    chinese = _chinese(template, min_length=2)

    def shape(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
        if phrase.startswith(_CHINESE_REQUESTS) or "你" in phrase or "您" in phrase:
            return None
        return chinese(match, phrase)

    return shape


def _chinese_employer(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
    place = match["place"].strip()
    if not _chinese_object(place):
        return None
    return f"用户在{_third_person(place)}{match['verb']}", place


_I_AM = r"\bi(?:'m|\s+am)\s+"
_ADVERB = r"(?:(?:really|also|just|absolutely|truly|totally|still|actually|do)\s+)?"
_ZH_ADVERB = r"(?:也|很|非常|特别|真的|真|超|一直|都|还|确实)?"
_THIRD = {"like": "likes", "love": "loves", "enjoy": "enjoys", "adore": "adores"}
_DISLIKE = {"hate": "hates", "": "dislikes"}
_GOAL_VERB = {"want": "wants", "plan": "plans", "hope": "hopes", "intend": "intends"}
_ZH_PLACE = r"(?P<place>[^,.!?;\n我" + _ZH_PUNCT + r"]{1,30}?)"


def _rule(pattern: str, category: str, predicate: str, shape: _Shape) -> _Rule:
    return _Rule(re.compile(pattern, re.IGNORECASE), category, predicate, shape)


def _verb_shape(template: str, verbs: dict[str, str], check: Callable[[str], bool]) -> _Shape:
    """``{verb}`` is the third-person form of the match's ``verb`` group ("" if absent)."""

    def shape(match: re.Match[str], phrase: str) -> tuple[str, str] | None:
        if not check(phrase):
            return None
        verb = verbs[(match["verb"] or "").casefold()]
        return template.format(verb=verb, value=_third_person(phrase)), phrase

    return shape


# One rule a line or two: pattern, category, predicate, shape. Order breaks ties between
# rules that match at the same place (the first one's content is kept).
# fmt: off
_RULES: tuple[_Rule, ...] = (
    # identity
    _rule(r"\bmy\s+name(?:\s+is|'s)\s+", "identity", "name", _name(capitalised=False)),
    _rule(r"\bcall\s+me\s+", "identity", "name", _name(capitalised=True)),
    _rule(_I_AM, "identity", "name", _name(capitalised=True)),
    _rule(_I_AM + r"(?P<age>\d{1,3})\s*(?:years?\s+old|y/?o)\b", "identity", "age", _age),
    _rule(r"我(?:今年)?(?P<age>\d{1,3}|[零一二两三四五六七八九十百]{1,4})岁",
          "identity", "age", _age),
    _rule(r"我叫|我的名字(?:是|叫)", "identity", "name", _chinese_name),
    _rule(r"\bi\s+(?:currently\s+|now\s+)?live\s+in\s+",
          "identity", "location", _place("User lives in {value}")),
    _rule(r"(?:" + _I_AM + r"|\bi\s+come\s+)from\s+",
          "identity", "location", _place("User is from {value}")),
    _rule(_I_AM + r"based\s+in\s+", "identity", "location", _place("User is based in {value}")),
    _rule(r"\bi\s+(?:just\s+|recently\s+)?(?:moved|relocated)\s+to\s+",
          "identity", "location", _place("User moved to {value}")),
    _rule(r"我(?:现在)?住在", "identity", "location", _chinese("用户住在{value}")),
    _rule(r"我来自", "identity", "location", _chinese("用户来自{value}")),
    _rule(r"我(?:刚|最近)?搬到了?", "identity", "location", _chinese("用户搬到{value}")),
    # work
    _rule(r"\bi\s+(?:currently\s+|now\s+)?work\s+(?P<prep>at|for)\s+",
          "project", "employer", _employer),
    _rule(r"\bi\s+(?:currently\s+|now\s+)?work\s+as\s+(?P<art>an?\s+)?",
          "project", "role", _work_as),
    _rule(_I_AM + r"(?P<art>an?)\s+", "project", "role", _english_role),
    _rule(_I_AM + r"(?:currently\s+|now\s+|still\s+)?(?P<verb>working\s+on|building)\s+",
          "project", "working_on", _english("User is {verb} {value}")),
    _rule(r"我(?:现在)?在" + _ZH_PLACE + r"(?P<verb>工作|上班)",
          "project", "employer", _chinese_employer),
    _rule(r"我是(?P<mw>一名|一个|一位|一)?", "project", "role", _chinese_role),
    _rule(r"我(?:正在|在)(?P<verb>做|开发|搞)",
          "project", "working_on", _chinese("用户在{verb}{value}", min_length=2)),
    # preferences
    _rule(r"\bi\s+" + _ADVERB + r"(?P<verb>like|love|enjoy|adore)\s+",
          "preference", "likes", _verb_shape("User {verb} {value}", _THIRD, _english_object)),
    _rule(r"\bi\s+" + _ADVERB + r"(?:(?:don't|dont|do\s+not)\s+(?:really\s+)?(?:like|love|enjoy)"
          r"|(?P<verb>hate)|dislike|(?:can't|cannot|can\s+not)\s+stand)\s+",
          "preference", "dislikes", _verb_shape("User {verb} {value}", _DISLIKE, _english_object)),
    _rule(r"\bi\s+(?:(?:really|much|generally|usually|always|also|still)\s+)?prefer\s+",
          "preference", "prefers", _preference),
    _rule(r"\bmy\s+(?:all-time\s+)?(?P<what>favou?rite\s+[^\W\d_]+(?:\s+[^\W\d_]+)?)\s+is\s+",
          "preference", "likes", _english("User's {what} is {value}")),
    # Before the general 喜欢 rule, which gives the same content with a worse value.
    _rule(r"我(?P<verb>最喜欢|最爱)的(?P<what>[^\s\d" + _ZH_PUNCT + r"]{1,6}?)是",
          "preference", "likes", _chinese("用户{verb}的{what}是{value}")),
    _rule(r"我" + _ZH_ADVERB + r"(?P<verb>最喜欢|喜欢|喜爱|热爱|爱(?![好人]))",
          "preference", "likes", _chinese("用户{verb}{value}")),
    _rule(r"我的爱好是", "preference", "likes", _chinese("用户的爱好是{value}")),
    _rule(r"我" + _ZH_ADVERB + r"(?P<verb>不喜欢|不爱|讨厌|受不了|反感)",
          "preference", "dislikes", _chinese("用户{verb}{value}")),
    _rule(r"我(?:也|还是)?(?P<verb>更喜欢|更爱|偏好|宁愿|更倾向于?)",
          "preference", "prefers", _chinese("用户{verb}{value}")),
    # goals
    _rule(r"\bi\s+(?:(?:really|also|still)\s+)?(?P<verb>want|plan|hope|intend)\s+to\s+",
          "goal", "goal", _verb_shape("User {verb} to {value}", _GOAL_VERB, _goal_check)),
    _rule(_I_AM + r"(?P<verb>planning|trying|hoping|aiming)\s+to\s+",
          "goal", "goal", _english("User is {verb} to {value}", check=_goal_check)),
    _rule(r"\bmy\s+(?:main\s+|big\s+)?goal\s+is\s+(?P<to>to\s+)?",
          "goal", "goal", _english("User's goal is {to}{value}", check=_goal_check)),
    _rule(r"我(?P<verb>想|打算|计划|希望|准备)",
          "goal", "goal", _chinese_goal("用户{verb}{value}")),
    _rule(r"我的目标是", "goal", "goal", _chinese_goal("用户的目标是{value}")),
)
# fmt: on


def extract_facts(user_text: str, *, confidence: float = 0.6) -> list[ExtractedFact]:
    """Facts the user states about themselves, in text order, without duplicates.

    Never raises for any ``user_text``; raises ``ValueError`` if ``confidence``
    is outside 0..1.
    """
    if not 0.0 <= confidence <= 1.0 or math.isnan(confidence):
        raise ValueError(f"confidence must be within 0..1, not {confidence!r}")
    text = user_text.translate(_APOSTROPHES)
    found: list[tuple[int, int, ExtractedFact]] = []
    for order, rule in enumerate(_RULES):
        for match in rule.pattern.finditer(text):
            phrase, ender = _clip(text, match.end())
            if ender in ("?", "\uff1f"):
                continue
            shaped = rule.shape(match, phrase)
            if shaped is None:
                continue
            content, value = shaped
            fact = ExtractedFact(
                content=content,
                category=rule.category,
                confidence=confidence,
                updates_previous=False,
                subject="user",
                predicate=rule.predicate,
                value=value,
            )
            found.append((match.start(), order, fact))
    seen: set[str] = set()
    facts: list[ExtractedFact] = []
    for _, _, fact in sorted(found, key=lambda item: item[:2]):
        if fact.content.casefold() not in seen:
            seen.add(fact.content.casefold())
            facts.append(fact)
    return facts
