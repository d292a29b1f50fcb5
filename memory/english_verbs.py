"""English verbs to predicates: the table the rule-based extractor reads by.

Each handler reads the complement of one verb and emits statements; the copula
and "have" are in ``memory.english_copula``, what several verbs share in
``memory.english_facts``. Verbs with no handler of their own get the generic
reading: in the present tense, with an object that is not about the conversation,
"I collect stamps" is ``collect: stamps`` ("User collects stamps"), and an
intransitive activity "I run every morning" is a habit. A simple past reads as
"no longer" for states ("I lived in Rome") and as an event for changes ("I moved
to Porto"); a past reaction ("I loved that film") is no lasting taste.
"""

from __future__ import annotations

from collections.abc import Callable

from memory.english_copula import copula, have
from memory.english_facts import (
    ARTICLES,
    STATUSES,
    diet,
    employer,
    occupation,
    place,
    read_name,
    status,
    tail,
    values,
)
from memory.english_life import (
    DEGREES,
    TRANSPORT,
    adopt,
    break_up,
    dating,
    degree,
    graduated,
    keep,
    teach,
)
from memory.english_phrase import Reading, detail, items, pointer, say, years_old
from memory.english_phrase import value as read_value
from memory.lexicon import (
    DIETS,
    EPISODIC,
    LANGUAGES,
    PETS,
    STATIVE_SKIP,
    VERBS,
    gerund,
    lemma,
)
from memory.statements import Statement

__all__ = ["dispatch", "read_verb"]

_Handler = Callable[[Reading, str], None]

_HOBBY_VERBS = frozenset(
    "run swim hike climb surf ski skate knit paint draw sing dance cook bake garden meditate"
    " journal fish hunt cycle bike jog train sew crochet walk read write travel".split()
)

_FUTURE_PROGRESSIVE = frozenset("move go leave start get visit think consider look wonder".split())


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
    predicate = "prefers" if verb == "prefer" else "likes"
    if verb in ("hate", "dislike", "avoid", "detest", "loathe", "despise"):
        predicate = "dislikes"
    if group.negated and not group.change and predicate == "likes":
        values(reading, "dislikes", verb, negated=False)
    else:
        values(reading, predicate, verb)


def _speak(reading: Reading, verb: str) -> None:
    if reading.phrase.peek() in ("to", "with", "about", "up", "out", "of"):
        return
    if verb == "know" and reading.phrase.peek() not in LANGUAGES | {"some", "a", "basic"}:
        return
    values(reading, "speaks", verb)


