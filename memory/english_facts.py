"""Statements English clauses share, whatever their verb: values, places, jobs, status, diet.

``values`` reads a list value and emits one statement per item; an item that opens
with a verb of its own ("I play the piano and sing in a choir") is read again as a
clause of its own with the same subject (``Reading.dispatch``). The others emit
the facts several verbs lead to: a place (live, move, be based in), an employer
and a role (work at/as, start at, be a ...), a relationship status, a diet, a name.
"""

from __future__ import annotations

from memory.english_phrase import (
    Phrase,
    Reading,
    capitalize_place,
    detail,
    items,
    pointer,
    say,
)
from memory.english_phrase import value as read_value
from memory.lexicon import DIETS, NOT_NAMES, VERBS, lemma

__all__ = [
    "ARTICLES",
    "STATUSES",
    "diet",
    "emit_role",
    "employer",
    "occupation",
    "place",
    "read_name",
    "status",
    "strip_article",
    "tail",
    "values",
]

ARTICLES = frozenset("a an the".split())


STATUSES = frozenset("married engaged single divorced widowed separated remarried".split())


#: Verbs that are nouns too: a list item "dance" is a thing liked, not a second verb.
_NOUNS_TOO = frozenset(
    "dance cook run walk swim fish drink train travel design code journal garden paint draw"
    " bike ski surf skate climb hike jog play work study love hate like call visit"
    " support help care smoke vape brew bake stay rent hunt knit sew".split()
)


def tail(phrase: Phrase, value: str, prep: str = "") -> str:
    return f"{prep} {value}".strip() + detail(phrase)


def values(
    reading: Reading,
    predicate: str,
    verb: str,
    prep: str = "",
    *,
    category: str | None = None,
    negated: bool | None = None,
) -> None:
    """Read a list value and emit one statement per item."""
    phrase = reading.phrase
    found = read_value(phrase)
    if pointer(found):
        return
    rest = detail(phrase)
    listed = items(found)
    verbs = [len(listed) > 1 and _second_verb(item) for item in listed]
    for item, is_verb in zip(listed, verbs, strict=True):
        first = item.split(" ", 1)[0]
        if is_verb:
            # "I play guitar and sing in a band": a second verb with the same subject.
            nested = Phrase.of(f"{item}{rest}")
            nested.pos = 1
            if reading.dispatch is not None:
                reading.dispatch(reading.again(nested), lemma(first))
            continue
        # What follows the list belongs to the verb phrase after it, if there is one.
        tail = "" if any(verbs) else rest
        content = say(reading, verb, f"{prep} {item}".strip() + tail)
        reading.emit(predicate, item, content, category=category, negated=negated)


def _second_verb(item: str) -> bool:
    """A list item that opens with a verb of its own ("and sing in a choir")."""
    first = item.split(" ", 1)[0].casefold()
    return lemma(first) == first and first in VERBS and first not in _NOUNS_TOO


def place(reading: Reading, predicate: str, verb: str, prep: str, *, updates: bool) -> None:
    phrase = reading.phrase
    if phrase.peek() in ARTICLES and phrase.peek(1) in ("flat", "house", "apartment", "place"):
        while not phrase.done() and phrase.peek() not in ("in", "at"):
            phrase.pos += 1
        phrase.pos += 1
    found = read_value(phrase)
    if pointer(found) or found.casefold() in ("here", "there", "home"):
        return
    if not _placelike(found):  # "moved to the afternoon shift"
        return
    place = capitalize_place(found.split(",")[0].strip())
    content = say(reading, verb, tail(phrase, place, prep), state=not updates)
    reading.emit(predicate, place, content, updates=updates or reading.group.change)


#: Common nouns that name where someone lives ("moved to the coast").
PLACE_NOUNS = frozenset(
    """
    city town village countryside country coast seaside suburbs suburb island mountains
    north south east west midlands area neighbourhood neighborhood district capital states
    flat house apartment place street road estate farm valley bay outskirts abroad
    """.split()
)


def _placelike(found: str) -> bool:
    """A name ("Leeds", "leeds"), or a description of a kind of place ("the coast", "a
    small town"): "the afternoon shift" and "a new team" are not where someone lives."""
    words = found.split()
    if not words or words[0].casefold() not in _DETERMINERS:
        return True
    rest = [w.casefold() for w in words[1:]]
    if any(w[:1].isupper() for w in words[1:]) or any(w in PLACE_NOUNS for w in rest):
        return True
    return " ".join(rest) in _THE_COUNTRIES


_DETERMINERS = frozenset("the a an my our another some their his her".split())
#: Countries people name with "the", typed in lower case.
_THE_COUNTRIES = frozenset(
    "netherlands philippines uk us usa uae states bahamas maldives".split()
) | {"czech republic"}


