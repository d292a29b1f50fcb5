"""Reading an English clause: tokens, the verb group, values cut from complements, rendering.

A value runs from where a handler points to the first boundary: a comma that
does not continue a list, a preposition or adverb that starts an adverbial
("green tea | in the morning", "meat | pretty much every day"), a relative
clause. What follows the value is kept as detail in the fact's content, less
the words that only mark change or time ("now", "last month", "anymore").
Content restates the clause about the subject in the third person with the
user's own verb: "User loves hiking on weekends", "User no longer eats meat".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from memory.lexicon import gerund, past, third_person
from memory.statements import People, Speaker, Statement

__all__ = [
    "Group",
    "Phrase",
    "Reading",
    "capitalize_place",
    "detail",
    "items",
    "pointer",
    "say",
    "third_person_words",
    "tokens",
    "value",
    "years_old",
]

#: A word (with the marks names and handles carry: "AT&T", "C++", "@ann"), a comma, an
#: "&" standing for "and" ("rock & roll"), or the hole ``memory.clauses.normalize`` left
#: where it took code, markup or a quotation out.
_TOKEN = re.compile(r"[\w@#+&'./:-]*[\w#+]|,|&|\u2026")

#: Words that end a value: what follows is an adverbial, a relative clause or a new clause.
_BOUNDARY = frozenset(
    """
    , every each since last next ago now anymore again too also lately recently nowadays
    daily weekly monthly yearly often usually always sometimes especially particularly
    mostly mainly because when whenever while which who whom whose where though although
    these in on at for with from to as near by like during until after before than instead
    over rather so very really either anyway twice once that if unless whereas except but
    without pretty much quite almost nearly basically literally currently still back
    right around about whatsoever lol haha sadly luckily though tho anymore tbh imo btw
    honestly lmao rn myself yourself himself herself ourselves most up down \u2026
    """.split()
)
#: Leading words of a detail that say only when or how surely something changed.
#: Boundary words that cannot begin a value either: "I run | every morning".
_NEVER_FIRST = _BOUNDARY - frozenset(
    "in on at for with from to as near by like over around about without that".split()
)
_TIME_DROPS = frozenset(
    """
    now anymore again too also lately recently nowadays currently still either anyway
    really sadly luckily unfortunately fortunately honestly lol haha tho though back tbh imo
    btw lmao rn completely totally entirely myself yourself himself herself ourselves
    """.split()
)
_UNITS = frozenset(
    "year years month months week weeks day days decade decades summer winter spring fall"
    " autumn weekend night time while hour hours minute minutes".split()
)
_DETAIL_AFTER_COMMA = frozenset(
    "especially particularly mostly mainly like including usually every on in at with"
    " preferably ideally".split()
)
_DETAIL_END = frozenset(
    "because which who whom though although whereas but so and if unless when whenever"
    " \u2026".split()
)
#: First words of an object that points at the conversation, not the world.
_POINTERS = frozenset(
    """
    it it's its that this these those you your yours him her them they he she we us what
    which who when how why where if whether so such both all none there here one something
    anything nothing everything someone anyone
    """.split()
)
_COMPOUNDS = frozenset(
    """
    rock-and-roll mac-and-cheese fish-and-chips salt-and-pepper black-and-white
    drum-and-bass bread-and-butter peanut-butter-and-jelly pride-and-prejudice
    dungeons-and-dragons arts-and-crafts r&b rhythm-and-blues hip-hop law-and-order
    """.split()
)


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


@dataclass(slots=True)
class Group:
    """The verb group before the main verb or complement."""

    negated: bool = False
    change: bool = False
    used_to: bool = False
    past: bool = False
    perfect: bool = False
    progressive: bool = False
    ability: bool = False
    #: A frequency adverb kept for the content ("usually").
    frequency: str = ""


@dataclass(slots=True)
class Phrase:
    """A clause's tokens (original and casefolded) and a read position."""

    toks: list[str]
    low: list[str]
    pos: int = 0

    @classmethod
    def of(cls, text: str) -> Phrase:
        toks = tokens(text)
        return cls(toks, [t.casefold() for t in toks])

    def peek(self, offset: int = 0) -> str:
        at = self.pos + offset
        return self.low[at] if 0 <= at < len(self.low) else ""

    def peek_at(self, index: int) -> str:
        """The casefolded token at ``index`` (not relative to the position)."""
        return self.low[index] if 0 <= index < len(self.low) else ""

    def word(self, offset: int = 0) -> str:
        at = self.pos + offset
        return self.toks[at] if 0 <= at < len(self.toks) else ""

    def take(self, *words: str) -> bool:
        """Consume ``words`` if they come next."""
        if all(self.peek(i) == w for i, w in enumerate(words)):
            self.pos += len(words)
            return True
        return False

    def skip(self, words: frozenset[str]) -> None:
        while self.peek() in words:
            self.pos += 1

    def done(self) -> bool:
        return self.pos >= len(self.toks)


