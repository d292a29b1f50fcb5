"""English clauses to statements: who the clause is about, its verb group, then its verb.

Three steps. The subject: "I"/"we" (the user), "my sister (Ana)" (another
person, remembered for the rest of the message), "my name/birthday/favourite
X" (an attribute), or a pronoun or name for a person met earlier in the
message; what comes before it must be a filler or a time phrase, not a
condition ("if", "when") or a question word. The verb group: negation ("not",
"never", "no longer"), change ("now", "just", "anymore"), "used to", modals
(hedges drop the clause; "can" is an ability), perfect and progressive aspect.
Then the verb or the copula picks the predicate and reads its complement
(``memory.english_verbs``).
"""

from __future__ import annotations

import re

from memory.clauses import Clause
from memory.english_capture import capture, introduce, pets_mentioned
from memory.english_copula import read_attribute
from memory.english_facts import read_name
from memory.english_implied import ADVERBS, BE, FILLERS, implied_i
from memory.english_phrase import Group, Phrase, Reading
from memory.english_verbs import dispatch, read_verb
from memory.lexicon import (
    DIETS,
    HEDGES,
    NATIONALITIES,
    NOT_NAMES,
    RELATIONS,
    VERBS,
    lemma,
)
from memory.statements import USER, People, Speaker, Statement

__all__ = ["english_statements"]

_QUESTION_START = frozenset(
    "do does did are is am can could would will what where who whom how why which should"
    " shall may have has".split()
)
_CONDITIONS = frozenset("if unless when whenever once suppose supposing imagine whether".split())
_CHANGE = frozenset("now just recently finally newly officially".split())
_FREQUENCY = frozenset("usually always often sometimes normally typically regularly".split())
_HEDGE_ADVERBS = frozenset("probably maybe perhaps possibly".split())
_MODALS = frozenset("will would could should might may must shall can".split())
_HAVE = frozenset("have has had".split())
#: "Another friend, Chloe, runs a bakery": a person without "my".
_NO_MORE = re.compile(r"^no (?:more|longer) (?P<x>[a-z][\w ]{1,30}?)(?: for me)?$", re.IGNORECASE)
_OPENERS = frozenset("in on at since after before during for from every each last this".split())
_IS_NEXT = frozenset("a an the so very really also not now still just".split())
_BARE_RELATIVES = frozenset(
    "mum mom dad mama papa grandma grandpa granny grandad nan nana gran".split()
)
_FRIENDS = frozenset("friend mate buddy pal colleague coworker neighbour neighbor".split())
_OCCASION_SKIP = frozenset("also well so and but oh btw anyway actually honestly plus".split())
_OCCASION_START = frozenset("for on in at every each after before during".split())
_ATTRIBUTE_NOUNS = frozenset(
    """
    name birthday email e-mail phone number mobile cell job occupation profession title role
    employer company hometown goal dream hobby hobbies diet address age pronouns major
    favorite favourite native first
    """.split()
)
_ADJECTIVES = frozenset(
    "older younger little big best oldest youngest eldest baby twin new dear dearest late"
    " ex step close good lovely".split()
)
_PARTICIPLES = frozenset(
    "known lived worked been gone done had grown spoken eaten taught become left quit begun"
    " won read run swum ridden written driven got".split()
)


def _relation(word: str) -> str | None:
    if word in RELATIONS:
        return word
    if word.endswith("s") and word[:-1] in RELATIONS:
        return word
    return None


def _possessed(phrase: Phrase, people: People) -> Speaker | str | tuple[Speaker, str] | None:
    """After "my": a person, an attribute noun, a person's attribute ("sister's name"), or None."""
    while phrase.peek() in _ADJECTIVES or phrase.peek().endswith("-year-old"):
        phrase.pos += 1
    head = phrase.peek()
    if head in _ATTRIBUTE_NOUNS:
        phrase.pos += 1
        return head
    if head.endswith("'s") and _relation(head[:-2]):
        if phrase.peek(1) in _ATTRIBUTE_NOUNS:
            phrase.pos += 2
            return people.meet(Speaker(relation=head[:-2])), phrase.low[phrase.pos - 1]
        following = phrase.peek(1)
        if not (
            following in _IS_NEXT
            or following in DIETS
            or following in NATIONALITIES
            or following.endswith(("ing", "ed"))
            or following.isdigit()
        ):
            return None  # "my son's dog": something of theirs, not what they are
        # "my partner's vegetarian": 's is "is"; the clause goes on from there.
        phrase.toks[phrase.pos] = phrase.low[phrase.pos] = "is"
        return people.meet(Speaker(relation=head[:-2]))
    relation = _relation(head)
    if relation is None:
        return None
    phrase.pos += 1
    if phrase.take("-in-law") or phrase.take("in-law"):
        relation += "-in-law"
    phrase.take(",")
    phrase.take("named") or phrase.take("called")
    name = None
    candidate = phrase.word()
    # A name: capitalised, or in lower-case text a word a verb follows ("my friend raj is").
    lowered_name = (
        candidate.islower()
        and candidate not in NOT_NAMES  # "my friend from work is ...": no one called From
        and _verb_like(phrase.peek(1))
        and not _verb_like(candidate)
    )
    if candidate.isalpha() and lemma(candidate.casefold()) != "be":
        if candidate[:1].isupper() or lowered_name:
            name = candidate.capitalize() if lowered_name else candidate
            phrase.pos += 1
            phrase.take(",")
    person = people.meet(Speaker(name=name, relation=relation))
    if phrase.take("and", "i"):
        people.last = USER
        return USER  # "my wife and I moved to Denver"
    return person