def _live(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    prep = phrase.peek()
    if prep == "on" and not phrase.word(1)[:1].isupper():
        phrase.pos += 1  # "I live on coffee": no address, a habit
        found = read_value(phrase)
        if found and not pointer(found):
            reading.emit("habit", found, say(reading, "live", f"on {found}"))
        return
    if prep in ("in", "at", "near", "on", "outside", "by"):
        phrase.pos += 1
        place(reading, "lives_in", verb, prep, updates=False)


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
        place(reading, "lives_in", "live", "in", updates=True)


def _grow(reading: Reading, verb: str) -> None:
    if reading.phrase.take("up", "in") or reading.phrase.take("up", "on"):
        reading.group.past = False
        place(reading, "from", "grew up", "in", updates=False)


#: How or when someone works, said before where or as what ("I work nights at ...").
_WORK_MANNER = frozenset(
    "part-time full-time freelance nights days weekends evenings mornings shifts mostly"
    " mainly currently now still also remote remotely".split()
)


def _work(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    while True:  # "I work part time nights at ..."
        if not (phrase.take("part", "time") or phrase.take("full", "time")):
            if phrase.peek() not in _WORK_MANNER:
                break
            phrase.pos += 1
    prep = phrase.peek()
    if prep in ("at", "for"):
        phrase.pos += 1
        employer(reading, prep)
    elif prep == "as":
        phrase.pos += 1
        occupation(reading, "work", "as")
    elif prep == "on":
        phrase.pos += 1
        values(reading, "works_on", "work", "on")
    elif prep == "in":
        phrase.pos += 1
        field = read_value(phrase)
        if not pointer(field):
            content = say(reading, "work", tail(phrase, field, "in"))
            reading.emit("works_in", field, content)
    elif phrase.take("from", "home") or phrase.peek() in ("remotely", "remote"):
        reading.emit("habit", "working from home", say(reading, "work", "from home"))
    else:
        _generic(reading, verb)


_NEW_JOB = frozenset(
    "a my new first dream job position role gig post working work full-time part-time permanent"
    " hired".split()
)


def _start(reading: Reading, verb: str) -> None:
    """start / begin / join / get (a job): a new employer, role or activity."""
    phrase = reading.phrase
    reading.group.past = False
    phrase.skip(_NEW_JOB)
    hired = phrase.pos > 0 and phrase.low[phrase.pos - 1] == "hired"
    if (
        phrase.take("with")
        or phrase.take("at")
        or phrase.take("for")
        or (hired and phrase.take("by"))
    ):
        employer(reading, "at", updates=True)
    elif phrase.take("as"):
        occupation(reading, "work", "as", updates=True)
    elif verb == "join" and phrase.word()[:1].isupper():
        employer(reading, "at", updates=True)
    elif phrase.peek().endswith("ing") and lemma(phrase.peek()) in VERBS:
        nested = lemma(phrase.peek())
        phrase.pos += 1
        dispatch(reading, nested)
    elif not phrase.done() and verb in ("start", "begin"):
        found = read_value(phrase)
        if found and not pointer(found):
            content = f"{reading.speaker.english()} started {found}{detail(phrase)}"
            reading.emit("hobby", found, content, updates=False)


_SCHOOLS = frozenset("school university uni college academy programme program conservatory".split())


def _get(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    group = reading.group
    if phrase.take("me", "into"):  # "my grandad got me into birdwatching"
        liked = read_value(phrase)
        if liked and not pointer(liked):
            reading.found.append(Statement("likes", liked, f"User is into {liked}"))
        return
    if phrase.peek() in ("hired", "a", "an", "my") and (
        "job" in phrase.low[phrase.pos : phrase.pos + 4] or phrase.peek() == "hired"
    ):
        _start(reading, "get")  # a job, never a hobby: "got hired at", "got my first job as"
    elif phrase.peek() in STATUSES:
        group.past = False
        phrase.pos += 1
        status(reading, phrase.low[phrase.pos - 1], updates=True)
    elif phrase.take("promoted", "to"):
        group.past = False
        occupation(reading, "be", "", updates=True)
    elif phrase.take("into"):  # "got into med school" (a place), "got into knitting" (a taste)
        found = read_value(phrase)
        if not found or pointer(found):
            return
        group.past = False
        if _SCHOOLS.intersection(found.casefold().split()) or found[:1].isupper():
            reading.emit("school", found, say(reading, "study", "at " + found), updates=True)
        else:
            reading.emit("likes", found, say(reading, "be", "into " + found))
    elif any(w in PETS for w in phrase.low[phrase.pos : phrase.pos + 4]):
        group.past = False
        have(reading, "have")
    elif any(w in TRANSPORT for w in phrase.low[phrase.pos : phrase.pos + 4]):
        # "I get the 6:40 train from Reading": how the user commutes.
        if not group.past:
            found = read_value(phrase)
            reading.emit("habit", "commute", say(reading, "get", found + detail(phrase)))
    else:
        _generic(reading, verb)


def _become(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    reading.group.past = False
    if phrase.peek() in DIETS:
        diet(reading)
    else:
        occupation(reading, "be", "", updates=True)


def _go(reading: Reading, verb: str) -> None:
    phrase = reading.phrase
    if phrase.peek() in DIETS:
        reading.group.past = False
        diet(reading)
    elif phrase.peek().endswith("ing") and not reading.group.past:
        values(reading, "hobby", "go")
    elif phrase.take("to") and not reading.group.past:
        phrase.skip(ARTICLES)
        values(reading, "habit", "go", "to")


def _quit(reading: Reading, verb: str) -> None:
    """quit / stop / leave / give up: what the user no longer does (or where they left)."""
    phrase = reading.phrase
    group = reading.group
    phrase.take("up")
    if verb == "retire" or phrase.done():
        if verb == "retire":
            group.past = False
            reading.emit("occupation", "retired", say(reading, "be", "retired"), updates=True)
        elif (habit := _habit_named(reading.message)) is not None:
            group.past, group.negated, group.change = False, True, True
            reading.emit("habit", habit, say(reading, lemma(habit), ""))
        return
    group.past = False
    group.negated = group.change = True
    word = phrase.peek()
    if word.endswith("ing") and lemma(word) in VERBS:
        phrase.pos += 1
        before = len(reading.found)
        dispatch(reading, lemma(word))
        if len(reading.found) == before:  # "I stopped drinking (last year)"
            reading.emit("habit", word, say(reading, lemma(word), detail(phrase).strip()))
    elif phrase.word()[:1].isupper() or phrase.take("my", "job", "at"):
        employer(reading, "at")
    elif word in ("the", "my") and phrase.peek(2) in _WORKPLACES | {"job"}:
        phrase.pos += 1  # "I quit the dental practice": left that workplace
        employer(reading, "at")
    elif word not in ("my", "the", "it", "that", "this"):
        found = read_value(phrase)
        if not pointer(found):
            content = f"{reading.speaker.english()} quit {found}"
            reading.emit("habit", found, content)


#: What "I quit" without an object means, by what the message talks about.
_HABITS = (
    (("cigarette", "cigarettes", "smoking", "smoke", "smoked", "vape", "vaping"), "smoking"),
    (("alcohol", "drinking", "booze", "drink"), "drinking"),
)


def _habit_named(message: str) -> str | None:
    words = set(message.casefold().replace("!", " ").replace(".", " ").split())
    for cues, habit in _HABITS:
        if words.intersection(cues):
            return habit
    return None


_WORKPLACES = frozenset(
    "practice company firm office agency shop store bank hospital school clinic restaurant"
    " bakery factory startup studio lab".split()
)


def _take(reading: Reading) -> None:
    """ "I take levothyroxine", "I've taken up bowls"."""
    phrase = reading.phrase
    if phrase.take("up"):
        values(reading, "hobby", "take up")
    elif not reading.group.past and phrase.peek() not in ("a", "the", "my", "care", "part"):
        values(reading, "takes", "take")


def _switch(reading: Reading) -> None:
    """ "(My GP) switched me from sertraline to citalopram": one thing for another."""
    phrase = reading.phrase
    phrase.take("me")
    if not phrase.take("from"):
        return
    old = read_value(phrase)
    if not phrase.take("to") or pointer(old):
        return
    new = read_value(phrase)
    if new and not pointer(new):
        reading.found.append(Statement("habit", old, f"User no longer uses {old}", negated=True))
        content = f"User switched from {old} to {new}"
        reading.found.append(Statement("uses", new, content, updates_previous=True))


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


def _turn(reading: Reading, verb: str) -> None:
    age = reading.phrase.peek()
    if age.isdigit() and 0 < int(age) < 130:
        reading.group.past = False
        reading.emit("age", age, say(reading, "be", years_old(age)), updates=True)


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
    if pointer(found):
        return
    if verb in _HABIT_VERBS:
        # "I smoke about ten a day": the habit, with how much as its detail.
        activity = gerund(verb)
        shown = f"{prep} {found}".strip() + detail(phrase)
        reading.emit("habit", activity, say(reading, verb, shown))
        return
    rest = detail(phrase)
    for item in items(found):
        reading.emit(verb, item, say(reading, verb, f"{prep} {item}".strip() + rest))


_LIKING = (
    "like love enjoy adore dig fancy appreciate prefer hate dislike detest loathe despise stand"
    " avoid"
)

#: Verbs whose object is a measure, not a thing: the activity itself is the value.
_HABIT_VERBS = frozenset("smoke vape gamble".split())

_HANDLERS: dict[str, _Handler] = {
    "teach": teach,
    "keep": keep,
    **dict.fromkeys(_LIKING.split(), _likes),
    **dict.fromkeys(("speak", "know"), _speak),
    "live": _live,
    **dict.fromkeys(("move", "relocate", "settle"), _move),
    "grow": _grow,
    "work": _work,
    **dict.fromkeys(("start", "begin", "join"), _start),
    "get": _get,
    "become": _become,
    **dict.fromkeys(("break", "split"), break_up),
    **dict.fromkeys(("adopt", "rescue", "foster"), adopt),
    "go": _go,
    **dict.fromkeys(("quit", "stop", "leave", "give", "retire"), _quit),
    **dict.fromkeys(("want", "plan", "hope", "intend", "aim"), _want),
    "call": _call,
    "turn": _turn,
    "have": have,
    "be": copula,
    "eat": lambda r, v: values(r, "eats", v, category="behavior"),
    "drink": lambda r, v: values(r, "drinks", v, category="behavior"),
    **dict.fromkeys(("play", "practice", "practise"), lambda r, v: values(r, "hobby", v)),
    "do": lambda r, v: degree(r, v) if DEGREES & set(r.phrase.low) else values(r, "hobby", v),
    **dict.fromkeys(("complete", "finish"), lambda r, v: degree(r, v)),
    "graduate": lambda r, v: graduated(r),
    **dict.fromkeys(
        ("learn", "study"), lambda r, v: values(r, "learning" if v == "learn" else "studies", v)
    ),
    "use": lambda r, v: values(r, "uses", v),
    "take": lambda r, v: _take(r),
    **dict.fromkeys(("switch", "swap", "change"), lambda r, v: _switch(r)),
    **dict.fromkeys(("own", "drive"), lambda r, v: values(r, "owns", v)),
    **dict.fromkeys(
        ("visit", "travel"),
        lambda r, v: values(r, "visited", v, "to" if r.phrase.take("to") else ""),
    ),
    "date": lambda r, v: dating(r),
    # "I've been seeing someone"; "I see my therapist weekly" is no romance.
    "see": lambda r, v: dating(r) if r.group.progressive else None,
}

_PROGRESSIVE_SKIP = _FUTURE_PROGRESSIVE


def dispatch(reading: Reading, verb: str) -> None:
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
        if verb == "go" and phrase.peek(1) == "by":  # "I'm going by Rebecca now"
            phrase.pos += 2
            group.progressive = False
            read_name(reading, updates=True)
            return
        if verb == "get" and phrase.peek(1) == "married":  # "we're getting married"
            phrase.pos += 2
            group.progressive = False
            reading.emit("relationship_status", "engaged", say(reading, "be", "engaged"))
            return
        doing_for = "for" in phrase.low[phrase.pos : phrase.pos + 5]
        if verb == "do" and (reading.work or doing_for) and not group.past:
            # "I'm doing data science now", "I'm doing bookkeeping for a builders' merchant"
            phrase.pos += 1
            occupation(reading, "do", "", updates=True)
            return
        if verb in _PROGRESSIVE_SKIP:
            return
        if verb in ("build", "write", "develop", "make", "create", "design"):
            phrase.pos += 1
            values(reading, "works_on", verb)
            return
        if verb in ("train", "save", "prepare"):
            phrase.pos += 1
            if phrase.take("for") or phrase.take("up", "for"):
                values(reading, "goal", verb, "for")
            return
        if verb == "take":
            phrase.pos += 1
            values(reading, "learning", "take")
            return
        if verb in ("try", "plan", "hope", "aim"):
            phrase.pos += 1
            _want(reading, verb)
            return
        if verb not in (
            "learn",
            "study",
            "work",
            "live",
            "date",
            "see",
            "play",
            "practice",
            "practise",
        ):
            return
    phrase.pos += 1
    dispatch(reading, verb)
