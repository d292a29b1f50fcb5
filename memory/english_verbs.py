"""English verbs and complements to predicates: the table the rule-based extractor reads by.

Each handler reads the complement of one verb (or the copula) and emits
statements. Verbs with no handler of their own get the generic reading: in the
present tense, with an object that is not about the conversation, "I collect
stamps" is ``collect: stamps`` ("User collects stamps"), and an intransitive
activity "I run every morning" is a habit. A simple past reads as "no longer"
for states ("I lived in Rome") and as an event for changes ("I moved to Porto").
"""

from __future__ import annotations

from collections.abc import Callable

from memory.english_phrase import Phrase, Reading, capitalize_place, detail, items, pointer, say
from memory.english_phrase import value as read_value
from memory.lexicon import (
    DIETS,
    EPISODIC,
    HEALTH,
    LANGUAGES,
    NATIONALITIES,
    NOT_NAMES,
    OCCUPATIONS,
    PETS,
    RELATIONS,
    STATIVE_SKIP,
    VERBS,
    gerund,
    lemma,
)

__all__ = ["read_attribute", "read_name", "read_verb"]

_ADVERBS = frozenset(
    "also really still just now currently originally actually very so quite pretty super"
    " totally absolutely definitely officially newly happily more mostly mainly kinda sorta"
    " honestly huge".split()
)
_EPISODE = frozenset(
    "today tonight tomorrow week weekend trip vacation holiday holidays conference visiting"
    " visit business layover airport".split()
)
_ARTICLES = frozenset("a an the".split())
_LIKERS = frozenset("fan lover enthusiast buff nerd geek junkie addict person fanatic".split())
_STATUSES = frozenset("married engaged single divorced widowed separated".split())
_JOBLESS = frozenset("retired unemployed self-employed freelance freelancing jobless".split())
_OWNED = frozenset(
    "car bike bicycle motorcycle motorbike scooter house apartment flat condo boat truck van"
    " piano guitar violin drum drums camera laptop tesla".split()
)
_HOBBY_VERBS = frozenset(
    "run swim hike climb surf ski skate knit paint draw sing dance cook bake garden meditate"
    " journal fish hunt cycle bike jog train sew crochet walk read write travel".split()
)
_SKIP_NOUNS = frozenset(
    "question problem issue idea feeling time day meeting appointment doubt bug error moment"
    " chance call point lot headache cold".split()
)
_MEALS = frozenset("breakfast lunch dinner brunch supper snack snacks dessert".split())
_MONTHS = frozenset(
    "january february march april may june july august september october november december"
    " jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_FUTURE_PROGRESSIVE = frozenset("move go leave start get visit think consider look wonder".split())
#: Verbs that are nouns too: a list item "dance" is a thing liked, not a second verb.
_NOUNS_TOO = frozenset(
    "dance cook run walk swim fish drink train travel design code journal garden paint draw"
    " bike ski surf skate climb hike jog play work study love hate like call visit"
    " support help care smoke vape brew bake stay rent hunt knit sew".split()
)
_Handler = Callable[[Reading, str], None]


def _tail(phrase: Phrase, value: str, prep: str = "") -> str:
    return f"{prep} {value}".strip() + detail(phrase)


def _values(
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
            _dispatch(Reading(reading.speaker, reading.group, nested, reading.found), lemma(first))
            continue
        # What follows the list belongs to the verb phrase after it, if there is one.
        tail = "" if any(verbs) else rest
        content = say(reading, verb, f"{prep} {item}".strip() + tail)
        reading.emit(predicate, item, content, category=category, negated=negated)


def _second_verb(item: str) -> bool:
    """A list item that opens with a verb of its own ("and sing in a choir")."""
    first = item.split(" ", 1)[0].casefold()
    return lemma(first) == first and first in VERBS and first not in _NOUNS_TOO


def _place(reading: Reading, predicate: str, verb: str, prep: str, *, updates: bool) -> None:
    phrase = reading.phrase
    if phrase.peek() in _ARTICLES and phrase.peek(1) in ("flat", "house", "apartment", "place"):
        while not phrase.done() and phrase.peek() not in ("in", "at"):
            phrase.pos += 1
        phrase.pos += 1
    found = read_value(phrase)
    if pointer(found) or found.casefold() in ("here", "there", "home"):
        return
    place = capitalize_place(found.split(",")[0].strip())
    content = say(reading, verb, _tail(phrase, place, prep), state=not updates)
    reading.emit(predicate, place, content, updates=updates or reading.group.change)


def _likes(reading: Reading, verb: str) -> None:
    group = reading.group
    if group.past and not group.used_to and not group.perfect:
        return  # "I loved the film": a reaction, not a lasting taste
    if verb == "stand":
        if group.negated and group.ability:  # "I can't stand loud music"
            group.negated = group.ability = False
            phrase = reading.phrase
            found = read_value(phrase)
            if not pointer(found):
                rest = detail(phrase)
                for item in items(found):
                    content = f"{reading.speaker.english()} can't stand {item}{rest}"
                    reading.emit("dislikes", item, content)
        return
    predicate = {"prefer": "prefers", "hate": "dislikes", "dislike": "dislikes"}.get(verb, "likes")
    if verb in ("detest", "loathe", "despise"):
        predicate = "dislikes"
    if group.negated and not group.change and predicate == "likes":
        _values(reading, "dislikes", verb, negated=False)
    else:
        _values(reading, predicate, verb)


def _speak(reading: Reading, verb: str) -> None:
    if reading.phrase.peek() in ("to", "with", "about", "up", "out", "of"):
        return
    if verb == "know" and reading.phrase.peek() not in LANGUAGES | {"some", "a", "basic"}:
        return
    _values(reading, "speaks", verb)


def _live(reading: Reading, verb: str) -> None:
    prep = reading.phrase.peek()
    if prep in ("in", "at", "near", "on", "outside", "by"):
        reading.phrase.pos += 1
        _place(reading, "lives_in", verb, prep, updates=False)


def _move(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    if reading.group.progressive and not reading.group.perfect:
        return  # "I'm moving to ..." is a plan
    phrase.take("back")
    if phrase.take("from"):
        read_value(phrase)
    if phrase.peek() in ("to", "into", "in"):
        phrase.pos += 1
        reading.group.past = False
        _place(reading, "lives_in", "live", "in", updates=True)


def _grow(reading: Reading, verb: str) -> None:
    if reading.phrase.take("up", "in") or reading.phrase.take("up", "on"):
        reading.group.past = False
        _place(reading, "from", "grow up", "in", updates=False)


def _work(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    prep = phrase.peek()
    if prep in ("at", "for"):
        phrase.pos += 1
        _employer(reading, prep)
    elif prep == "as":
        phrase.pos += 1
        _occupation(reading, "work", "as")
    elif prep == "on":
        phrase.pos += 1
        _values(reading, "works_on", "work", "on")
    elif prep == "in":
        phrase.pos += 1
        field = read_value(phrase)
        if not pointer(field):
            content = say(reading, "work", _tail(phrase, field, "in"))
            reading.emit("works_in", field, content)
    elif phrase.take("from", "home") or phrase.peek() in ("remotely", "remote"):
        reading.emit("habit", "working from home", say(reading, "work", "from home"))
    else:
        _generic(reading, verb)


def _employer(reading: Reading, prep: str, *, updates: bool = False) -> None:
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
    change = updates or reading.group.change
    state = not updates
    reading.emit(
        "employer",
        employer,
        say(reading, "work", f"{prep} {employer}", state=state),
        updates=change,
    )
    if role and not pointer(role):
        _emit_role(reading, role, "work", "as", updates=change)


def _strip_article(text: str) -> tuple[str, str]:
    first, _, rest = text.partition(" ")
    if first.casefold() in _ARTICLES and rest:
        return first.casefold(), rest
    return "", text


def _emit_role(
    reading: Reading, role: str, verb: str, prep: str, *, updates: bool, rest: str = ""
) -> None:
    article, bare = _strip_article(role)
    if not article and verb == "be":
        article = "an" if bare[:1].casefold() in "aeiou" else "a"
    shown = f"{article} {bare}".strip()
    content = say(reading, verb, f"{prep} {shown}".strip() + rest, state=not updates)
    reading.emit("occupation", bare, content, updates=updates or reading.group.change)


def _occupation(reading: Reading, verb: str, prep: str, *, updates: bool = False) -> None:
    phrase = reading.phrase
    role = read_value(phrase)
    if pointer(role):
        return
    if phrase.peek() in ("at", "for") and phrase.word(1)[:1].isupper():
        _emit_role(reading, role, verb, prep, updates=updates)
    else:
        _emit_role(reading, role, verb, prep, updates=updates, rest=detail(phrase))
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


def _start(reading: Reading, verb: str) -> None:
    """start / begin / join / get (a job): a new employer, role or activity."""
    phrase = reading.phrase
    reading.group.past = False
    phrase.skip(frozenset(("a", "my", "new", "job", "position", "role", "working", "work")))
    if phrase.take("with") or phrase.take("at") or phrase.take("for"):
        _employer(reading, "at", updates=True)
    elif phrase.take("as"):
        _occupation(reading, "work", "as", updates=True)
    elif verb == "join" and phrase.word()[:1].isupper():
        _employer(reading, "at", updates=True)
    elif phrase.peek().endswith("ing") and lemma(phrase.peek()) in VERBS:
        nested = lemma(phrase.peek())
        phrase.pos += 1
        _dispatch(reading, nested)
    elif not phrase.done() and verb in ("start", "begin"):
        found = read_value(phrase)
        if found and not pointer(found):
            content = f"{reading.speaker.english()} started {found}{detail(phrase)}"
            reading.emit("hobby", found, content, updates=False)


def _get(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    group = reading.group
    if phrase.peek() in ("hired", "a", "an", "my") and (
        "job" in phrase.low[phrase.pos : phrase.pos + 4] or phrase.peek() == "hired"
    ):
        _start(reading, "start")
    elif phrase.peek() in _STATUSES:
        group.past = False
        phrase.pos += 1
        _status(reading, phrase.low[phrase.pos - 1], updates=True)
    elif phrase.take("promoted", "to"):
        group.past = False
        _occupation(reading, "be", "", updates=True)
    elif any(w in PETS for w in phrase.low[phrase.pos : phrase.pos + 4]):
        group.past = False
        _have(reading, "have")


def _status(reading: Reading, status: str, *, updates: bool = False) -> None:
    """single / married (to X) / engaged (to X) ..."""
    phrase = reading.phrase
    shown = status
    if phrase.take("to"):
        partner = read_value(phrase)
        if partner and not pointer(partner):
            shown = f"{status} to {partner}"
    content = say(reading, "be", shown, state=not updates)
    reading.emit("relationship_status", status, content, updates=updates or reading.group.change)


def _dating(reading: Reading) -> None:
    partner = read_value(reading.phrase)
    if partner and not pointer(partner):
        content = say(reading, "date", partner)
        reading.emit("relationship_status", f"dating {partner}", content)


def _break(reading: Reading, verb: str) -> None:
    """ "(Mia and) I broke up (with Mia)": single again."""
    phrase = reading.phrase
    if not phrase.take("up"):
        return
    reading.group.past = False
    shown = "single"
    if phrase.take("with"):
        partner = read_value(phrase)
        if partner and not pointer(partner):
            shown = f"single (broke up with {partner})"
    reading.emit("relationship_status", "single", say(reading, "be", shown), updates=True)


def _adopt(reading: Reading, verb: str) -> None:
    """adopt / rescue / foster a pet: the user has it now."""
    phrase = reading.phrase
    if any(w in PETS for w in phrase.low[phrase.pos : phrase.pos + 6]):
        reading.group.past = False
        _have(reading, "have")


def _become(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    reading.group.past = False
    if phrase.peek() in DIETS:
        _diet(reading)
    else:
        _occupation(reading, "be", "", updates=True)


def _diet(reading: Reading) -> None:
    phrase = reading.phrase
    phrase.skip(_ARTICLES)
    diet = phrase.low[phrase.pos]
    phrase.pos += 1
    reading.emit("diet", diet, say(reading, "be", diet + detail(phrase)), updates=True)


def _go(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    if phrase.peek() in DIETS:
        reading.group.past = False
        _diet(reading)
    elif phrase.peek().endswith("ing") and not reading.group.past:
        _values(reading, "hobby", "go")
    elif phrase.take("to") and not reading.group.past:
        phrase.skip(_ARTICLES)
        _values(reading, "habit", "go", "to")


def _quit(reading: Reading, verb: str) -> None:
    """quit / stop / leave / give up: what the user no longer does (or where they left)."""
    phrase = reading.phrase
    group = reading.group
    phrase.take("up")
    if verb == "retire" or phrase.done():
        if verb == "retire":
            group.past = False
            reading.emit("occupation", "retired", say(reading, "be", "retired"), updates=True)
        return
    group.past = False
    group.negated = group.change = True
    word = phrase.peek()
    if word.endswith("ing") and lemma(word) in VERBS:
        phrase.pos += 1
        _dispatch(reading, lemma(word))
    elif phrase.word()[:1].isupper() or phrase.take("my", "job", "at"):
        _employer(reading, "at")
    elif word not in ("my", "the", "it", "that", "this"):
        found = read_value(phrase)
        if not pointer(found):
            content = f"{reading.speaker.english()} quit {found}"
            reading.emit("habit", found, content)


def _want(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    if not phrase.take("to") or reading.group.past:
        return
    goal = read_value(phrase)
    rest = detail(phrase)
    if pointer(goal) or any(w in rest.casefold() for w in ("someday", "some point", "one day")):
        return
    if goal.split()[0].casefold() in STATIVE_SKIP:
        return  # "I want to ask / know / say ..." is a request
    reading.emit("goal", goal, say(reading, verb, f"to {goal}{rest}"))


def _call(reading: Reading, verb: str) -> None:
    if reading.phrase.take("me"):
        read_name(reading)
    else:
        _generic(reading, verb)


def read_name(reading: Reading, *, capitalised: bool = False) -> None:
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
        reading.emit("name", name, f"User's name is {name}", negated=False)


def _turn(reading: Reading, verb: str) -> None:
    age = reading.phrase.peek()
    if age.isdigit() and 0 < int(age) < 130:
        reading.group.past = False
        reading.emit("age", age, say(reading, "be", f"{age} years old"), updates=True)


def _have(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    phrase.take("got")
    start = phrase.pos
    found = read_value(phrase)
    words = [w.strip(",") for w in found.casefold().split()]
    if pointer(found) or not words or _SKIP_NOUNS.intersection(words):
        return
    state = True
    if any(w in PETS for w in words):
        shown = found + _apposition(phrase)
        reading.emit("has_pet", found, say(reading, "have", shown + detail(phrase), state=state))
    elif any(w in RELATIONS for w in words):
        reading.emit("family", found, say(reading, "have", found + detail(phrase), state=state))
    elif "allergy" in words or "allergies" in words:
        phrase.pos = start
        while not phrase.done() and phrase.peek() not in ("allergy", "allergies"):
            phrase.pos += 1
        allergen = " ".join(w for w in words[: words.index(phrase.peek())] if w not in "a an")
        phrase.pos += 1
        if phrase.take("to"):
            _values(reading, "allergic_to", "be", "allergic to")
        elif allergen:
            reading.emit("allergic_to", allergen, say(reading, "be", f"allergic to {allergen}"))
    elif any(w in HEALTH for w in words) or words[-1] in ("disease", "syndrome", "disorder"):
        reading.emit("health", found, say(reading, "have", found, state=state))
    elif any(w in _OWNED for w in words) or found.split()[-1][:1].isupper():
        reading.emit("owns", found, say(reading, "have", found + detail(phrase), state=state))
    elif words[-1] in ("degree", "phd", "masters", "master's", "bachelor's", "diploma"):
        reading.emit("degree", found, say(reading, "have", found + detail(phrase)))
    elif reading.group.frequency or not _MEALS.isdisjoint(phrase.low):
        # "For breakfast I usually have oatmeal": what the user eats, as a habit.
        reading.emit("eats", found, say(reading, "have", found + detail(phrase)))


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


def _copula(reading: Reading, verb: str) -> None:
    """What follows am / is / was: the largest family of facts."""
    phrase = reading.phrase
    group = reading.group
    while phrase.peek() in _ADVERBS:
        group.change |= phrase.peek() in ("now", "newly", "officially", "finally")
        phrase.pos += 1
    word = phrase.peek()
    if word == "from":
        phrase.pos += 1
        _place(reading, "from", "be", "from", updates=False)
    elif word in ("based", "living", "located", "settled") and phrase.peek(1) == "in":
        phrase.pos += 2
        _place(reading, "lives_in", "live", "in", updates=False)
    elif word == "born":
        phrase.pos += 1
        group.past = False
        _born(reading)
    elif phrase.take("allergic", "to"):
        _values(reading, "allergic_to", "be", "allergic to")
    elif phrase.take("intolerant", "to"):
        _values(reading, "allergic_to", "be", "intolerant to")
    elif phrase.peek(1) == "intolerant":
        substance = phrase.word()
        phrase.pos += 2
        reading.emit("allergic_to", substance, say(reading, "be", f"{substance} intolerant"))
    elif word in _STATUSES:
        phrase.pos += 1
        _status(reading, word)
    elif phrase.take("in", "a", "relationship"):
        reading.emit(
            "relationship_status", "in a relationship", say(reading, "be", "in a relationship")
        )
    elif word in DIETS or (word in _ARTICLES and phrase.peek(1) in DIETS):
        _diet(reading)
    elif word.isdigit() and 0 < int(word) < 130 and phrase.peek(1) in ("", "years", "year", "yo"):
        reading.emit("age", word, say(reading, "be", f"{word} years old"))
    elif word in ("into", "obsessed", "crazy", "passionate", "fond", "keen", "mad", "nuts"):
        phrase.pos += 1
        phrase.take("about") or phrase.take("with") or phrase.take("of") or phrase.take("on")
        _values(reading, "likes", "like")
    elif word in ("afraid", "scared", "terrified", "frightened") and phrase.peek(1) == "of":
        phrase.pos += 2
        _values(reading, "afraid_of", "be", f"{word} of")
    elif word in ("good", "great", "skilled", "decent") and phrase.peek(1) == "at":
        phrase.pos += 2
        _values(reading, "skill", "be", f"{word} at")
    elif phrase.take("fluent", "in"):
        _values(reading, "speaks", "speak")
    elif word in HEALTH:
        phrase.pos += 1
        reading.emit("health", word, say(reading, "be", word))
    elif word in _JOBLESS:
        phrase.pos += 1
        reading.emit("occupation", word, say(reading, "be", word), updates=True)
    elif word == "to" and group.perfect:
        phrase.pos += 1
        _values(reading, "visited", "have been", "to")
    elif word == "at" and reading.work and phrase.word(1)[:1].isalpha():
        phrase.pos += 1
        _employer(reading, "at", updates=True)
    elif word == "in" and phrase.word(1)[:1].isupper() and _EPISODE.isdisjoint(phrase.low):
        phrase.pos += 1
        _place(reading, "lives_in", "live", "in", updates=group.change)
    elif word in _ARTICLES:
        _a_noun(reading)
    elif word in NATIONALITIES and phrase.word()[:1].isupper() and phrase.peek(1) == "":
        phrase.pos += 1
        reading.emit("nationality", phrase.word(-1), say(reading, "be", phrase.word(-1)))
    elif word in OCCUPATIONS or (phrase.peek(1) in OCCUPATIONS and phrase.peek(2) in ("", "at")):
        _occupation(reading, "be", "")
    elif phrase.word()[:1].isupper() and not group.negated and reading.speaker.is_user:
        read_name(reading, capitalised=True)


def _born(reading: Reading) -> None:
    phrase = reading.phrase
    prep = phrase.peek()
    if prep not in ("in", "on", "at"):
        return
    phrase.pos += 1
    found = read_value(phrase)
    if pointer(found):
        return
    first = found.split()[0].casefold()
    if prep == "on" or first in _MONTHS or first.isdigit() or first == "the":
        subject = reading.speaker.english()
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
        _values(reading, "likes", "be", "a fan of")
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
    if head in OCCUPATIONS or head.rstrip("s") in OCCUPATIONS or "stay-at-home" in words:
        phrase.pos = start
        _occupation(reading, "be", "", updates=reading.group.change)
    elif head in _LIKERS and len(words) > 1:
        liked = " ".join(found.split()[:-1])
        reading.emit("likes", liked, say(reading, "be", f"a {found}"))
    elif head in DIETS:
        reading.emit("diet", head, say(reading, "be", head))


def _generic(reading: Reading, verb: str) -> None:
    group = reading.group
    phrase = reading.phrase
    if verb in STATIVE_SKIP or verb in ("be", "have") or (group.past and not group.used_to):
        return
    if verb not in VERBS:
        return  # not a verb we know: a misread, not a fact
    if not EPISODIC.isdisjoint(phrase.low):
        return
    prep = phrase.peek() if phrase.peek() in ("to", "in", "at", "on", "with", "for") else ""
    if prep:
        phrase.pos += 1
    found = read_value(phrase) if not phrase.done() else ""
    if not found:
        if verb in _HOBBY_VERBS or group.negated:
            activity = gerund(verb)
            reading.emit("habit", activity, say(reading, verb, detail(phrase).strip()))
        return
    if pointer(found) or (prep and prep not in ("to", "in", "with", "for")):
        return
    rest = detail(phrase)
    for item in items(found):
        reading.emit(verb, item, say(reading, verb, f"{prep} {item}".strip() + rest))


_LIKING = (
    "like love enjoy adore dig fancy appreciate prefer hate dislike detest loathe despise stand"
)
_HANDLERS: dict[str, _Handler] = {
    **dict.fromkeys(_LIKING.split(), _likes),
    **dict.fromkeys(("speak", "know"), _speak),
    "live": _live,
    **dict.fromkeys(("move", "relocate", "settle"), _move),
    "grow": _grow,
    "work": _work,
    **dict.fromkeys(("start", "begin", "join"), _start),
    "get": _get,
    "become": _become,
    "break": _break,
    **dict.fromkeys(("adopt", "rescue", "foster"), _adopt),
    "go": _go,
    **dict.fromkeys(("quit", "stop", "leave", "give", "retire"), _quit),
    **dict.fromkeys(("want", "plan", "hope", "intend", "aim"), _want),
    "call": _call,
    "turn": _turn,
    "have": _have,
    "be": _copula,
    "eat": lambda r, v: _values(r, "eats", v, category="behavior"),
    "drink": lambda r, v: _values(r, "drinks", v, category="behavior"),
    **dict.fromkeys(("play", "practice", "practise", "do"), lambda r, v: _values(r, "hobby", v)),
    **dict.fromkeys(
        ("learn", "study"), lambda r, v: _values(r, "learning" if v == "learn" else "studies", v)
    ),
    "use": lambda r, v: _values(r, "uses", v),
    **dict.fromkeys(("own", "drive"), lambda r, v: _values(r, "owns", v)),
    **dict.fromkeys(
        ("visit", "travel"),
        lambda r, v: _values(r, "visited", v, "to" if r.phrase.take("to") else ""),
    ),
    "date": lambda r, v: _dating(r),
}
_PROGRESSIVE_SKIP = _FUTURE_PROGRESSIVE


def _dispatch(reading: Reading, verb: str) -> None:
    _HANDLERS.get(verb, _generic)(reading, verb)


def read_verb(reading: Reading) -> None:
    """Read the main verb at the phrase's position and its complement."""
    phrase = reading.phrase
    group = reading.group
    word = phrase.peek()
    verb = lemma(word)
    if "anymore" in phrase.low or "again" in phrase.low:
        group.change = True
    if word not in ("be", verb) and verb != "be" and not word.endswith(("s", "ing")):
        group.past = not group.perfect
    elif word in ("was", "were"):
        group.past = True
    if group.progressive and not group.perfect:
        if verb in _PROGRESSIVE_SKIP:
            return
        if verb in ("build", "write", "develop", "make", "create", "design"):
            phrase.pos += 1
            _values(reading, "works_on", verb)
            return
        if verb in ("train", "save", "prepare"):
            phrase.pos += 1
            if phrase.take("for") or phrase.take("up", "for"):
                _values(reading, "goal", verb, "for")
            return
        if verb == "take":
            phrase.pos += 1
            _values(reading, "learning", "take")
            return
        if verb in ("try", "plan", "hope", "aim"):
            phrase.pos += 1
            _want(reading, verb)
            return
        if verb not in ("learn", "study", "work", "live", "date", "play", "practice"):
            return
    phrase.pos += 1
    _dispatch(reading, verb)


_ATTRIBUTES = {
    "name": "name",
    "birthday": "birthday",
    "email": "email",
    "e-mail": "email",
    "phone": "phone",
    "number": "phone",
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
        label = f"{noun} {key}"
        predicate = "favorite"
    elif noun in ("native", "first"):
        if not (phrase.take("language") or phrase.take("tongue")):
            return
        label, predicate = f"{noun} language", "speaks"
    else:
        predicate = _ATTRIBUTES[noun]
        if phrase.take("number") or phrase.take("address"):
            label = f"{noun} {phrase.low[phrase.pos - 1]}"
    if not (phrase.take("is") or phrase.take("are")):
        return
    phrase.skip(_ADVERBS)
    if predicate == "birthday":
        phrase.take("on") or phrase.take("in")
    if predicate == "goal":
        phrase.take("to")
    if predicate == "name":
        name_start = phrase.pos
        read_name(reading)
        if reading.found or reading.speaker.is_user:
            return
        phrase.pos = name_start
    found = read_value(phrase)
    if pointer(found) and predicate not in ("email", "phone"):
        return
    first = found.split()[0].casefold() if found.split() else ""
    if first.endswith("ing") or first in ("coming", "soon", "next", "tomorrow", "today"):
        return  # "my birthday is coming up" says when, not what
    if (
        predicate == "birthday"
        and not any(ch.isdigit() for ch in found)
        and _MONTHS.isdisjoint(found.casefold().split())
    ):
        return
    if predicate in ("lives_in", "from", "employer"):
        found = capitalize_place(found)
    subject = reading.speaker.english()
    possessive = "User's" if subject == "User" else f"{subject}'s"
    rest = detail(phrase)
    if predicate in ("hobby", "favorite") and key != "":
        for item in items(found) if predicate == "hobby" else [found]:
            reading.emit(predicate, item, f"{possessive} {label} is {item}{rest}", key=key)
        return
    reading.emit(predicate, found, f"{possessive} {label} is {found}{rest}", key=key)
