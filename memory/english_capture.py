"""What no specific reading understood, kept in the user's words; people and pets met in passing.

``capture`` is the reader's last resort for a clause about the user that none of
the verb readings understood ("I DM a D&D campaign every other Friday",
"Restoring a 1967 Mini Cooper in my garage", "my running club meets on
Tuesdays"): if it is a plain statement (no hedge, condition, question, request
or talk about the conversation) with a few content words, it is kept as a fact
restated in the third person, its verb as the predicate (many-valued), or, for
"my <thing> is ...", the thing as a one-valued predicate. A memory that keeps
the user's own words is more useful than one that drops what it cannot parse.

``introduce`` remembers "my <relative> <Name>" wherever it appears, so a later
"she" finds her, and states the relation when nothing else was said about the
person. ``pets_mentioned`` reads "my dog (Rex)" as a pet the user has.
"""

from __future__ import annotations

import re

from memory.clauses import HOLE
from memory.english_implied import ADVERBS, BE
from memory.english_phrase import Phrase, pointer, third_person_words
from memory.lexicon import (
    EPISODIC,
    HEDGES,
    PETS,
    RELATIONS,
    STATIVE_SKIP,
    VERBS,
    lemma,
    third_person,
)
from memory.predicates import Vocabulary
from memory.statements import People, Speaker, Statement

__all__ = ["capture", "introduce", "pets_mentioned"]

_LEAD = frozenset(
    """
    also well so and but oh ah yeah yes ok okay btw anyway anyways actually honestly plus
    then now still just really basically seriously , - even
    """.split()
)
_NOT_CONTENT = frozenset(
    """
    a an the of to in on at for with and or but so my our their your it is am are was were be
    been have has had do does did not no yes very really just also still now then that this
    these those there here i me we us they them he she him her his its some any all much many
    lot lots thing things stuff way kind sort bit
    """.split()
)
_OPINION = frozenset("think guess hope wish wonder mean know bet suppose feel reckon".split())
_MODALS = frozenset("will would could should might may must shall can".split())
_YOU = frozenset("you your yours you're yourself".split())
_PARTNERS = frozenset(
    "wife husband partner spouse girlfriend boyfriend fiance fiancee fiancé fiancée".split()
)
#: People the user knows who are not family ("my boss Tom": knows, not family).
_ACQUAINTANCES = frozenset(
    """friend friends bestie bff buddy pal mate roommate flatmate housemate neighbor
    neighbour boss manager coworker co-worker colleague colleagues teammate mentor teacher
    therapist doctor landlord classmate""".split()
)
_MY_RELATIVE = re.compile(
    r"\b(?i:my|our)\s+(?:(?:older|younger|little|big|best|baby|twin|eldest|youngest)\s+)?"
    r"(?P<rel>[a-zé-]+),?\s+(?:(?:is\s+)?(?:named|called)\s+)?(?P<name>[A-Z][a-zé]+)\b"
)
_MY_PET = re.compile(
    r"\b(?i:my) (?:(?i:little|old|new|sweet) )?(?P<pet>[A-Za-z]+)"
    r"(?:(?:,? (?:is )?|'s )(?:named|called) (?P<named>[A-Za-z]+)|,? (?P<name>[A-Z][a-z]+))?"
)
_MAX = 200
_VOCABULARY = Vocabulary()


def pets_mentioned(text: str) -> list[Statement]:
    """ "my dog digs everything up": the user has a dog."""
    found = []
    for match in _MY_PET.finditer(text):
        pet, name = match.group("pet").casefold(), match.group("named") or match.group("name")
        if pet not in PETS:
            continue
        article = "an" if pet[0] in "aeiou" else "a"
        value = f"{article} {pet}" + (f" named {name}" if name else "")
        found.append(Statement("has_pet", value, f"User has {value}"))
    return found


def introduce(text: str, people: People, said: list[Statement]) -> list[Statement]:
    """Meet every "my <relative> <Name>" of ``text``; state the relation of those that
    ``said`` says nothing about ("my fiancé Callum and I ..." -> "User's fiancé is Callum")."""
    out = []
    for match in _MY_RELATIVE.finditer(text):
        relation, name = match.group("rel").casefold(), match.group("name")
        if relation not in RELATIONS or name.casefold() in ("and", "is", "was"):
            continue
        people.meet(Speaker(name=name, relation=relation))
        if any(s.speaker.name == name for s in said):
            continue
        predicate = "partner" if relation in _PARTNERS else "family"
        if relation in _ACQUAINTANCES:
            predicate = "knows"
        out.append(Statement(predicate, f"{relation} {name}", f"User's {relation} is {name}"))
    return out


