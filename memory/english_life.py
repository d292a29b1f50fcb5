"""English verbs of life events: dating and breaking up, pets adopted, degrees, teaching.

Handlers of ``memory.english_verbs``'s table that read one family of events each;
kept apart so that module stays the table and its general readings.
"""

from __future__ import annotations

import re

from memory.english_copula import have
from memory.english_facts import diet
from memory.english_phrase import Reading, detail, pointer, say
from memory.english_phrase import value as read_value
from memory.lexicon import DIETS, PETS
from memory.statements import Speaker

__all__ = [
    "DEGREES",
    "TRANSPORT",
    "adopt",
    "break_up",
    "dating",
    "degree",
    "graduated",
    "keep",
    "teach",
]


TRANSPORT = frozenset("train bus tube subway metro ferry tram shuttle".split())

DEGREES = frozenset(
    "undergrad undergraduate degree bachelor's bachelors master's masters phd doctorate mba"
    " diploma".split()
)


def degree(reading: Reading, verb: str) -> None:
    """ "I did my undergrad in linguistics at Edinburgh": a degree, done (no "previously")."""
    phrase = reading.phrase
    if not DEGREES & set(phrase.low[phrase.pos : phrase.pos + 4]):
        return
    reading.group.past = False
    found = read_value(phrase)
    shown = found + detail(phrase)
    reading.emit(
        "degree", found, f"{reading.speaker.english()} did {shown}".replace(" my ", " their ")
    )


def graduated(reading: Reading) -> None:
    """ "I graduated (from Leeds)": no longer a student there."""
    phrase = reading.phrase
    reading.group.past = False
    school = read_value(phrase) if phrase.take("from") else ""
    shown = f"graduated from {school}" if school else "graduated"
    reading.emit("school", shown, f"{reading.speaker.english()} {shown}", updates=True)


def teach(reading: Reading, verb: str) -> None:
    """ "I teach 8th grade science": a teacher, whatever is taught."""
    phrase = reading.phrase
    if reading.group.past and not reading.group.used_to:
        return
    subject = read_value(phrase) if not phrase.done() else ""
    if pointer(subject) and subject:
        return
    role = f"{subject} teacher".strip()
    content = say(reading, "teach", (subject + detail(phrase)).strip())
    reading.emit("occupation", role, content, updates=reading.group.change)


def keep(reading: Reading, verb: str) -> None:
    """ "I keep kosher": a diet; other uses of "keep" say nothing lasting."""
    if reading.phrase.peek() in DIETS:
        diet(reading)


def dating(reading: Reading) -> None:
    """ "I'm dating Mia", "I've been seeing someone": in a relationship."""
    phrase = reading.phrase
    if phrase.take("someone") or phrase.take("somebody"):
        reading.people.meet(Speaker(relation="partner"))  # "her name's Priya" comes next
        reading.emit("relationship_status", "dating", say(reading, "see", "someone"))
        return
    partner = read_value(phrase)
    if partner and not pointer(partner):
        content = say(reading, "date", partner)
        reading.emit("relationship_status", f"dating {partner}", content)


_GROUPS = frozenset("band band's group team club company duo trio choir crew".split())
_PARTNERS = frozenset(
    "girlfriend boyfriend partner wife husband ex fiance fiancee relationship dating".split()
)


def break_up(reading: Reading, verb: str) -> None:
    """ "(Mia and) I broke up (with Mia)": single again."""
    phrase = reading.phrase
    if not phrase.take("up"):
        return
    words = set(re.findall(r"[a-z']+", reading.message.casefold()))
    if words & _GROUPS and not words & _PARTNERS:
        return  # "the band split up": a group, not a couple
    reading.group.past = False
    shown = "single"
    if phrase.take("with"):
        partner = read_value(phrase)
        if partner and not pointer(partner):
            shown = f"single (broke up with {partner})"
    reading.emit("relationship_status", "single", say(reading, "be", shown), updates=True)


def adopt(reading: Reading, verb: str) -> None:
    """adopt / rescue / foster a pet: the user has it now."""
    phrase = reading.phrase
    if any(w in PETS for w in phrase.low[phrase.pos : phrase.pos + 6]):
        reading.group.past = False
        have(reading, "have")