def employer(reading: Reading, prep: str, *, updates: bool = False) -> None:
    phrase = reading.phrase
    if phrase.peek() in ("myself", "home"):
        return
    found = read_value(phrase)
    if pointer(found):
        return
    employer = capitalize_place(found) if len(found.split()) <= 3 else found
    role = ""
    if phrase.take("as"):
        role = read_value(phrase)
    where = "" if role else detail(phrase)  # "a small design agency | in Cork"
    change = updates or reading.group.change
    state = not updates
    reading.emit(
        "employer",
        employer,
        say(reading, "work", f"{prep} {employer}{where}", state=state),
        updates=change,
    )
    if role and not pointer(role):
        emit_role(reading, role, "work", "as", updates=change)


def strip_article(text: str) -> tuple[str, str]:
    first, _, rest = text.partition(" ")
    if first.casefold() in ARTICLES and rest:
        return first.casefold(), rest
    return "", text


def emit_role(
    reading: Reading, role: str, verb: str, prep: str, *, updates: bool, rest: str = ""
) -> None:
    article, bare = strip_article(role)
    if not article and verb == "be":
        article = "an" if bare[:1].casefold() in "aeiou" else "a"
    shown = f"{article} {bare}".strip()
    content = say(reading, verb, f"{prep} {shown}".strip() + rest, state=not updates)
    reading.emit("occupation", bare, content, updates=updates or reading.group.change)


def occupation(
    reading: Reading, verb: str, prep: str, *, updates: bool = False, until: str | None = None
) -> None:
    phrase = reading.phrase
    role = read_value(phrase)
    if until is not None and until in role.casefold().split():
        words = role.split()
        cut = [w.casefold() for w in words].index(until) + 1
        role, rest_words = " ".join(words[:cut]), words[cut:]
        phrase.pos -= len(rest_words)
    if pointer(role):
        return
    if phrase.peek() in ("at", "for") and phrase.word(1)[:1].isupper():
        emit_role(reading, role, verb, prep, updates=updates)
    else:
        emit_role(reading, role, verb, prep, updates=updates, rest=detail(phrase))
        return
    if phrase.peek() in ("at", "for"):
        at = phrase.peek()
        phrase.pos += 1
        employer = read_value(phrase)
        if employer[:1].isupper():
            reading.emit(
                "employer",
                employer,
                say(reading, "work", f"{at} {employer}", state=not updates),
                updates=updates or reading.group.change,
            )


def status(reading: Reading, status: str, *, updates: bool = False) -> None:
    """single / married (to X) / engaged (to X) ..."""
    phrase = reading.phrase
    status = "married" if status == "remarried" else status
    shown = status
    if phrase.take("to"):
        partner = read_value(phrase)
        if partner and not pointer(partner):
            shown = f"{status} to {partner}"
    if updates:  # "we got married in June 2019 at Lake Como"
        content = f"{reading.speaker.english()} got {shown}{detail(reading.phrase)}"
    else:
        content = say(reading, "be", shown)
    reading.emit("relationship_status", status, content, updates=updates or reading.group.change)


#: Words between "am" and a diet that leave the diet as it is ("a strict vegan").
DIET_MODIFIERS = frozenset("strict fully mostly proper full committed lifelong".split())


def diet_ahead(phrase: Phrase) -> bool:
    """A diet at the phrase's position, after an article and modifiers."""
    offset = 0
    while phrase.peek(offset) in ARTICLES or phrase.peek(offset) in DIET_MODIFIERS:
        offset += 1
    return phrase.peek(offset) in DIETS


def diet(reading: Reading) -> None:
    phrase = reading.phrase
    phrase.skip(ARTICLES | DIET_MODIFIERS)
    diet = phrase.low[phrase.pos]
    phrase.pos += 1
    reading.emit("diet", diet, say(reading, "be", diet + detail(phrase)), updates=True)


def read_name(reading: Reading, *, capitalised: bool = False, updates: bool = False) -> None:
    """Up to three name words at the phrase's position: the user's name; the first may be
    lower case unless ``capitalised``."""
    phrase = reading.phrase
    words: list[str] = []
    while len(words) < 3 and not phrase.done():
        word = phrase.word()
        loose = not words and not capitalised
        if not word.isalpha() or word.casefold() in NOT_NAMES:
            break
        if not (word[:1].isupper() or loose):
            break
        words.append(word if word[:1].isupper() else word.capitalize())
        phrase.pos += 1
    if words and reading.speaker.is_user:
        name = " ".join(words)
        reading.emit("name", name, f"User's name is {name}", negated=False, updates=updates)