def capture(text: str, people: People) -> list[Statement]:
    """The clause kept in the user's words, when it is a plain statement about them; up to
    a hole ``memory.clauses.normalize`` left (the words after it are not the same sentence)."""
    phrase = Phrase.of(text.partition(HOLE.strip())[0])
    low = phrase.low
    i = 0
    while i < len(low) and (low[i] in _LEAD or low[i].endswith("-wise")):
        i += 1
    if i >= len(low) or not _YOU.isdisjoint(low) or not HEDGES.isdisjoint(low):
        return []
    if not _MODALS.isdisjoint(low):
        return []
    words = phrase.toks[i:]
    first = low[i]
    if first in ("i", "we"):
        return _restated(words[1:], people, implied=False)
    if first in ("my", "our") and len(words) > 2:
        return _possession(words[1:])
    verb = lemma(first)
    if first.endswith("ing") and len(low) > i + 1:
        if BE.isdisjoint(low[i + 1 :]):
            return _restated(["am", low[i], *words[1:]], people, implied=True)
        return []  # "knitting is relaxing": the activity is the subject, not the user
    past = verb in VERBS or (first.endswith("ed") and len(first) > 4)  # not "red"
    if first != verb and past and not first.endswith("s"):
        return _restated(words, people, implied=True)
    return []


def _content_words(words: list[str]) -> int:
    return sum(1 for w in words if w.casefold() not in _NOT_CONTENT and len(w) > 2)


def _restated(rest: list[str], people: People, *, implied: bool) -> list[Statement]:
    """ "I DM a campaign" -> "User DMs a campaign"."""
    if not rest or _content_words(rest) < 2:
        return []
    lead = 0  # "I finally quit my job": the verb after the adverbs
    while lead < len(rest) - 1 and rest[lead].casefold() in ADVERBS:
        lead += 1
    adverbs, rest = rest[:lead], rest[lead:]
    head = rest[0].casefold()
    if {"not", "never", "no"} & {w.casefold() for w in rest[:3]}:
        return []  # what the user does not do is left to the readings that understand it
    if len(rest) > 1 and pointer(rest[1]) and rest[1].casefold() not in ("all", "both"):
        return []  # "I loved that movie": about the conversation's thing, not the user
    if not EPISODIC.isdisjoint(w.casefold() for w in rest):
        return []  # "I had pasta yesterday": an occasion, not a lasting fact
    if head in _OPINION or head in STATIVE_SKIP - {"keep", "take"} or head in ("not", "never"):
        return []
    verb = {"am": "is", "are": "is", "have": "has", "do": "does"}.get(head)
    if verb is None:
        base = lemma(head)
        verb = third_person(head) if base == head and not implied else head
    tail = third_person_words(" ".join(rest[1:]))
    content = " ".join(["User", *adverbs, verb, tail]).replace(" ,", ",").strip()[:_MAX]
    predicate = lemma(head) if head not in ("am", "are", "is") else "be"
    value = tail.split(",")[0][:80].strip() or verb
    return [Statement(predicate, value, content)]


def _possession(rest: list[str]) -> list[Statement]:
    """ "my running club meets on Tuesdays", "my grade is 7a": about something of the user's."""
    for at, word in enumerate(rest[:4]):
        low = word.casefold()
        if low in RELATIONS or low in PETS:
            return []
        if low in ("is", "was", "are") or (at and lemma(low) in VERBS and low != lemma(low)):
            thing = " ".join(rest[:at])
            tail = third_person_words(" ".join(rest[at + 1 :]))
            informative = _content_words(tail.split()) or any(c.isdigit() for c in tail)
            if not thing or not tail or not informative:
                return []
            if _VOCABULARY.spec("_".join(thing.casefold().split())) is not None:
                return []  # "my birthday is coming up": the attribute reading said no
            content = f"User's {thing} {word} {tail}"[:_MAX]
            attribute = low in ("is", "was") and not thing.endswith("s")
            predicate = "_".join(thing.casefold().split()) if attribute else lemma(low)
            return [
                Statement(predicate, tail[:80], content, cardinality="one" if attribute else None)
            ]
    return []