def _verb_like(word: str) -> bool:
    return word in BE or word in _HAVE or lemma(word) in VERBS or word in ADVERBS


def _clean_preamble(words: list[str]) -> bool:
    """What precedes the subject: fillers and time phrases only; no condition, no question."""
    if not words:
        return True
    if words[0] in _QUESTION_START or not _CONDITIONS.isdisjoint(words):
        return False
    if not HEDGES.isdisjoint(words) or not _HEDGE_ADVERBS.isdisjoint(words):
        return False
    if all(w in FILLERS or w == "," or w.isdigit() for w in words) or words[0] in _OPENERS:
        return True
    while (
        words
        and words[0] not in _OPENERS  # "in", "on", "for" are fillers too: a time phrase stays
        and (words[0] in FILLERS or words[0] == "," or words[0].endswith("-wise"))
    ):
        words = words[1:]  # "Anyway, in the middle of all that I ...", "Honestly, on Sundays I"
    return not words or words[0] in (
        "in",
        "on",
        "at",
        "since",
        "after",
        "before",
        "during",
        "for",
        "from",
        "every",
        "each",
        "last",
        "this",
    )


_Found = Speaker | str | tuple[Speaker, str]


def _subject(phrase: Phrase, people: People) -> _Found | None:
    """The clause's subject, with the phrase positioned after it (see ``_possessed``)."""
    for i, low in enumerate(phrase.low[:9]):
        word = phrase.toks[i]
        found: _Found | None = None
        if low in ("i", "we") or (word == "User" and i == 0):
            found, phrase.pos = USER, i + 1
        elif low in ("my", "our") or (
            low in ("another", "a") and phrase.peek_at(i + 1) in _FRIENDS
        ):
            phrase.pos = i + 1
            found = _possessed(phrase, people)
            if found is None:
                return None
        elif low in ("he", "she", "they") and people.other is not None:
            found, phrase.pos = people.other, i + 1
        elif (
            low in ("his", "her")
            and people.other is not None
            and phrase.peek_at(i + 1) in (_ATTRIBUTE_NOUNS)
        ):  # "Her name's Priya": an attribute of the person just mentioned
            phrase.pos = i + 2
            found = (people.other, phrase.low[i + 1])
        elif (
            word[:1].isupper()
            or phrase.peek_at(i + 1) in BE | _HAVE
            or lemma(phrase.peek_at(i + 1)) in VERBS
        ) and (known := people.named(word)) is not None:
            found, phrase.pos = people.meet(known), i + 1
        if found is None and i == 0 and low in _BARE_RELATIVES:  # "Mum moved in with us"
            phrase.pos = 1
            found = people.meet(Speaker(relation=low))
        if found is not None:
            preamble = phrase.low[:i]
            if found is USER and low == "i" and _partner_and(phrase.toks[:i]):
                return USER  # "Mia and I broke up": the user (and someone)
            return found if _clean_preamble(preamble) else None
    return implied_i(phrase)


def _partner_and(words: list[str]) -> bool:
    """ "Mia and", "my wife and": someone joined to the user in the subject."""
    if len(words) < 2 or len(words) > 4 or words[-1].casefold() != "and":
        return False
    head = words[:-1]
    return all(
        w[:1].isupper() or w.casefold() in ("my", "our") or w.casefold() in RELATIONS for w in head
    )


def _next_verb(phrase: Phrase) -> str:
    """The first word after the current one that is not an adverb."""
    offset = 1
    while phrase.peek(offset) in ADVERBS or phrase.peek(offset) in (
        "properly",
        "both",
        "never",
        "not",
    ):
        offset += 1
    return phrase.peek(offset)


def _participle(word: str) -> bool:
    """ "lived", "given", "quit": a past participle after "have"."""
    if word in _PARTICIPLES:
        return True
    base = lemma(word)
    return base in VERBS and word != base and not word.endswith(("s", "ing"))


