"""``memory.ranking.rank`` on made-up candidates: the steps where a scenario through the
server cannot tell two choices apart (the hash embedder's similarities follow the
query's words)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec
import numpy as np
import numpy.typing as npt
import pytest

from memory.ranking import Candidates, Pick, named_in, rank
from memory.when import TimeAnchor
from schemas.settings import Ranking

DAY = 86_400.0


def test_the_update_that_answers_best_supersedes_not_a_later_look_alike() -> None:
    # 0: the old statement, best match; 1: the update, next best; 2: a later message
    # that looks more like the old one (cosine 0.9) but answers the question less, and
    # is about something else than the update (cosine 0.2).
    scores = {0: 1.0, 1: 0.9, 2: 0.8}
    at = {0: 0.0, 1: 30 * DAY, 2: 60 * DAY}
    cosine = np.array([[1.0, 0.5, 0.9], [0.5, 1.0, 0.2], [0.9, 0.2, 1.0]], dtype=np.float32)

    def similarities(positions: Sequence[int]) -> npt.NDArray[np.float32]:
        index = np.asarray(positions)
        picked: npt.NDArray[np.float32] = cosine[np.ix_(index, index)]
        return picked

    found = Candidates(scores, at.__getitem__, lambda _: "user", str, similarities)
    picks = rank(
        found,
        knobs=Ranking(supersede_similarity=0.3),
        anchor=TimeAnchor(),
        about_assistant=False,
        several=False,
        k=3,
        tie=lambda p: (0.0, p),
    )
    assert [pick.position for pick in picks] == [1, 0, 2]
    assert picks[1] == Pick(0, 1.0, 1)
    assert picks[0].superseded_by is None


# Each step alone, through ``rank``, on candidates whose scores multiply exactly (powers of
# two), with every other step at its neutral value. A row is (score, hour said, role,
# session) for positions 0, 1, 2...

HOUR = 3_600.0
Row = tuple[float, float, str, str]

#: Every step off: the order as scored.
OFF = Ranking(
    assistant_weight=1.0,
    outside_span_weight=1.0,
    recent_weight=0.0,
    supersede_similarity=2.0,
    session_decay=1.0,
)
#: The latest word alone: a cosine of 0.5 is similar enough, an hour apart is later.
LATEST = msgspec.structs.replace(OFF, supersede_similarity=0.5, supersede_gap=HOUR)
UP = float(np.nextafter(1.0, np.inf))  # just above 1.0


def by_position(position: int) -> tuple[float, int]:
    return (0.0, position)


def ranked(
    rows: Sequence[Row],
    knobs: Ranking,
    *,
    cosine: Sequence[Sequence[float]] | None = None,
    anchor: TimeAnchor | None = None,
    about_assistant: bool = False,
    several: bool = False,
    k: int = 10,
    tie: Callable[[int], tuple[float, int]] = by_position,
) -> list[tuple[int, float, int | None]]:
    """The picks of ``rank`` as (position, score, superseded_by); ``cosine`` between
    positions (all 1.0 when not given)."""
    size = len(rows)
    matrix = np.ones((size, size), np.float32) if cosine is None else np.array(cosine, np.float32)

    def similarities(positions: Sequence[int]) -> npt.NDArray[np.float32]:
        index = np.asarray(positions)
        picked: npt.NDArray[np.float32] = matrix[np.ix_(index, index)]
        return picked

    found = Candidates(
        {position: row[0] for position, row in enumerate(rows)},
        lambda p: rows[p][1] * HOUR,
        lambda p: rows[p][2],
        lambda p: rows[p][3],
        similarities,
    )
    picks = rank(
        found,
        knobs=knobs,
        anchor=anchor or TimeAnchor(),
        about_assistant=about_assistant,
        several=several,
        k=k,
        tie=tie,
    )
    return [(pick.position, pick.score, pick.superseded_by) for pick in picks]


def cosines(size: int, pairs: dict[tuple[int, int], float]) -> list[list[float]]:
    """A symmetric matrix, 1.0 on the diagonal, ``pairs`` set, 0.0 elsewhere."""
    matrix = [[1.0 if i == j else 0.0 for j in range(size)] for i in range(size)]
    for (i, j), value in pairs.items():
        matrix[i][j] = matrix[j][i] = value
    return matrix


def test_no_candidates_rank_to_nothing() -> None:
    assert ranked([], Ranking()) == []


SPEAKERS: list[Row] = [(1.0, 0, "user", "s"), (0.75, 0, "assistant", "s"), (0.625, 0, "other", "s")]


@pytest.mark.parametrize(
    ("weight", "about_assistant", "picks"),
    [
        (0.5, False, [(0, 1.0, None), (2, 0.625, None), (1, 0.375, None)]),
        (0.5, True, [(1, 0.75, None), (2, 0.625, None), (0, 0.5, None)]),
        (1.0, False, [(0, 1.0, None), (1, 0.75, None), (2, 0.625, None)]),
        (1.0, True, [(0, 1.0, None), (1, 0.75, None), (2, 0.625, None)]),
    ],
)
def test_the_speaker_a_question_is_not_about_is_weighed_down_and_other_people_never(
    weight: float, about_assistant: bool, picks: list[tuple[int, float, int | None]]
) -> None:
    knobs = msgspec.structs.replace(OFF, assistant_weight=weight)
    assert ranked(SPEAKERS, knobs, about_assistant=about_assistant) == picks


@pytest.mark.parametrize(
    ("anchor", "knobs", "rows", "picks"),
    [
        # Said outside the span (hours 120-480): at half the score.
        (
            TimeAnchor(120 * HOUR, 480 * HOUR),
            msgspec.structs.replace(OFF, outside_span_weight=0.5),
            [(1.0, 100, "user", "a"), (0.75, 300, "user", "b"), (0.625, 500, "user", "c")],
            [(1, 0.75, None), (0, 0.5, None), (2, 0.3125, None)],
        ),
        # No span: nothing is outside it.
        (
            TimeAnchor(),
            msgspec.structs.replace(OFF, outside_span_weight=0.5),
            [(1.0, 100, "user", "a"), (0.75, 300, "user", "b")],
            [(0, 1.0, None), (1, 0.75, None)],
        ),
        # What is true now: the oldest at 1 - recent_weight, linearly up to the newest.
        (
            TimeAnchor(recent=True),
            msgspec.structs.replace(OFF, recent_weight=0.5),
            [(0.5, 100, "user", "a"), (1.0, 150, "user", "b"), (0.875, 200, "user", "c")],
            [(2, 0.875, None), (1, 0.75, None), (0, 0.25, None)],
        ),
        # All said at once: none is older.
        (
            TimeAnchor(recent=True),
            msgspec.structs.replace(OFF, recent_weight=0.5),
            [(1.0, 100, "user", "a"), (0.75, 100, "user", "b")],
            [(0, 1.0, None), (1, 0.75, None)],
        ),
        # A query that does not ask what is true now keeps the older ones.
        (
            TimeAnchor(),
            msgspec.structs.replace(OFF, recent_weight=0.5),
            [(1.0, 100, "user", "a"), (0.75, 200, "user", "b")],
            [(0, 1.0, None), (1, 0.75, None)],
        ),
    ],
)
def test_the_time_a_query_names_weighs_what_was_said_outside_it_or_long_ago(
    anchor: TimeAnchor, knobs: Ranking, rows: list[Row], picks: list[tuple[int, float, int]]
) -> None:
    assert ranked(rows, knobs, anchor=anchor) == picks


OLD_AND_NEW: list[Row] = [(1.0, 10, "user", "a"), (0.75, 40, "user", "b")]


@pytest.mark.parametrize(
    ("rows", "cosine", "picks"),
    [
        # The newer statement on the same thing ranks just above the older one.
        (OLD_AND_NEW, cosines(2, {(0, 1): 0.5}), [(1, UP, None), (0, 1.0, 1)]),
        # Exactly the gap later is later.
        (
            [(1.0, 10, "user", "a"), (0.75, 11, "user", "b")],
            cosines(2, {(0, 1): 0.5}),
            [(1, UP, None), (0, 1.0, 1)],
        ),
        # Less than the gap later is not.
        (
            [(1.0, 10, "user", "a"), (0.75, 10.5, "user", "b")],
            cosines(2, {(0, 1): 0.5}),
            [(0, 1.0, None), (1, 0.75, None)],
        ),
        # Less similar than supersede_similarity: about something else.
        (OLD_AND_NEW, cosines(2, {(0, 1): 0.25}), [(0, 1.0, None), (1, 0.75, None)]),
        # The better-ranked one is the newer: it stays where it is, and still replaces.
        (
            [(1.0, 40, "user", "a"), (0.75, 10, "user", "b")],
            cosines(2, {(0, 1): 0.5}),
            [(0, 1.0, None), (1, 0.75, 0)],
        ),
        (
            [(0.75, 10, "user", "a"), (1.0, 40, "user", "b")],
            cosines(2, {(0, 1): 0.5}),
            [(1, 1.0, None), (0, 0.75, 1)],
        ),
        # Equal scores: the newer still goes above, not by the tie order.
        (
            [(1.0, 10, "user", "a"), (1.0, 40, "user", "b")],
            cosines(2, {(0, 1): 0.5}),
            [(1, UP, None), (0, 1.0, 1)],
        ),
        # Another speaker's word is not the user's latest.
        (
            [(1.0, 10, "user", "a"), (0.75, 40, "other", "b")],
            cosines(2, {(0, 1): 0.5}),
            [(0, 1.0, None), (1, 0.75, None)],
        ),
        # One session: no newer statement of another conversation.
        (
            [(1.0, 10, "user", "a"), (0.75, 40, "user", "a")],
            cosines(2, {(0, 1): 0.5}),
            [(0, 1.0, None), (1, 0.75, None)],
        ),
        # A session's statement is its best message, not the assistant's reply above it.
        (
            [(1.0, 10, "user", "a"), (0.875, 40, "assistant", "b"), (0.75, 40, "user", "b")],
            cosines(3, {(0, 1): 0.5, (0, 2): 0.5}),
            [(2, UP, None), (0, 1.0, 2), (1, 0.875, None)],
        ),
        # ... and not a worse message of its session, about something else (wherever
        # it is in the positions).
        (
            [(0.25, 10, "user", "a"), (1.0, 10, "user", "a"), (0.75, 40, "user", "b")],
            cosines(3, {(1, 2): 0.5}),
            [(2, UP, None), (1, 1.0, 2), (0, 0.25, None)],
        ),
        (
            [(1.0, 10, "user", "a"), (0.25, 10, "user", "a"), (0.75, 40, "user", "b")],
            cosines(3, {(0, 2): 0.5}),
            [(2, UP, None), (0, 1.0, 2), (1, 0.25, None)],
        ),
        # One newer statement replaces one older: the second older one keeps its place.
        (
            [(1.0, 10, "user", "a"), (0.875, 11, "user", "b"), (0.75, 40, "user", "c")],
            cosines(3, {(0, 2): 0.5, (1, 2): 0.5}),
            [(2, UP, None), (0, 1.0, 2), (1, 0.875, None)],
        ),
        # Of two newer ones, the better-ranked replaces ...
        (
            [(1.0, 10, "user", "a"), (0.75, 40, "user", "b"), (0.625, 50, "user", "c")],
            cosines(3, {(0, 1): 0.5, (0, 2): 1.0}),
            [(1, UP, None), (0, 1.0, 1), (2, 0.625, None)],
        ),
        # ... and of two ranked alike, the more similar.
        (
            [(1.0, 10, "user", "a"), (0.75, 50, "user", "b"), (0.75, 40, "user", "c")],
            cosines(3, {(0, 1): 1.0, (0, 2): 0.5}),
            [(1, UP, None), (0, 1.0, 1), (2, 0.75, None)],
        ),
    ],
)
def test_the_latest_word_on_a_thing_ranks_right_above_the_older_one(
    rows: list[Row], cosine: list[list[float]], picks: list[tuple[int, float, int | None]]
) -> None:
    assert ranked(rows, LATEST, cosine=cosine) == picks


THREE_SESSIONS: list[Row] = [
    (1.0, 10, "user", "a"),
    (0.875, 20, "user", "c"),
    (0.75, 40, "user", "b"),
]


@pytest.mark.parametrize(
    ("depth", "picks"),
    [
        (2, [(0, 1.0, None), (1, 0.875, None), (2, 0.75, None)]),
        (3, [(2, UP, None), (0, 1.0, 2), (1, 0.875, None)]),
    ],
)
def test_only_the_best_sessions_are_looked_at_for_a_newer_word(
    depth: int, picks: list[tuple[int, float, int | None]]
) -> None:
    knobs = msgspec.structs.replace(LATEST, supersede_depth=depth)
    assert ranked(THREE_SESSIONS, knobs, cosine=cosines(3, {(0, 2): 0.5})) == picks


@pytest.mark.parametrize(
    ("similarity", "cosine", "picks"),
    [
        (1.0, 1.0, [(1, UP, None), (0, 1.0, 1)]),  # at 1.0, only the same thing
        (1.0, 0.875, [(0, 1.0, None), (1, 0.75, None)]),
        (1.5, 1.0, [(0, 1.0, None), (1, 0.75, None)]),  # above 1.0: off
    ],
)
def test_supersede_similarity_is_the_least_cosine_of_a_newer_word(
    similarity: float, cosine: float, picks: list[tuple[int, float, int | None]]
) -> None:
    knobs = msgspec.structs.replace(LATEST, supersede_similarity=similarity)
    assert ranked(OLD_AND_NEW, knobs, cosine=cosines(2, {(0, 1): cosine})) == picks


@pytest.mark.parametrize(
    ("past", "present_only", "picks"),
    [
        (True, True, [(0, 1.0, None), (1, 0.75, None)]),
        (True, False, [(1, UP, None), (0, 1.0, 1)]),
        (False, True, [(1, UP, None), (0, 1.0, 1)]),
    ],
)
def test_a_question_about_the_past_keeps_the_older_word_where_it_ranks(
    past: bool, present_only: bool, picks: list[tuple[int, float, int | None]]
) -> None:
    knobs = msgspec.structs.replace(LATEST, supersede_present_only=present_only)
    anchor = TimeAnchor(past=past)
    assert ranked(OLD_AND_NEW, knobs, cosine=cosines(2, {(0, 1): 0.5}), anchor=anchor) == picks


def test_for_a_question_about_what_the_assistant_said_a_users_turn_is_no_statement() -> None:
    rows: list[Row] = [
        (1.0, 10, "assistant", "a"),
        (0.875, 40, "user", "b"),
        (0.75, 40, "assistant", "b"),
    ]
    cosine = cosines(3, {(0, 1): 0.5, (0, 2): 0.5})
    picks = [(2, UP, None), (0, 1.0, 2), (1, 0.875, None)]
    assert ranked(rows, LATEST, cosine=cosine, about_assistant=True) == picks


@pytest.mark.parametrize(
    ("about_assistant", "picks"),
    [
        (True, [(1, UP, None), (0, 1.0, 1)]),
        (False, [(0, 1.0, None), (1, 0.75, None)]),  # a reply is no statement of the user
    ],
)
def test_for_a_question_about_what_the_assistant_said_its_latest_reply_is_the_latest_word(
    about_assistant: bool, picks: list[tuple[int, float, int | None]]
) -> None:
    rows: list[Row] = [(1.0, 10, "assistant", "a"), (0.75, 40, "assistant", "b")]
    cosine = cosines(2, {(0, 1): 0.5})
    assert ranked(rows, LATEST, cosine=cosine, about_assistant=about_assistant) == picks


SESSIONS: list[Row] = [
    (1.0, 0, "user", "s1"),
    (0.875, 0, "user", "s1"),
    (0.75, 0, "user", "s1"),
    (0.5, 0, "user", "s2"),
]


@pytest.mark.parametrize(
    ("free", "several", "rows", "picks"),
    [
        # The third message of a session at half its score, after the other session's.
        (1, True, SESSIONS, [(0, 1.0), (1, 0.875), (3, 0.5), (2, 0.375)]),
        # None free: the second at half its score, the third at a quarter.
        (
            0,
            True,
            [*SESSIONS[:3], (0.25, 0, "user", "s2")],
            [(0, 1.0), (1, 0.4375), (3, 0.25), (2, 0.1875)],
        ),
        # A question that gathers nothing keeps the order as scored.
        (1, False, SESSIONS, [(0, 1.0), (1, 0.875), (2, 0.75), (3, 0.5)]),
        # The assistant's replies neither count for their session nor are decayed.
        (
            0,
            True,
            [(1.0, 0, "user", "s1"), (0.875, 0, "assistant", "s1"), (0.75, 0, "user", "s1")],
            [(0, 1.0), (1, 0.875), (2, 0.375)],
        ),
    ],
)
def test_a_question_gathering_several_conversations_spreads_its_picks_over_sessions(
    free: int, several: bool, rows: list[Row], picks: list[tuple[int, float]]
) -> None:
    knobs = msgspec.structs.replace(OFF, session_decay=0.5, session_free=free)
    assert ranked(rows, knobs, several=several) == [(*pick, None) for pick in picks]


@pytest.mark.parametrize(("k", "count"), [(0, 0), (2, 2), (4, 4), (9, 4)])
def test_at_most_k_picks_are_made(k: int, count: int) -> None:
    knobs = msgspec.structs.replace(OFF, session_decay=0.5, session_free=1)
    picks = ranked(SESSIONS, knobs, several=True, k=k)
    assert [position for position, _, _ in picks] == [0, 1, 3, 2][:count]


def test_equal_scores_are_ordered_by_the_tie_order() -> None:
    rows: list[Row] = [(1.0, 0, "user", "a"), (1.0, 0, "user", "b"), (1.0, 0, "user", "c")]

    def latest_first(position: int) -> tuple[float, int]:
        return (float(-position), position)

    for several in (False, True):
        picks = ranked(rows, Ranking(), several=several, tie=latest_first)
        assert picks == [(2, 1.0, None), (1, 1.0, None), (0, 1.0, None)]


def test_a_question_names_a_speaker_by_first_name_or_by_a_cjk_name_inside_it() -> None:
    assert named_in("What did Caroline paint?")("Caroline Smith")
    assert not named_in("What did Carol paint?")("Caroline")
    assert named_in("小明上周去哪了?")("小明")
    assert not named_in("What did you paint?")("assistant")
    assert not named_in("What will I paint?")("Will")
    assert not named_in("May I see what Bob painted?")("May")
    assert named_in("What did Will paint?")("Will Smith")
