"""The copula, "have" and "my X is Y": the largest families of facts in English.

``copula`` reads what follows am/is/was ("from Porto", "allergic to peanuts",
"a nurse at the city hospital", "vegetarian", "34 years old", "into jazz");
``have`` what someone has (pets, relatives, allergies, conditions, things, meals);
``read_attribute`` an attribute said outright ("my birthday is May 3rd").
"""

from __future__ import annotations

import re

from memory.english_facts import (
    ARTICLES,
    STATUSES,
    diet,
    diet_ahead,
    employer,
    occupation,
    place,
    read_name,
    status,
    values,
)
from memory.english_phrase import (
    Phrase,
    Reading,
    capitalize_place,
    detail,
    items,
    pointer,
    say,
    years_old,
)
from memory.english_phrase import value as read_value
from memory.lexicon import (
    DIETS,
    HEALTH,
    LANGUAGES,
    NATIONALITIES,
    OCCUPATIONS,
    PETS,
    RELATIONS,
    RELIGIONS,
)
from memory.statements import Speaker

__all__ = ["MONTHS", "copula", "have", "read_attribute"]

_ADVERBS = frozenset(
    "also really still just now currently originally actually very so quite pretty super"
    " totally absolutely definitely officially newly happily more mostly mainly kinda sorta"
    " honestly huge both big really massively literally".split()
)


_EPISODE = frozenset(
    "today tonight tomorrow week weekend trip vacation holiday holidays conference visiting"
    " visit business layover airport".split()
)


_LIKERS = frozenset("fan lover enthusiast buff nerd geek junkie addict fanatic".split())


#: Nouns a number counts ("I'm 3 kids in"): a number before one is no age.
_COUNTED = frozenset(
    "kids children times days weeks months hours minutes miles km percent cups points".split()
)
_TRAITS = frozenset("morning night evening people early late".split())
_JOBLESS = frozenset("retired unemployed self-employed freelance freelancing jobless".split())


_OWNED = frozenset(
    "car bike bicycle motorcycle motorbike scooter house apartment flat condo boat truck van"
    " piano guitar violin drum drums camera laptop tesla".split()
)


#: "I have a girlfriend": the relationship status a partner says.
_PARTNERS = {
    **dict.fromkeys(("girlfriend", "boyfriend", "partner"), "in a relationship"),
    **dict.fromkeys(("wife", "husband", "spouse"), "married"),
    **dict.fromkeys(("fiance", "fiancee", "fiancé", "fiancée"), "engaged"),
}
_SKIP_NOUNS = frozenset(
    "question problem issue idea feeling time day meeting appointment doubt bug error moment"
    " chance call point lot headache cold".split()
)


_MEALS = frozenset("breakfast lunch dinner brunch supper snack snacks dessert".split())


MONTHS = frozenset(
    "january february march april may june july august september october november december"
    " jan feb mar apr jun jul aug sep sept oct nov dec".split()
)


_PARTS = re.compile(r",\s*(?:and |plus )?|\s+(?:and|plus)\s+")


def _kinds(found: str) -> list[tuple[str, str]]:
    """The parts of a list of pets and relatives with their predicates, when it has both."""
    parts = [p.strip() for p in _PARTS.split(found) if p.strip()]
    kinds: list[tuple[str, str]] = []
    for part in parts:
        words = part.casefold().split()
        if any(w in PETS for w in words):
            kinds.append((part, "has_pet"))
        elif any(w in RELATIONS for w in words):
            kinds.append((part, "family"))
        elif kinds:  # "Maya" after "two kids": part of the one before
            kinds[-1] = (f"{kinds[-1][0]}, {part}", kinds[-1][1])
    return kinds if len({k for _, k in kinds}) > 1 else []