@dataclass(slots=True)
class Reading:
    """One clause being read: whose it is, its verb group, and what it found."""

    speaker: Speaker
    group: Group
    phrase: Phrase
    found: list[Statement] = field(default_factory=list)
    #: A time or occasion phrase said before the subject ("on Sundays"), for the content.
    occasion: str = ""
    #: The message talks about work: "I'm at Spotify now" names an employer.
    work: bool = False
    #: The whole message, for what a clause leaves unsaid ("I've quit" what?).
    message: str = ""
    #: The conversation's cast: people a clause introduces are met here.
    people: People = field(default_factory=People)
    #: Reads a verb and its complement (``memory.english_verbs.dispatch``): a second verb
    #: phrase of the same subject ("and sing in a choir") is read with it.
    dispatch: Callable[[Reading, str], None] | None = None

    def again(self, phrase: Phrase) -> Reading:
        """The same subject, verb group and findings, reading another phrase."""
        return Reading(
            self.speaker,
            self.group,
            phrase,
            self.found,
            occasion=self.occasion,
            work=self.work,
            message=self.message,
            people=self.people,
            dispatch=self.dispatch,
        )

    def emit(
        self,
        predicate: str,
        value_text: str,
        content: str,
        *,
        key: str | None = None,
        updates: bool = False,
        category: str | None = None,
        negated: bool | None = None,
    ) -> None:
        if not value_text.strip():
            return
        self.found.append(
            Statement(
                predicate=predicate,
                value=value_text.strip(),
                content=content,
                speaker=self.speaker,
                key=key,
                negated=self.group.negated if negated is None else negated,
                updates_previous=updates,
                category=category,
            )
        )


def _list_goes_on(low: list[str], at: int) -> bool:
    """After the comma at ``at``: another list item follows ("tea, coffee and juice")."""
    for word in low[at + 1 : at + 6]:
        if word in (",", "and", "or", "&"):
            return True
        if word in _BOUNDARY:
            return False
    return False


_NOT_ADVERBS = frozenset(
    "family italy jelly belly lily rally ally holly sally molly emily kelly july bully curly"
    " early only reply supply assembly butterfly".split()
)


def _adverb(word: str) -> bool:
    """ "completely", "fluently": an -ly adverb ends a value too."""
    return len(word) > 5 and word.endswith("ly") and word not in _NOT_ADVERBS


def value(phrase: Phrase) -> str:
    """The value starting at the phrase's position, up to its boundary; advances past it."""
    start = phrase.pos
    low = phrase.low
    while phrase.pos < len(low):
        word = low[phrase.pos]
        if word == "," and _list_goes_on(low, phrase.pos):
            phrase.pos += 1
            continue
        if (word in _BOUNDARY or _adverb(word)) and (phrase.pos > start or word in _NEVER_FIRST):
            break
        if word == ",":
            break
        if phrase.pos > start and _counted_time(low, phrase.pos):
            break  # "energy drinks | two weeks ago"
        phrase.pos += 1
    words = phrase.toks[start : phrase.pos]
    while words and words[-1].casefold() in _NO_END:
        words.pop()
    return _join(words)


#: Words a value never ends with: a list's joint, or an article or possessive whose noun
#: was cut off ("I like the <script>...</script> tag": the reader stops at the hole).
_NO_END = frozenset("and or , & the a an my our their".split())


_NUMBER_WORDS = frozenset(
    "a an one two three four five six seven eight nine ten few couple".split()
)


def _counted_time(low: list[str], i: int) -> bool:
    """ "two weeks", "3 years", "a couple of months": a span of time starts at ``i``."""
    if not (low[i].isdigit() or low[i] in _NUMBER_WORDS):
        return False
    j = i + 1
    if j < len(low) and low[j] in ("few", "couple"):
        j += 1
    if j < len(low) and low[j] == "of":
        j += 1
    return j < len(low) and low[j] in _UNITS and low[i] not in ("a", "an")


def _join(words: list[str]) -> str:
    return " ".join(words).replace(" ,", ",")


def detail(phrase: Phrase) -> str:
    """What follows a value, for the content: adverbials kept, change and time markers out."""
    words = phrase.toks[phrase.pos :]
    low = phrase.low[phrase.pos :]
    kept: list[str] = []
    i = 0
    while i < len(words):
        word = low[i]
        if word in _DETAIL_END or (
            word == "," and i + 1 < len(low) and low[i + 1] not in _DETAIL_AFTER_COMMA
        ):
            break
        if word in _TIME_DROPS or (word == "," and kept and kept[-1] == ","):
            i += 1
        elif word in ("last", "this", "next") and i + 1 < len(low) and low[i + 1] in _UNITS:
            i += 2
        elif word == "ago":
            while kept and (kept[-1].isdigit() or kept[-1].casefold() in _UNITS | {"a", "few"}):
                kept.pop()
            i += 1
        elif word in ("since", "for") and i + 1 < len(low) and _duration(low[i + 1 : i + 4]):
            i += 1
            while i < len(low) and low[i] not in _DETAIL_END and low[i] != ",":
                i += 1
        elif word in ("these", "right", "at") and low[i + 1 : i + 3] in (
            ["days"],
            ["now"],
            ["the", "moment"],
        ):
            i += 2 if word != "at" else 3
        elif low[i : i + 2] in (["as", "well"], ["a", "lot"], ["so", "much"], ["very", "much"]):
            i += 2
        else:
            kept.append(words[i])
            i += 1
    while kept and kept[-1] == ",":
        kept.pop()
    text = _join(kept)
    if text.startswith(","):
        return text if len(text) > 1 else ""
    return f" {text}" if text else ""


