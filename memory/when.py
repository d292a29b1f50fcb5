"""When a query is about: the time span its words anchor it to, relative to its own time.

"last month", "two weeks ago", "yesterday", "in 2022", "上个月", "三天前" name a
span of time; "now", "currently", "these days", "最近", "现在" ask for what is
true at the query's time (``recent``). Pure: the query's time is a parameter
(the request's, or now). A question in the past tense ("when did...", "what
was...", "...了") asks about a past event or state (``past``), not what holds
now. Spans are generous (a person's "two weeks ago" is not
to the day): each is widened by ``slack`` of its own length on both sides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["TimeAnchor", "anchor_of", "without_relative_time"]

_DAY = 86400.0
_UNITS = {"day": 1.0, "week": 7.0, "month": 30.0, "year": 365.0}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 4,
}
_CJK_NUMBERS: dict[str, float] = {
    "一": 1,
    "两": 2,
    "二": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
}
_CJK_NUMBERS |= {"八": 8, "九": 9, "十": 10, "几": 3, "半": 0.5}
_CJK_UNITS = {"天": 1.0, "日": 1.0, "周": 7.0, "星期": 7.0, "个星期": 7.0, "个月": 30.0}
_CJK_UNITS |= {"月": 30.0, "年": 365.0}

_NUMBER = "|".join(sorted((re.escape(n) for n in _NUMBERS), key=len, reverse=True))
_AGO = re.compile(rf"\b(\d+|{_NUMBER})\s+(day|week|month|year)s?\s+ago\b")
_PAST = re.compile(
    rf"\b(?:(?:in|over|during) )?the (?:past|last) (?:(\d+|{_NUMBER}) )?(day|week|month|year)s?\b"
)
_LAST = re.compile(r"\b(?:last|the past) (week|month|year|weekend)\b")
_THIS = re.compile(r"\bthis (week|month|year|weekend)\b")
_WEEKDAY = re.compile(r"\blast (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b")
_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_MONTH = re.compile(rf"\b(?:in|during|of) ({'|'.join(_MONTHS)})\b")
_YEAR = re.compile(r"\b(?:in|during|of) (19\d\d|20\d\d)\b")
_RECENT = re.compile(
    r"\b(now|currently|current|these days|nowadays|at the moment|right now|lately|"
    r"recently|recent|so far|by now|still|anymore|any more)\b"
)
_CJK_AGO = re.compile(
    r"([一两二三四五六七八九十几半\d]+)\s*(个星期|星期|个月|天|日|周|月|年)(?:以)?前"
)
#: Words that reach back a number of days from the query's time.
_BACK = {
    "yesterday": 2.0,
    "昨天": 2.0,
    "前天": 3.0,
    "上周": 14.0,
    "上星期": 14.0,
    "上个星期": 14.0,
    "上个月": 60.0,
    "上月": 60.0,
    "去年": 730.0,
    "这周": 7.0,
    "本周": 7.0,
    "这个月": 31.0,
    "本月": 31.0,
    "今年": 366.0,
}
_CJK_RECENT = ("最近", "现在", "目前", "如今", "当前", "近来", "还在", "仍然")


_PAST_TENSE = re.compile(r"\b(did|was|were)\b")
#: "had" is past unless it is "have/has ... had" (present perfect: "how long have I had").
_HAD = re.compile(r"\bhad\b")
_PERFECT = re.compile(r"\b(have|has|'ve)\b")
_CJK_PAST = ("了", "过", "当时", "那时")


@dataclass(frozen=True, slots=True)
class TimeAnchor:
    """What a query says about time: the span it names (epoch seconds, both ends
    included; None: no span), whether it asks for what is true now, and whether it
    asks about the past ("when did...", "what was...") rather than the present."""

    start: float | None = None
    end: float | None = None
    recent: bool = False
    past: bool = False

    @property
    def spans(self) -> bool:
        return self.start is not None and self.end is not None

    def holds(self, at: float) -> bool:
        """Whether a message at ``at`` (epoch seconds) falls in the span."""
        return self.start is not None and self.end is not None and self.start <= at <= self.end


def _count(raw: str) -> float:
    return float(raw) if raw.isdigit() else float(_NUMBERS.get(raw, 1))


def _cjk_count(raw: str) -> float:
    if raw.isdigit():
        return float(raw)
    if raw == "十":
        return 10.0
    if raw.startswith("十"):  # 十二
        return 10.0 + _CJK_NUMBERS.get(raw[1:], 0)
    if raw.endswith("十"):  # 二十
        return 10.0 * _CJK_NUMBERS.get(raw[:-1], 1)
    return float(_CJK_NUMBERS.get(raw[0], 1))


def _span(now: float, back_days: float, length_days: float, slack: float) -> tuple[float, float]:
    """From ``back_days`` before ``now`` for ``length_days`` (capped at now), widened."""
    start = now - back_days * _DAY
    end = min(now, start + max(length_days, 1.0) * _DAY)
    widen = max(end - start, _DAY) * slack
    return start - widen, min(now, end + widen)


def anchor_of(query: str, now: datetime, *, slack: float = 0.5) -> TimeAnchor:
    """The time anchor of ``query`` asked at ``now`` (see the module docstring)."""
    text = " ".join(query.casefold().split())
    stamp = now.timestamp()
    recent = bool(_RECENT.search(text)) or any(word in query for word in _CJK_RECENT)
    past = not recent and (
        bool(_PAST_TENSE.search(text))
        or (bool(_HAD.search(text)) and not _PERFECT.search(text))
        or any(word in query for word in _CJK_PAST)
    )
    span: tuple[float, float] | None = None
    if match := _AGO.search(text):
        unit = _UNITS[match.group(2)]
        span = _span(stamp, _count(match.group(1)) * unit, unit, slack)
    elif match := _CJK_AGO.search(query):
        unit = _CJK_UNITS[match.group(2)]
        span = _span(stamp, _cjk_count(match.group(1)) * unit, unit, slack)
    elif match := _PAST.search(text):
        days = _count(match.group(1) or "one") * _UNITS[match.group(2)]
        span = _span(stamp, days, days, slack)
    elif match := _LAST.search(text) or _THIS.search(text):
        # "last month" reaches back to the start of the month before (or a month
        # back, as people also mean): two of its units; "this month", one.
        days = 7.0 if match.group(1) == "weekend" else _UNITS[match.group(1)]
        span = _span(stamp, days * (2 if match.re is _LAST else 1), days, 0.0)
        span = (span[0], stamp)
    elif _WEEKDAY.search(text):
        span = (stamp - 14 * _DAY, stamp)
    elif back := next((d for w, d in _BACK.items() if w in text), None):
        span = (stamp - back * _DAY, stamp)
    elif match := _MONTH.search(text):
        month = _MONTHS.index(match.group(1)) + 1
        year = now.year if month <= now.month else now.year - 1  # the last one before now
        start = now.replace(
            year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0
        )
        span = (start.timestamp(), start.timestamp() + 31 * _DAY)
    elif match := _YEAR.search(text):
        year = int(match.group(1))
        start = now.replace(year=year, month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
        span = (start.timestamp(), (start + timedelta(days=366)).timestamp())
    if span is None:
        return TimeAnchor(recent=recent, past=past)
    return TimeAnchor(span[0], span[1], recent=recent, past=past)


#: "How many days ago...", "how long ago...": the distance asked for.
_ASKED_AGO = re.compile(r"\bhow (?:many (?:days|weeks|months|years)|long) ago\b")
_RELATIVE = (_ASKED_AGO, _AGO, _PAST, _LAST, _THIS, _WEEKDAY)
_BACK_WORDS = re.compile("|".join(re.escape(word) for word in _BACK))


def without_relative_time(query: str) -> str:
    """``query`` (casefolded) without the words that place it relative to its own time
    ("two weeks ago", "in the past month", "last Saturday", "yesterday", "三天前",
    "上个月"): they anchor it (``anchor_of``), they are not what it is about, and a
    message that says them ("for the past two weeks") is not about the same time. A
    date or a month ("in May 2023") stays: it can match when a message was said."""
    text = " ".join(query.casefold().split())
    for pattern in (*_RELATIVE, _CJK_AGO, _BACK_WORDS):
        text = pattern.sub(" ", text)
    return " ".join(text.split())