def have(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    phrase.take("got")
    start = phrase.pos
    found = read_value(phrase)
    words = [w.strip(",") for w in found.casefold().split()]
    if pointer(found) or not words or _SKIP_NOUNS.intersection(words):
        return
    state = True
    # "I have no car": not had. The value is the thing; the content keeps the words.
    lacks = words[0] == "no" and len(words) > 1
    had = found.split(" ", 1)[1] if lacks else found

    def emit(predicate: str, content: str) -> None:
        reading.emit(predicate, had, content, negated=True if lacks else None)

    group = reading.group
    now = not (group.past or group.used_to)  # "I had a girlfriend": a person, as before
    if now and words[-1] in _PARTNERS and len(words) == 2 and words[0] in ("a", "an", "no"):
        # "I have a girlfriend" is a status; "I don't have a boyfriend" (or "no boyfriend")
        # says single, positively.
        content = say(reading, "have", found + detail(phrase), state=state)
        if group.negated or lacks:
            reading.emit("relationship_status", "single", content, updates=True, negated=False)
        else:
            reading.emit("relationship_status", _PARTNERS[words[-1]], content, updates=True)
        return
    mixed = _kinds(found)
    if mixed:  # "three kids and a beagle named Waffles": each thing had, as what it is
        for part, predicate in mixed:
            reading.emit(predicate, part, say(reading, "have", part, state=state))
        return
    if any(w in PETS for w in words):
        shown = found + _apposition(phrase)
        emit("has_pet", say(reading, "have", shown + detail(phrase), state=state))
    elif any(w in RELATIONS for w in words):
        emit("family", say(reading, "have", found + detail(phrase), state=state))
    elif "allergy" in words or "allergies" in words:
        if lacks:  # "I have no allergies": no allergen to name
            return
        phrase.pos = start
        while not phrase.done() and phrase.peek() not in ("allergy", "allergies"):
            phrase.pos += 1
        allergen = " ".join(w for w in words[: words.index(phrase.peek())] if w not in "a an")
        phrase.pos += 1
        if phrase.take("to"):
            values(reading, "allergic_to", "be", "allergic to")
        elif allergen:
            reading.emit("allergic_to", allergen, say(reading, "be", f"allergic to {allergen}"))
    elif any(w in HEALTH for w in words) or words[-1] in ("disease", "syndrome", "disorder"):
        emit("health", say(reading, "have", found, state=state))
    elif any(w in _OWNED for w in words) or found.split()[-1][:1].isupper():
        emit("owns", say(reading, "have", found + detail(phrase), state=state))
    elif words[-1] in ("degree", "phd", "masters", "master's", "bachelor's", "diploma"):
        emit("degree", say(reading, "have", found + detail(phrase)))
    elif reading.group.frequency or not _MEALS.isdisjoint(phrase.low):
        # "For breakfast I usually have oatmeal": what the user eats, as a habit.
        emit("eats", say(reading, "have", found + detail(phrase)))


def _apposition(phrase: Phrase) -> str:
    """ ", a kitten called Olive" after a pet: more of the same noun phrase."""
    if phrase.peek() == "," and phrase.peek(1) in ("a", "an", "named", "called", "both"):
        start = phrase.pos
        phrase.pos += 1
        read_value(phrase)
        return ", ".join(
            part.strip() for part in ("", " ".join(phrase.toks[start + 1 : phrase.pos]))
        )
    return ""


def copula(reading: Reading, verb: str) -> None:
    """What follows am / is / was: the largest family of facts."""
    phrase = reading.phrase
    group = reading.group
    while True:  # "am (really) not (a) vegan anymore", "am no longer married"
        if phrase.peek() in _ADVERBS:
            group.change |= phrase.peek() in ("now", "newly", "officially", "finally")
            phrase.pos += 1
        elif phrase.take("not") or phrase.take("never"):
            group.negated = True
        elif phrase.take("no", "longer"):
            group.negated = group.change = True
        else:
            break
    word = phrase.peek()
    if word == "from":
        phrase.pos += 1
        place(reading, "from", "be", "from", updates=False)
    elif word in ("based", "living", "located", "settled") and phrase.peek(1) == "in":
        phrase.pos += 2
        place(reading, "lives_in", "live", "in", updates=False)
    elif word == "born":
        phrase.pos += 1
        group.past = False
        _born(reading)
    elif phrase.take("allergic", "to"):
        values(reading, "allergic_to", "be", "allergic to")
    elif phrase.take("intolerant", "to"):
        values(reading, "allergic_to", "be", "intolerant to")
    elif phrase.peek(1) == "intolerant":
        substance = phrase.word()
        phrase.pos += 2
        reading.emit("allergic_to", substance, say(reading, "be", f"{substance} intolerant"))
    elif word in STATUSES:
        phrase.pos += 1
        status(reading, word)
    elif phrase.take("in", "a", "relationship"):
        reading.emit(
            "relationship_status", "in a relationship", say(reading, "be", "in a relationship")
        )
    elif diet_ahead(phrase):
        diet(reading)
    elif word.isdigit() and 0 < int(word) < 130 and phrase.peek(1) not in _COUNTED:
        reading.emit("age", word, say(reading, "be", years_old(word)))
    elif word in ("into", "obsessed", "crazy", "passionate", "fond", "keen", "mad", "nuts"):
        phrase.pos += 1
        phrase.take("about") or phrase.take("with") or phrase.take("of") or phrase.take("on")
        values(reading, "likes", "like")
    elif word in ("afraid", "scared", "terrified", "frightened") and phrase.peek(1) == "of":
        phrase.pos += 2
        values(reading, "afraid_of", "be", f"{word} of")
    elif word in ("good", "great", "skilled", "decent") and phrase.peek(1) == "at":
        phrase.pos += 2
        values(reading, "skill", "be", f"{word} at")
    elif phrase.take("fluent", "in"):
        values(reading, "speaks", "speak")
    elif word in HEALTH:
        phrase.pos += 1
        reading.emit("health", word, say(reading, "be", word))
    elif word in _JOBLESS:
        phrase.pos += 1
        reading.emit("occupation", word, say(reading, "be", word), updates=True)
    elif word == "to" and group.perfect:
        phrase.pos += 1
        values(reading, "visited", "have been", "to")
    elif word == "at" and reading.work and phrase.word(1)[:1].isalpha():
        phrase.pos += 1
        employer(reading, "at", updates=True)
    elif word == "in" and phrase.word(1)[:1].isupper() and _EPISODE.isdisjoint(phrase.low):
        phrase.pos += 1
        place(reading, "lives_in", "live", "in", updates=group.change)
    elif word == "diagnosed" and phrase.peek(1) == "with":
        phrase.pos += 2
        group.past = False
        values(reading, "health", "have")
    elif word in ARTICLES or (word == "of" and phrase.peek(1) in ARTICLES):
        phrase.take("of")  # "more of a Terraforming Mars person"
        _a_noun(reading)
    elif word in RELIGIONS:
        phrase.pos += 1
        reading.emit("religion", phrase.word(-1), say(reading, "be", phrase.word(-1)))
    elif word in ("raised", "brought") and "in" in phrase.low[phrase.pos : phrase.pos + 3]:
        while phrase.peek() != "in":
            phrase.pos += 1
        phrase.pos += 1
        group.past = False
        place(reading, "from", "be raised", "in", updates=False)
    elif phrase.take("all", "about"):
        values(reading, "likes", "be", "all about")
    elif word in NATIONALITIES and phrase.word()[:1].isupper() and phrase.peek(1) == "":
        phrase.pos += 1
        reading.emit("nationality", phrase.word(-1), say(reading, "be", phrase.word(-1)))
    elif word in OCCUPATIONS or (phrase.peek(1) in OCCUPATIONS and phrase.peek(2) in ("", "at")):
        occupation(reading, "be", "")
    elif phrase.word()[:1].isupper() and not group.negated and reading.speaker.is_user:
        read_name(reading, capitalised=True)
    elif (
        phrase.word().isalpha()
        and phrase.word()[:1].isupper()
        and reading.speaker.name is None
        and not reading.speaker.is_user
        and not group.negated
    ):
        # "my sister is Jess": the relative's name ("I'm not Ada", "my son is not Leo": none)
        name, relation = phrase.word(), reading.speaker.relation
        reading.people.meet(Speaker(name=name, relation=relation))
        reading.emit("name", name, f"User's {relation} is {name}", negated=False)


def _born(reading: Reading) -> None:
    phrase = reading.phrase
    prep = phrase.peek()
    if prep not in ("in", "on", "at"):
        return
    phrase.pos += 1
    found = read_value(phrase)
    if pointer(found):
        return
    words = found.split()
    first = words[0].casefold()
    # "in the 90s", "in the spring" are a time; "in the Netherlands", "in the US" a place.
    the_time = first == "the" and not (len(words) > 1 and words[1][:1].isupper())
    if prep == "on" or first in MONTHS or first.isdigit() or the_time:
        subject = reading.speaker.english()
        if re.fullmatch(r"\d{4}", found):  # "born in 1990": a year, not a birthday
            reading.emit("birthday", found, f"{subject} was born in {found}")
            return
        reading.emit(
            "birthday", found, f"{subject}'s birthday is {found}".replace("User's's", "User's")
        )
    else:
        place = capitalize_place(found)
        reading.emit("from", place, f"{reading.speaker.english()} was born in {place}")


def _a_noun(reading: Reading) -> None:
    """ "a/an/the ...": an occupation, a fan of something, a native speaker."""
    phrase = reading.phrase
    start = phrase.pos
    phrase.pos += 1
    phrase.skip(frozenset(("big", "huge", "real", "total", "massive")))
    if phrase.take("fan", "of"):
        values(reading, "likes", "be", "a fan of")
        return
    if phrase.take("native"):
        language = phrase.word()
        if language.casefold() in LANGUAGES:
            reading.emit("speaks", language, say(reading, "be", f"a native {language} speaker"))
        return
    found = read_value(phrase)
    words = found.casefold().split()
    if not words:
        return
    head = words[-1]
    job = next((w for w in words if w in OCCUPATIONS or w.rstrip("s") in OCCUPATIONS), None)
    if job is not None or "stay-at-home" in words:
        # "an apprentice electrician 2nd year": the job ends at its occupation word.
        phrase.pos = start
        occupation(reading, "be", "", updates=reading.group.change, until=job)
    elif (head in _LIKERS or head == "person") and len(words) > 1:
        liked = " ".join(found.split()[:-1])
        if head == "person" and words[0] in _TRAITS:  # "a morning person" is no taste
            reading.emit("habit", found, say(reading, "be", f"a {found}"))
        else:  # "a jazz fan", "more of a Terraforming Mars person"
            reading.emit("likes", liked, say(reading, "be", f"a {found}"))
    elif head in DIETS:
        reading.emit("diet", head, say(reading, "be", head))


_ATTRIBUTES = {
    "name": "name",
    "birthday": "birthday",
    "email": "email",
    "e-mail": "email",
    "phone": "phone",
    "number": "phone",
    "mobile": "phone",
    "cell": "phone",
    "job": "occupation",
    "occupation": "occupation",
    "profession": "occupation",
    "title": "occupation",
    "role": "occupation",
    "employer": "employer",
    "company": "employer",
    "hometown": "from",
    "goal": "goal",
    "dream": "goal",
    "hobby": "hobby",
    "hobbies": "hobby",
    "address": "lives_in",
    "age": "age",
    "pronouns": "pronouns",
    "major": "studies",
    "diet": "diet",
}


def _a_role(text: str) -> bool:
    words = text.casefold().split()
    return bool(words) and (
        words[0] in ARTICLES
        or any(w in OCCUPATIONS or w.endswith(("er", "ist", "or", "ian", "ing")) for w in words)
    )


def read_attribute(reading: Reading, noun: str) -> None:
    """ "my <noun> is <value>": an attribute of the speaker ("my birthday is May 3rd")."""
    phrase = reading.phrase
    key = None
    label = noun
    if noun in ("favorite", "favourite"):
        start = phrase.pos
        while (
            not phrase.done()
            and phrase.peek() not in ("is", "are", "was")
            and phrase.pos < start + 3
        ):
            phrase.pos += 1
        key = " ".join(phrase.low[start : phrase.pos])
        label = f"{noun} {key}" if key else noun  # "my favorite is pizza"
        predicate = "favorite"
    elif noun in ("native", "first"):
        if not (phrase.take("language") or phrase.take("tongue")):
            return
        label, predicate = f"{noun} language", "speaks"
    else:
        predicate = _ATTRIBUTES[noun]
        if phrase.take("number") or phrase.take("address"):
            label = f"{noun} {phrase.low[phrase.pos - 1]}"
    if phrase.peek() in ("for", "at") and "is" in phrase.low[phrase.pos : phrase.pos + 4]:
        while phrase.peek() != "is":  # "my email for receipts is ..."
            phrase.pos += 1
    if not (phrase.take("is") or phrase.take("are")):
        return
    phrase.skip(_ADVERBS)
    if predicate == "birthday":
        phrase.take("on") or phrase.take("in")
    to = predicate == "goal" and phrase.take("to")  # "my goal is to run a marathon"
    if predicate == "name":
        name_start = phrase.pos
        read_name(reading)
        if reading.found or reading.speaker.is_user:
            return
        phrase.pos = name_start
    found = read_value(phrase)
    if pointer(found) and predicate not in ("email", "phone"):
        return
    if predicate == "occupation" and not _a_role(found):
        return  # "my job is stressful" says how the job is, not what
    first = found.split()[0].casefold() if found.split() else ""
    if first in ("coming", "soon", "next", "tomorrow", "today") or (
        first.endswith("ing") and predicate not in ("hobby", "goal")
    ):
        return  # "my birthday is coming up" says when, not what; "my hobby is painting" says what
    if (
        predicate == "birthday"
        and not any(ch.isdigit() for ch in found)
        and MONTHS.isdisjoint(found.casefold().split())
    ):
        return
    if predicate in ("lives_in", "from", "employer"):
        found = capitalize_place(found)
    subject = reading.speaker.english()
    possessive = "User's" if subject == "User" else f"{subject}'s"
    rest = detail(phrase)
    if predicate in ("hobby", "favorite") and key != "":
        one = "hobby" if predicate == "hobby" else label  # "my hobbies are": one each
        for item in items(found) if predicate == "hobby" else [found]:
            reading.emit(predicate, item, f"{possessive} {one} is {item}{rest}", key=key)
        return
    said = f"to {found}" if to else found
    reading.emit(predicate, found, f"{possessive} {label} is {said}{rest}", key=key)