def _duration(words: list[str]) -> bool:
    """ "for about six years", "since 2019": how long, which a fact's content leaves out."""
    if not words:
        return False
    if words[0][:2] in ("19", "20") and words[0].isdigit():
        return True  # since 2019
    return any(w in _UNITS or w == "ages" for w in words)


def pointer(text: str) -> bool:
    """Whether a value points at the conversation ("it", "that you said") or is empty."""
    first = text.split(maxsplit=1)[0].casefold() if text.strip() else ""
    return not first or first in _POINTERS or not any(c.isalnum() for c in text)


def items(text: str) -> list[str]:
    """A list value's items ("tea, coffee and juice"), compounds ("rock and roll") whole,
    and names after a counted noun kept with it ("two cats, Miso and Tofu")."""
    if "-".join(text.casefold().replace(" & ", " and ").split()) in _COMPOUNDS:
        return [text]
    parts = [p.strip() for p in re.split(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+", text)]
    parts = [p for p in parts if p]
    if len(parts) > 1 and all(p[:1].isupper() and " " not in p for p in parts[1:]):
        first = parts[0].split()
        if first and (first[0].isdigit() or first[0].casefold() in _COUNTS):
            return [text]
    return parts or [text]


_COUNTS = frozenset("a an one two three four five six seven eight nine ten some several".split())


_VOWELS = frozenset("aeiou")
#: Names typed in lower case that are written in capitals although they have vowels.
_ABBREVIATIONS = frozenset("st mt dr mr mrs ms jr sr ft".split())
_ACRONYMS = frozenset("usa uk us uae eu la dc nhs un ibm ubs ucla nasa".split())


def capitalize_place(text: str) -> str:
    """``paris`` -> ``Paris``, ``the bbc`` -> ``the BBC`` for a name typed in lower case;
    anything with capitals stays."""
    if text != text.casefold() or text.split(" ", 1)[0] in ("a", "an", "my", "our", "some"):
        return text  # capitals already, or a description ("a small agency"), not a name
    words = []
    for word in text.split():
        if word in ("of", "de", "la", "the", "and"):
            words.append(word)
        elif word in _ABBREVIATIONS:
            words.append(word.capitalize())
        elif word in _ACRONYMS or (len(word) <= 4 and word.isalpha() and not set(word) & _VOWELS):
            words.append(word.upper())
        else:
            words.append(word.capitalize())
    return " ".join(words)


_THIRD_PERSON = (
    (re.compile(r"\bmyself\b", re.IGNORECASE), "themselves"),
    (re.compile(r"\bmine\b", re.IGNORECASE), "theirs"),
    (re.compile(r"\bmy\b", re.IGNORECASE), "their"),
    (re.compile(r"\bme\b", re.IGNORECASE), "them"),
    (re.compile(r"\bI\b"), "they"),
)


def third_person_words(text: str) -> str:
    """ "my grandma" -> "their grandma": the user's words about themselves, restated."""
    for pattern, replacement in _THIRD_PERSON:
        text = pattern.sub(replacement, text)
    return text


def years_old(age: str) -> str:
    """ "34 years old", "1 year old"."""
    return f"{age} year old" if age == "1" else f"{age} years old"


def say(reading: Reading, verb: str, tail: str, *, state: bool = True) -> str:
    """The clause restated: ``<subject> <verb form> <tail>``. ``state``: a simple past means
    it held before and no longer does ("I lived in Rome"); for events it does not."""
    group = reading.group
    subject = reading.speaker.english()
    earlier = group.used_to or (state and group.past and not group.perfect)
    if group.progressive and not group.negated and not earlier and verb != "be":
        form = f"is {gerund(verb)}"
    elif verb == "be":
        if earlier and group.negated and not group.used_to:  # "I was never married"
            form = "was not"
        elif earlier:
            form = "was previously"
        elif group.negated and group.change:
            form = "is no longer"
        else:
            form = "is not" if group.negated else "is"
    elif earlier and group.negated and not group.used_to:  # "I didn't have a car"
        form = f"did not {verb}"
    elif earlier:
        form = f"previously {past(verb)}"
    elif group.negated and group.change:
        form = f"no longer {third_person(verb)}"
    elif group.negated and verb == "have been":
        form = "has not been"
    elif group.negated and verb == "have":
        form = "has not had" if group.perfect else "doesn't have"
    elif group.negated:
        form = f"doesn't {verb}"
    elif group.ability:
        form = f"can {verb}"
    else:
        form = third_person(verb)
    if group.frequency and not earlier and not group.negated:
        form = f"{group.frequency} {form}"
    if reading.speaker.is_user:
        tail = third_person_words(tail)
    text = f"{subject} {form} {tail}".strip()
    return f"{text} {reading.occasion}" if reading.occasion else text