def _group(phrase: Phrase) -> Group | None:
    """Read the verb group up to the main verb; None for hedges, futures and obligations."""
    group = Group()
    while not phrase.done():
        word = phrase.peek()
        if word in _HEDGE_ADVERBS:
            return None
        if word in ADVERBS:
            group.change |= word in _CHANGE
            if word in _FREQUENCY:
                group.frequency = word
            phrase.pos += 1
        elif word in ("not", "never"):
            group.negated = True
            phrase.pos += 1
        elif phrase.take("no", "longer"):
            group.negated = group.change = True
        elif phrase.take("used", "to"):
            group.used_to = group.negated = group.change = True
        elif word in ("do", "does") and phrase.peek(1) in ("not", "never", *ADVERBS):
            phrase.pos += 1
        elif word == "did" and phrase.peek(1) in ("not", "never"):
            group.past = True
            phrase.pos += 1
        elif word in _MODALS:
            if word != "can" or phrase.peek(1) == "be":
                return None
            group.ability = True
            phrase.pos += 1
        elif word in _HAVE and phrase.peek(1) == "to":
            return None
        elif word in _HAVE and _next_verb(phrase) == "got":
            # "I've (also) got two kids" is "I have two kids": read "got" as "have".
            while phrase.peek(1) != "got":
                phrase.pos += 1
                group.change |= phrase.peek() in _CHANGE
                group.negated |= phrase.peek() in ("not", "never")  # "I haven't got a car"
            phrase.pos += 1
            phrase.toks[phrase.pos] = phrase.low[phrase.pos] = "have"
            return group
        elif word in _HAVE and _participle(_next_verb(phrase)):
            group.perfect = True
            phrase.pos += 1
        elif (
            word in BE
            and (following := _next_verb(phrase)).endswith("ing")
            and (following != "being")
        ):
            group.progressive = True
            group.past |= word in ("was", "were")
            phrase.pos += 1
        else:
            return group
    return None


def _called(phrase: Phrase) -> list[Statement] | None:
    """ "(you can / people / everyone) call(s) me X", "I go by X": the user's name."""
    low = phrase.low
    for i in range(min(len(low) - 2, 5)):
        if lemma(low[i]) == "call" and low[i + 1] == "me" and _clean_caller(low[:i]):
            phrase.pos = i + 2
            reading = Reading(USER, Group(), phrase)
            read_name(reading)
            return reading.found
    return None


def _clean_caller(words: list[str]) -> bool:
    return all(
        w
        in (
            "you",
            "can",
            "just",
            "please",
            "people",
            "everyone",
            "friends",
            "all",
            "my",
            "most",
            "usually",
            "so",
            "and",
            "just",
            ",",
        )
        for w in words
    )


def english_statements(clause: Clause, people: People) -> list[Statement]:
    """What ``clause`` states, in order (see the module docstring); a pet the user calls
    theirs in passing ("my dog digs everything up") is one of theirs too."""
    if clause.question:
        return []
    said = _read(clause, people)
    if not said:
        said = capture(clause.text, people)
    return said + introduce(clause.text, people, said) + pets_mentioned(clause.text)


def _read(clause: Clause, people: People) -> list[Statement]:
    if not_any := _NO_MORE.match(clause.text):  # "no more coffee for me"
        thing = not_any.group("x")
        return [Statement("habit", thing, f"User no longer has {thing}", negated=True)]
    phrase = Phrase.of(clause.text)
    named = _called(phrase)
    if named is not None:
        return named
    found = _subject(phrase, people)
    if found is None:
        return []
    if isinstance(found, str):
        reading = Reading(USER, Group(), phrase)
        read_attribute(reading, found)
        return reading.found
    if isinstance(found, tuple):
        reading = Reading(found[0], Group(), phrase)
        read_attribute(reading, found[1])
        for statement in reading.found:
            if statement.predicate == "name":
                people.meet(Speaker(name=statement.value, relation=found[0].relation))
        return reading.found
    start = phrase.pos
    group = _group(phrase)
    if group is None or phrase.done():
        return []
    occasion = _occasion(phrase, start)
    reading = Reading(
        found,
        group,
        phrase,
        occasion=occasion,
        work=people.about_work,
        message=people.text,
        people=people,
        dispatch=dispatch,
    )
    read_verb(reading)
    return reading.found


def _occasion(phrase: Phrase, subject_end: int) -> str:
    """A time or occasion phrase before the subject ("For breakfast", "On Sundays"), kept
    for the content; fillers are not."""
    words = phrase.toks[: max(0, subject_end - 1)]
    while words and (words[0].casefold() in _OCCASION_SKIP or words[0] == ","):
        words = words[1:]
    if not words or words[0].casefold() not in _OCCASION_START:
        return ""
    return " ".join(
        w if w[:1].isupper() and w.casefold() not in _OCCASION_START else w.casefold()
        for w in words
    ).strip(" ,")
