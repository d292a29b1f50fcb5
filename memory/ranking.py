"""Ranking found messages as a person would: the latest word, the user's own words, many sessions.

Pure: it reorders scored candidates (positions of one user's index) by what
they are — when they were said, by whom, in which session — and by what the
query asks (``memory.when`` for its time, ``asks_assistant`` for its speaker).
Five steps, each a knob of ``schemas.settings.Ranking`` (its neutral value
turns it off):

1. speakers: a question about the user ranks the assistant's replies at
   ``assistant_weight`` of their score, since a reply that repeats what the
   user said must not crowd out the user's own words; a question about what
   the assistant said ("you suggested...") ranks the user's turns that way
   instead. Other speakers (``role`` ``other``: people in an imported
   conversation) are never weighed.
2. answers: a question asking for an amount ("how many...", "多少") ranks the
   messages that state no number at ``answer_weight`` of their score, and one asking
   when ("when did...", "how many days ago...", "什么时候") those that name no time,
   and one asking which by name ("which book...") those that name nothing
   (``memory.answers``): the message that answers says the number, time or name.
   A question about a person (in the first person, or naming one of the people;
   not about what the assistant said) ranks people's messages
   that say nothing of their speaker (no "I", "my", "we", "我": a task pasted in, an
   exercise, a question about the other) at ``first_person_weight``: what a person
   did is told by that person speaking of themselves.
3. time: a query anchored in a span ("last month", "三天前") ranks what was
   said outside it at ``outside_span_weight``; one that asks what is true now
   ("currently", "最近") weighs the older candidates down, linearly to
   ``1 - recent_weight`` for the oldest.
4. the latest word: in the ``supersede_depth`` best sessions (those that answer
   the query: the older and the newer statement of a fact both do), each
   session's statement is its best message not of the speaker step 1 weighs
   down (not the assistant's reply repeating the user, for a question about
   the user); of the newer statements of the same speaker similar to a
   better-ranked one (cosine >= ``supersede_similarity``: they speak to the
   same thing) and said at least ``supersede_gap`` seconds after it, the
   best-ranked (the one that answers the query best) ranks right above it;
   one newer message replaces at most one older;
   with ``supersede_present_only``, only for a question about the present: one
   in the past tense ("when did I...", "what was...") asks about an event or an
   earlier state, which the newest mention does not replace.
5. sessions: for a question that gathers what several conversations said
   (``gathers``: "how many... in total", "which did I do first, A or B", "what
   is the order of...", "compared to"), the final order is picked greedily,
   each pick's score multiplied by ``session_decay`` for every message of its
   session picked before it past the first ``session_free``, so the top k
   cover distinct sessions rather than near-copies from one. Other questions
   keep their order: their answer often takes a few turns of one session.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from memory.answers import FIRST_PERSON, AnswerKind, bit_of
from memory.keywords import is_stop_word
from memory.tokens import is_cjk
from memory.when import TimeAnchor, without_relative_time
from schemas.settings import Ranking, SearchMode

__all__ = [
    "DEPTH",
    "Candidates",
    "Pick",
    "asks_assistant",
    "full_text_query",
    "gathers",
    "named_in",
    "rank",
]

_ASSISTANT = re.compile(
    r"\bdid you\b.{0,30}?\b(say|tell|suggest|recommend|mention|advise|propose|give|provide|"
    r"list|explain|write|answer|share|offer|describe|call|name)\b"
    r"|\byou(?:'ve| have| had)?\s+(?:\w+\s+){0,2}?(said|told|suggested|recommended|mentioned|"
    r"advised|proposed|gave|given|provided|listed|explained|wrote|written|answered|shared|"
    r"offered|described|came up with)\b"
    r"|\byour (?:\w+ )?(suggestions?|recommendations?|advice|answer|list|tips?|response|reply)\b"
)
_ASSISTANT_CJK = ("你说", "你告诉", "你建议", "你推荐", "你提到", "你给我", "你的建议", "你讲")


_GATHERS = re.compile(
    r"\bhow many\b(?!.*\bago\b)"
    r"|\bhow much (?:more|less|longer|shorter|earlier|later|older|younger|further)\b"
    r"|\b(?:in total|total|altogether|combined|in all|sum|average)\b"
    r"|\b(?:compared? (?:to|with)|versus|difference|between)\b"
    r"|\b(?:the|what|which) order\b|\b(?:earliest|latest)\b"
    r"|\b(?:first|before|after|earlier|later)\b.*\bor\b"
    r"|\b(?:each|every|all) (?:of )?(?:the|my)\b"
)
_GATHERS_CJK = (
    "一共",
    "总共",
    "总数",
    "合计",
    "平均",
    "几次",
    "多少次",
    "先后",
    "顺序",
    "相比",
    "比较",
)


def gathers(query: str) -> bool:
    """Whether ``query`` gathers what several conversations said: a count or total
    ("how many...", "in total"), an order or comparison ("which did I do first, A or
    B", "compared to", "一共", "先后")."""
    text = " ".join(query.casefold().split())
    return bool(_GATHERS.search(text)) or any(w in query for w in _GATHERS_CJK)


#: The words of a question that gathers which say how to gather, not what: "how many",
#: "the total number of", "in total", "on average".
_HOW_TO_GATHER = re.compile(
    r"\b(?:what is |what's )?(?:the )?(?:total (?:number|amount|count) of|number of)\b"
    r"|\bin total\b|\btotal\b|\baltogether\b|\bcombined\b|\bin all\b"
    r"|\bon average\b|\baverage\b|\bhow (?:many|much)(?: times)?\b",
    re.IGNORECASE,
)


def full_text_query(query: str, mode: SearchMode) -> str:
    """What the full-text side of a ``mode`` search matches for ``query``. In a hybrid
    search:

    - without the words that place it relative to its own time ("in the past two
      weeks", "last Saturday": ``memory.when.without_relative_time``): the time anchor
      weighs what was said then; a message that says the same words ("for the past two
      weeks") is not about that time;
    - a question that ``gathers``, also without the words that say how to gather ("How
      many times did I bake something in total?" matches "did I bake something?"):
      the messages that answer it each state one part and never say "total"; other
      messages that do ("add a totals row") would outrank them.

    The vector side keeps the whole question (measured: the embedding of the shortened
    one found less, or the same). A keyword search matches the words asked for, all of
    them."""
    if mode != "hybrid":
        return query
    words = without_relative_time(query) or query
    if not gathers(query):
        return words
    return " ".join(_HOW_TO_GATHER.sub(" ", words).split()) or words


_WORD = re.compile(r"[^\W\d_]+")


def named_in(query: str) -> Callable[[str], bool]:
    """Whether ``query`` names a speaker: their first name as a word of it ("What did
    Caroline paint?" names "Caroline Smith"), or inside it for a name in CJK script. A
    name that is also a function word ("Will", "May") names them only capitalized and
    not first: "What will I do?" and "May I ask..." name nobody."""
    found = _WORD.findall(query)
    words = frozenset(word.casefold() for word in found)
    proper = frozenset(found[1:])

    def names(speaker: str) -> bool:
        first = speaker.split()[0] if speaker.strip() else ""
        if not first:
            return False
        if is_cjk(first[0]):
            return first in query
        if is_stop_word(first):
            return first[:1].upper() + first[1:].casefold() in proper
        return first.casefold() in words

    return names


def asks_assistant(query: str) -> bool:
    """Whether ``query`` asks what the assistant said ("what did you suggest...",
    "remind me of your recommendation", "你建议...")."""
    text = " ".join(query.casefold().split())
    return bool(_ASSISTANT.search(text)) or any(w in query for w in _ASSISTANT_CJK)


#: How deep each side's list goes, whatever the ``k`` asked for, so that the first hits
#: never depend on how many were asked for: the ranking steps reorder what both sides
#: found, and a chat's context asks for 8. At 16 deep (2 x 8), LongMemEval dev asked for
#: 10 found turn recall_all@5 0.760 and knowledge updates current-above-stale 0.914; at
#: 60, 0.790 and 0.943, as at 200 deep. LoCoMo (20 asked for) keeps its R@10 at 60 and
#: loses at 100 (0.772) and 200 (0.763): docs/performance.md.
DEPTH = 60
#: Step 4 off: the order as scored.
_KEEP = Ranking(session_decay=1.0)


class Pick(NamedTuple):
    """A ranked position, its score, and the newer position that superseded it (the
    latest word ranked it right above), if any."""

    position: int
    score: float
    superseded_by: int | None = None


@dataclass(frozen=True, slots=True)
class Candidates:
    """What ``rank`` needs to know of the positions it reorders."""

    scores: Mapping[int, float]
    #: Epoch seconds, role and session of a position.
    at: Callable[[int], float]
    role: Callable[[int], str]
    session: Callable[[int], str]
    #: Cosine similarities between positions (a square matrix, in the order given).
    similarities: Callable[[Sequence[int]], npt.NDArray[np.float32]]
    #: Who said a position ("Caroline", "assistant").
    speaker: Callable[[int], str] = lambda _: ""
    #: What a position's message states (``memory.answers.stated``'s bits); by default
    #: everything, so candidates that cannot be read are not weighed by it.
    stated: Callable[[int], int] = lambda _: -1


def rank(
    found: Candidates,
    *,
    knobs: Ranking,
    anchor: TimeAnchor,
    about_assistant: bool,
    several: bool,
    k: int,
    named: Callable[[str], bool] = lambda _: False,
    asked: AnswerKind | None = None,
    first_person: bool = False,
    tie: Callable[[int], tuple[float, int]],
) -> list[Pick]:
    """The ``k`` best positions with their scores, reordered as the module docstring says
    (``several``: the query ``gathers``; ``asked``: the kind of answer it asks for;
    ``first_person``: it speaks in the first person, ``memory.answers.in_first_person``);
    equal scores are ordered by ``tie`` (ascending). The first ``n`` of them are the
    same for every ``k`` of at least ``n``."""
    scores = dict(found.scores)
    if not scores:
        return []
    _weigh_speakers(scores, found, knobs, about_assistant)
    _weigh_named(scores, found, knobs, named)
    about_person = not about_assistant and (first_person or _names_someone(found, named))
    _weigh_statements(scores, found, knobs, asked, about_person)
    _weigh_time(scores, found, knobs, anchor)
    echo = "user" if about_assistant else "assistant"
    newer: dict[int, int] = {}
    if not (anchor.past and knobs.supersede_present_only):
        newer = _latest_word(scores, found, knobs, echo, tie)
    picks = _cover_sessions(scores, found, knobs if several else _KEEP, echo, k, tie)
    return [Pick(p, score, newer.get(p)) for p, score in picks]


def _weigh_speakers(
    scores: dict[int, float], found: Candidates, knobs: Ranking, about_assistant: bool
) -> None:
    weight = knobs.assistant_weight
    if weight == 1.0:
        return
    other = "user" if about_assistant else "assistant"
    for position in scores:
        if found.role(position) == other:
            scores[position] *= weight


def _names_someone(found: Candidates, named: Callable[[str], bool]) -> bool:
    people = {found.speaker(p) for p in found.scores if found.role(p) != "assistant"}
    return any(named(person) for person in people)


def _weigh_named(
    scores: dict[int, float], found: Candidates, knobs: Ranking, named: Callable[[str], bool]
) -> None:
    """When the query names exactly one of the people among the candidates, the others'
    turns weigh ``named_weight``; the assistant is not a person here (step 1 weighs it)."""
    if knobs.named_weight == 1.0:
        return
    people = {found.speaker(p) for p in scores if found.role(p) != "assistant"}
    asked = {person for person in people if named(person)}
    if len(asked) != 1 or len(people) < 2:
        return
    for position in scores:
        if found.role(position) != "assistant" and found.speaker(position) not in asked:
            scores[position] *= knobs.named_weight


def _weigh_statements(
    scores: dict[int, float],
    found: Candidates,
    knobs: Ranking,
    asked: AnswerKind | None,
    about_person: bool,
) -> None:
    """Messages that do not state the kind of answer asked for weigh ``answer_weight``;
    for a question about a person (``about_person``: in the first person, or naming one
    of the people whose messages were found; not about what the assistant said),
    people's messages that say nothing of their speaker
    (no "I", "my", "we", "我") weigh ``first_person_weight``. Every candidate is read
    (a message's text once, ~12-30 us, then kept: ``Candidates.stated``): one left unread
    would weigh as if it stated nothing, and a cut at the best n put a message that
    states the answer just below it under every one above that does not (LoCoMo dev
    R@20, read the best 20: 0.829; every candidate: 0.835)."""
    checks: list[tuple[int, float, bool]] = []  # (bit, weight, people's messages only)
    if asked is not None and knobs.answer_weight != 1.0:
        checks.append((bit_of(asked), knobs.answer_weight, False))
    if about_person and knobs.first_person_weight != 1.0:
        checks.append((FIRST_PERSON, knobs.first_person_weight, True))
    if not checks:
        return
    for position in scores:
        bits = found.stated(position)
        for bit, weight, people_only in checks:
            if not bits & bit and not (people_only and found.role(position) == "assistant"):
                scores[position] *= weight


def _weigh_time(
    scores: dict[int, float], found: Candidates, knobs: Ranking, anchor: TimeAnchor
) -> None:
    if anchor.spans and knobs.outside_span_weight != 1.0:
        for position in scores:
            if not anchor.holds(found.at(position)):
                scores[position] *= knobs.outside_span_weight
    if anchor.recent and knobs.recent_weight:
        times = {p: found.at(p) for p in scores}
        oldest, newest = min(times.values()), max(times.values())
        if newest > oldest:
            for position, at in times.items():
                age = (newest - at) / (newest - oldest)
                scores[position] *= 1.0 - knobs.recent_weight * age


def _latest_word(
    scores: dict[int, float],
    found: Candidates,
    knobs: Ranking,
    echo: str,
    tie: Callable[[int], tuple[float, int]],
) -> dict[int, int]:
    """Lift, for each of the best sessions from the best down, the best-ranked newer
    statement of the same speaker similar enough to its statement to just above it. A
    session's statement is its best-ranked message not of the ``echo`` role (the
    assistant's, for a question about the user): the rest of a later session on the same
    topic is not a newer word on an older one, and a reply that repeats a statement is
    not the statement. One newer message replaces at
    most one older: lifting the rest of a later conversation on the same topic would
    push the older statement (the earlier state, still worth seeing) out. Returns each
    older statement's newer one."""
    if knobs.supersede_similarity > 1.0:
        return {}
    sessions: dict[str, int] = {}
    for position in sorted(scores, key=lambda p: (-scores[p], tie(p))):
        if found.role(position) == echo:
            continue
        sessions.setdefault(found.session(position), position)
        if len(sessions) == knobs.supersede_depth:
            break
    pool = list(sessions.values())
    if len(pool) < 2:
        return {}
    similar = found.similarities(pool)
    at = [found.at(p) for p in pool]
    roles = [found.role(p) for p in pool]
    used: set[int] = set()
    superseded: dict[int, int] = {}
    for j in range(len(pool)):
        newer = [
            i
            for i in range(len(pool))
            if i not in used
            and roles[i] == roles[j]
            and at[i] - at[j] >= knobs.supersede_gap
            and similar[j, i] >= knobs.supersede_similarity
        ]
        if not newer:
            continue
        i = max(newer, key=lambda i: (scores[pool[i]], similar[j, i]))
        used.add(i)
        older = pool[j]
        superseded[older] = pool[i]
        if scores[older] >= scores[pool[i]]:
            # Just above the older one: equal scores would fall to the tie order.
            scores[pool[i]] = float(np.nextafter(scores[older], np.inf))
    return superseded


def _cover_sessions(
    scores: Mapping[int, float],
    found: Candidates,
    knobs: Ranking,
    echo: str,
    k: int,
    tie: Callable[[int], tuple[float, int]],
) -> list[tuple[int, float]]:
    """Greedy picks, each one's score decayed by the picks of its session before it; a
    decayed score only falls, so a stale heap entry is re-scored and pushed back. The
    ``echo`` role's messages (already weighed down) neither count nor are decayed."""
    decay, free = knobs.session_decay, knobs.session_free
    heap = [(-score, tie(p), p, 0) for p, score in scores.items()]
    heapq.heapify(heap)
    picked: dict[str, int] = {}
    out: list[tuple[int, float]] = []
    while heap and len(out) < k:
        negative, order, position, seen = heapq.heappop(heap)
        if found.role(position) == echo:
            out.append((position, -negative))
            continue
        session = found.session(position)
        before = picked.get(session, 0)
        now = max(0, before - free)
        if now != seen and decay != 1.0:
            score = scores[position] * decay**now
            heapq.heappush(heap, (-score, order, position, now))
            continue
        picked[session] = before + 1
        out.append((position, -negative))
    return out
