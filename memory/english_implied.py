"""Sentences with the "I" left out, as people write in chat: "just moved to Leeds",
"Strict vegan for five years", "Married with two kids", "Two kids, both girls"."""

from __future__ import annotations

from memory.english_facts import DIET_MODIFIERS, STATUSES
from memory.english_phrase import Phrase
from memory.lexicon import DIETS, PETS, VERBS, lemma
from memory.statements import USER, Speaker

__all__ = ["ADVERBS", "BE", "FILLERS", "implied_i"]

FILLERS = frozenset(
    """
    also well so and but oh ah yeah yes no ok okay hey hi hello hmm um uh lol haha btw anyway
    anyways actually honestly plus though fun fact big news update news besides fyi by the
    way in fact additionally as said mentioned told you now currently nowadays lately
    recently these days today this week month year last next every each on weekends weekend
    morning mornings evening evenings night nights since after before during for from over
    around about sadly luckily unfortunately fortunately basically seriously just guess what
    quick note side speaking of which then also, good great exciting funny
    """.split()
)
ADVERBS = frozenset(
    """
    really also still just now currently actually usually always often sometimes generally
    mostly absolutely totally definitely recently finally only even already truly honestly
    literally basically seriously genuinely kinda sorta pretty much very so quite newly
    originally officially happily proudly mainly primarily typically normally regularly
    occasionally rarely properly
    """.split()
)
BE = frozenset("am is are was were be been being".split())


#: Adjectives that say what the user is ("really into baking", "allergic to kiwi").
_TASTES = frozenset("into obsessed addicted allergic fluent keen mad crazy nuts passionate".split())
_OBJECTS = frozenset("me him her them my his their your".split())
_COUNTS = frozenset("a an one two three four five six seven eight nine ten".split())
_CHILDREN = frozenset(
    "kid kids child children son sons daughter daughters twins boys girls".split()
)
#: Participles a possession may carry without being a sentence ("a cat called Miso").
_NAMING = frozenset("named called aged".split())


def _owned(low: list[str], i: int) -> bool:
    """A sentence that is only a count of pets or children: what the user has."""
    if i != 0 or not (low[0] in _COUNTS or low[0].isdigit()):
        return False
    noun = next((j for j in range(1, min(4, len(low))) if low[j] in PETS or low[j] in _CHILDREN), 0)
    if not noun:
        return False
    after = low[noun + 1] if noun + 1 < len(low) else ""  # "Two cats came in" is a story
    return not (after in BE or (lemma(after) in VERBS and after not in _NAMING))


def implied_i(phrase: Phrase) -> Speaker | None:
    """ "just moved to Leeds", "also started pottery": a clause that opens with a verb in
    the past tense, the "I" left out as people do in chat (a bare present is an order)."""
    i = 0
    while i < len(phrase.low) and (phrase.low[i] in FILLERS or phrase.low[i] in ADVERBS):
        i += 1
    if i >= len(phrase.low) or i > 3:
        return None
    word = phrase.low[i]
    verb = lemma(word)
    nxt = phrase.toks[i + 1] if i + 1 < len(phrase.toks) else ""
    # "Married with two kids", "divorced since 2016" (but "married Sam", "married her").
    status = word in STATUSES and not nxt[:1].isupper() and nxt not in _OBJECTS
    past = verb in VERBS and word != verb and not word.endswith(("s", "ing"))
    if past and verb != "be" and not status:
        phrase.pos = i
        return USER
    following = phrase.low[i + 1] if i + 1 < len(phrase.low) else ""
    # "Training for a marathon" (but "Ordering lunch is a puzzle": the -ing is the subject)
    ongoing = word.endswith("ing") and verb in VERBS and BE.isdisjoint(phrase.low[i + 1 :])
    diet = word in DIETS or (word in DIET_MODIFIERS and following in DIETS)
    if word == "been" or (word == "quit" and i == 0):  # "been vegan for years", "quit sugar"
        phrase.toks.insert(i, "have")
        phrase.low.insert(i, "have")
        phrase.pos = i
        return USER
    if _owned(phrase.low, i):  # "Two kids, both girls", "A dog and two cats"
        phrase.toks[i] = phrase.low[i]
        phrase.toks.insert(i, "have")
        phrase.low.insert(i, "have")
        phrase.pos = i
        return USER
    fan = "fan" in phrase.low[i : i + 3] and "of" in phrase.low[i + 1 : i + 4]
    taste = word in _TASTES or (fan and word in ("big", "huge", "a", "fan"))
    if fan and word != "a":  # "big fan of jazz": the article left out too
        phrase.toks.insert(i, "a")
        phrase.low.insert(i, "a")
    if ongoing or diet or status or taste:  # "Training for a marathon", "Strict vegan for years"
        phrase.toks[i] = phrase.low[i]  # its capital is the sentence's, not a name's
        phrase.toks.insert(i, "am")
        phrase.low.insert(i, "am")
        phrase.pos = i
        return USER
    return None
