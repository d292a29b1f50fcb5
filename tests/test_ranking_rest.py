"""How ``GET /memory/search`` ranks archived turns: time, speakers, sessions (issue 17).

Each behaviour is shown through the real server (uvicorn, LanceDB on a temp dir, the
hash embedder) twice: with the ranking knob that causes it, and with that knob at its
neutral value, where the same history ranks the other way, so the knob is what does it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testing.fake_ollama import FakeOllama
from tests.harness import Client, make_app, serve, settings_for
from tests.import_lines import http, jsonl, post

pytestmark = pytest.mark.anyio

#: Every step off but the one a test turns on.
NEUTRAL = {
    "rank_assistant_weight": 1.0,
    "rank_named_weight": 1.0,
    "rank_answer_weight": 1.0,
    "rank_first_person_weight": 1.0,
    "rank_outside_span_weight": 1.0,
    "rank_recent_weight": 0.0,
    "rank_supersede_similarity": 2.0,
    "rank_session_decay": 1.0,
}

FILLER = [
    ("f1", "Can you recommend a good book about the history of Rome?"),
    ("f2", "I need help writing a cover letter for a marketing job"),
    ("f3", "What is a good stretching routine after running?"),
    ("f4", "Explain how compound interest works in a savings account"),
]


def said(ident: str, text: str, *, session: str, at: str, role: str = "user") -> dict[str, Any]:
    speaker = "Ann" if role == "user" else "assistant"
    return {
        "kind": "turn",
        "id": ident,
        "session_id": session,
        "speaker": speaker,
        "role": role,
        "text": text,
        "at": at,
    }


def filler() -> list[dict[str, Any]]:
    return [
        said(ident, text, session=f"other-{ident}", at=f"2024-02-0{n}T10:00:00Z")
        for n, (ident, text) in enumerate(FILLER, 1)
    ]


async def searched(
    tmp_path: Path,
    fake: FakeOllama,
    lines: list[dict[str, Any]],
    query: str,
    *,
    k: int = 10,
    at: str | None = None,
    mode: str = "hybrid",
    **knobs: float,
) -> list[dict[str, Any]]:
    """Import ``lines`` for a fresh user of a fresh server, ask ``query``: the hits."""
    settings = settings_for(tmp_path, fake.url, api_keys={"ka": "ann"}, **knobs)
    async with serve(make_app(settings)) as address:
        reply = await post(address, jsonl([*lines, *filler()]))
        assert reply["errors"] == []
        params: dict[str, Any] = {"q": query, "kind": "turns", "limit": k, "mode": mode}
        if at is not None:
            params["at"] = at
        async with http(address) as client:
            response = await client.get("/memory/search", params=params)
    assert response.status_code == 200, response.text
    hits: list[dict[str, Any]] = response.json()["hits"]
    return hits


async def ranked(
    tmp_path: Path, fake: FakeOllama, lines: list[dict[str, Any]], query: str, **options: Any
) -> list[str]:
    """``searched``'s turns' ids, best first."""
    return [hit["source_id"] for hit in await searched(tmp_path, fake, lines, query, **options)]


def first_of(order: list[str], *ids: str) -> str:
    """Which of ``ids`` ranks first in ``order`` (one not found ranks below every one
    found; one of them must be found)."""
    first = min(ids, key=lambda i: order.index(i) if i in order else len(order))
    assert first in order, (ids, order)
    return first


BIKES = [
    said("old", "I keep three bikes in my garage", session="winter", at="2024-01-10T18:00:00Z"),
    said(
        "new",
        "Update: I keep four bikes in my garage now, I bought a gravel one",
        session="spring",
        at="2024-03-12T18:00:00Z",
    ),
]


@pytest.mark.parametrize(
    ("knobs", "first"),
    [({"rank_supersede_similarity": 0.5}, "new"), ({}, "old")],
    ids=["latest-word-on", "latest-word-off"],
)
async def test_the_newer_statement_of_the_same_thing_ranks_above_the_older(
    tmp_path: Path, fake: FakeOllama, knobs: dict[str, float], first: str
) -> None:
    order = await ranked(
        tmp_path, fake, BIKES, "How many bikes do I keep in my garage?", **(NEUTRAL | knobs)
    )
    assert first_of(order, "old", "new") == first


async def test_the_newer_statement_wins_over_an_older_one_the_assistant_echoed(
    tmp_path: Path, fake: FakeOllama
) -> None:
    # The winter conversation's best match is the assistant's echo of the statement:
    # the latest word compares the user's statements, not the echo with the new one.
    echo = said(
        "echo",
        "Three bikes in your garage! How many bikes do you keep in the garage, and do I"
        " keep count of which bikes you ride?",
        session="winter",
        at="2024-01-10T18:00:30Z",
        role="assistant",
    )
    order = await ranked(
        tmp_path,
        fake,
        [*BIKES, echo],
        "How many bikes do I keep in my garage?",
        **(NEUTRAL | {"rank_supersede_similarity": 0.3}),
    )
    assert order[0] == "echo"
    assert first_of(order, "old", "new") == "new"


@pytest.mark.parametrize("on", [True, False], ids=["latest-word-on", "latest-word-off"])
async def test_a_search_hit_says_which_newer_turn_superseded_it(
    tmp_path: Path, fake: FakeOllama, on: bool
) -> None:
    knobs: dict[str, Any] = NEUTRAL | ({"rank_supersede_similarity": 0.5} if on else {})
    hits = await searched(tmp_path, fake, BIKES, "How many bikes do I keep in my garage?", **knobs)
    by_source = {hit["source_id"]: hit for hit in hits}
    old, new = by_source["old"], by_source["new"]
    assert old["superseded_by"] == (new["id"] if on else None)
    assert new["superseded_by"] is None


async def test_a_conversation_context_shows_the_older_statement_as_the_earlier_state(
    tmp_path: Path, fake: FakeOllama
) -> None:
    knobs = NEUTRAL | {"rank_supersede_similarity": 0.5}
    settings = settings_for(tmp_path, fake.url, api_keys={"ka": "ann"}, **knobs)
    async with serve(make_app(settings)) as address:
        reply = await post(address, jsonl([*BIKES, *filler()]))
        assert reply["errors"] == []
        async with Client.connect(address, "now", token="ka") as client:
            await client.receive()  # ready
            query = "How many bikes do I keep in my garage?"
            await client.send(type="context", id="q", query=query, format="conversation")
            block = await client.receive()
    lines = block["text"].split("\n")
    new = next(i for i, line in enumerate(lines) if "four bikes" in line)
    old = next(i for i, line in enumerate(lines) if "three bikes" in line)
    assert new < old
    assert lines[new].startswith("- [2024-03-12] Ann: ")
    assert lines[old].startswith("- [2024-01-10] Ann (earlier: said otherwise on 2024-03-12): ")


async def test_statements_said_close_together_are_not_superseded(
    tmp_path: Path, fake: FakeOllama
) -> None:
    close = [line | {"at": "2024-01-10T18:00:00Z"} for line in BIKES]
    close[1]["at"] = "2024-01-10T18:00:30Z"  # the same conversation, 30 s later
    order = await ranked(
        tmp_path,
        fake,
        close,
        "How many bikes do I keep in my garage?",
        **(NEUTRAL | {"rank_supersede_similarity": 0.5}),
    )
    assert first_of(order, "old", "new") == "old"


SISTER = [
    said("user", "My sister Maya moved to Porto", session="s1", at="2024-02-20T09:00:00Z"),
    said(
        "echo",
        "Porto! So your sister Maya lives in Porto now: where does my sister Maya live?"
        " Porto. Maya will love Porto.",
        session="s1",
        at="2024-02-20T09:00:30Z",
        role="assistant",
    ),
]


@pytest.mark.parametrize(
    ("knobs", "first"),
    [({"rank_assistant_weight": 0.5}, "user"), ({}, "echo")],
    ids=["speakers-on", "speakers-off"],
)
async def test_the_users_own_words_outrank_the_assistant_repeating_them(
    tmp_path: Path, fake: FakeOllama, knobs: dict[str, float], first: str
) -> None:
    order = await ranked(
        tmp_path, fake, SISTER, "Where does my sister Maya live, Porto?", **(NEUTRAL | knobs)
    )
    assert first_of(order, "user", "echo") == first


WEEK = [
    said("chat", "Let's talk about my week at the garage", session="s1", at="2024-02-20T09:00:00Z"),
    said(
        "reply",
        "Your bikes! How many bikes do you keep in your garage? Bikes in a garage need room.",
        session="s1",
        at="2024-02-20T09:00:30Z",
        role="assistant",
    ),
    said("bikes", "Three bikes", session="s2", at="2024-02-21T09:00:00Z"),
]


@pytest.mark.parametrize(
    ("knobs", "first"),
    [({"rank_assistant_weight": 0.5}, "bikes"), ({}, "chat")],
    ids=["speakers-on", "speakers-off"],
)
async def test_a_users_turn_is_not_lifted_by_the_assistants_reply_beside_it(
    tmp_path: Path, fake: FakeOllama, knobs: dict[str, float], first: str
) -> None:
    query = "How many bikes do I keep in my garage?"
    order = await ranked(tmp_path, fake, WEEK, query, **(NEUTRAL | knobs))
    assert first_of(order, "chat", "bikes") == first


PUPPY = [
    said(
        "ask",
        "Please suggest a name for my new puppy, a name for a puppy",
        session="s1",
        at="2024-02-21T09:00:00Z",
    ),
    said(
        "answer",
        "For the puppy: Biscuit",
        session="s1",
        at="2024-02-21T09:00:30Z",
        role="assistant",
    ),
]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("What name did you suggest for my new puppy?", "answer"),
        ("Which name did I want for my new puppy?", "ask"),
    ],
    ids=["asks-what-the-assistant-said", "asks-about-the-user"],
)
async def test_the_assistants_turn_wins_when_asked_what_the_assistant_said(
    tmp_path: Path, fake: FakeOllama, query: str, first: str
) -> None:
    order = await ranked(tmp_path, fake, PUPPY, query, **(NEUTRAL | {"rank_assistant_weight": 0.5}))
    assert first_of(order, "ask", "answer") == first


BEACH = [
    said(
        "a1", "We spent the whole day at the beach in Nice", session="a", at="2024-02-10T10:00:00Z"
    ),
    said(
        "a2",
        "The beach in Nice was crowded, the beach bar too",
        session="a",
        at="2024-02-10T10:01:00Z",
    ),
    said("a3", "Back at the beach in Nice for sunset", session="a", at="2024-02-10T10:02:00Z"),
    said(
        "b1",
        "Another day at the beach, this time in Brittany",
        session="b",
        at="2024-02-14T10:00:00Z",
    ),
]


COVER = {"rank_session_decay": 0.5, "rank_session_free": 1}


@pytest.mark.parametrize(
    ("query", "knobs", "sessions"),
    [
        ("How many days did I spend at the beach in Nice in total?", COVER, {"a", "b"}),
        ("How many days did I spend at the beach in Nice in total?", {}, {"a"}),
        ("What was the beach in Nice like?", COVER, {"a"}),
    ],
    ids=["gathers-coverage-on", "gathers-coverage-off", "one-conversation"],
)
async def test_a_question_that_gathers_gets_hits_from_distinct_sessions_rather_than_one(
    tmp_path: Path, fake: FakeOllama, query: str, knobs: dict[str, float], sessions: set[str]
) -> None:
    order = await ranked(tmp_path, fake, BEACH, query, **(NEUTRAL | knobs))
    assert {ident[0] for ident in order[:3]} == sessions


COOKING = [
    said("autumn", "I cooked a curry for dinner", session="nov", at="2023-11-02T19:00:00Z"),
    said(
        "lately",
        "On Tuesday I cooked a big lasagna for dinner with friends",
        session="mar",
        at="2024-03-12T19:00:00Z",
    ),
]


@pytest.mark.parametrize(
    ("knobs", "first"),
    [({"rank_outside_span_weight": 0.5}, "lately"), ({}, "autumn")],
    ids=["anchor-on", "anchor-off"],
)
async def test_a_query_anchored_in_time_ranks_what_was_said_then_first(
    tmp_path: Path, fake: FakeOllama, knobs: dict[str, float], first: str
) -> None:
    order = await ranked(
        tmp_path,
        fake,
        COOKING,
        "What did I cook for dinner last week?",
        at="2024-03-18T12:00:00Z",
        **(NEUTRAL | knobs),
    )
    assert first_of(order, "autumn", "lately") == first


async def test_the_query_time_defaults_to_now_and_a_bad_one_is_refused(
    tmp_path: Path, fake: FakeOllama
) -> None:
    # Asked now, "last week" is long after both: the anchor ranks neither up.
    now = await ranked(tmp_path, fake, COOKING, "What did I cook for dinner last week?", **NEUTRAL)
    assert first_of(now, "autumn", "lately") == "autumn"
    settings = settings_for(tmp_path / "b", fake.url, api_keys={"ka": "ann"})
    async with serve(make_app(settings)) as address, http(address) as client:
        response = await client.get("/memory/search", params={"q": "dinner", "at": "soon"})
    assert response.status_code == 400


SIBLINGS = [
    said("tom", "My siblings: Tom is the oldest, a doctor", session="a", at="2024-01-10T18:00:00Z"),
    said("ana", "Ana, the youngest of my siblings, moved", session="b", at="2024-02-10T18:00:00Z"),
    *(
        said(f"sheet{n}", text, session=f"sheet{n}", at=f"2024-03-0{n}T10:00:00Z")
        for n, text in enumerate(
            [
                "What is the total number of rows in the table?",
                "Add a totals row: the total number of people in each column",
                "Now what is the number of columns in total?",
            ],
            1,
        )
    ),
]


@pytest.mark.parametrize(
    ("mode", "best"),
    [("hybrid", {"tom", "ana"}), ("keyword", {"sheet"})],
    ids=["hybrid", "keyword"],
)
async def test_a_question_that_gathers_is_matched_by_what_it_gathers_not_by_total(
    tmp_path: Path, fake: FakeOllama, mode: str, best: set[str]
) -> None:
    # The messages that answer a count each state one part and never say "total"; a
    # keyword search still matches every word asked for.
    hits = await searched(
        tmp_path, fake, SIBLINGS, "What is the total number of siblings I have?", mode=mode
    )
    assert {hit["source_id"][:5] for hit in hits[:2]} == best


PASTED = [
    said("mine", "On Sundays I paint lakes", session="art", at="2024-01-10T18:00:00Z"),
    said(
        "task",
        "Write a poem: what do painters paint on Sundays? They paint, paint, paint",
        session="poem",
        at="2024-01-12T18:00:00Z",
    ),
]


@pytest.mark.parametrize(
    ("query", "first"),
    [("What do I paint on Sundays?", "mine"), ("painters paint on Sundays", "task")],
    ids=["about-the-user", "about-nobody"],
)
async def test_a_question_about_the_user_ranks_their_own_words_above_a_task_pasted_in(
    tmp_path: Path, fake: FakeOllama, query: str, first: str
) -> None:
    # The task repeats the question's words but says nothing of its speaker; the knob
    # is what puts the user's own statement first, for a question about the user only.
    first_person = NEUTRAL | {"rank_first_person_weight": 0.6}
    on = await ranked(tmp_path / "on", fake, PASTED, query, **first_person)
    off = await ranked(tmp_path / "off", fake, PASTED, query, **NEUTRAL)
    assert (first_of(on, "mine", "task"), first_of(off, "mine", "task")) == (first, "task")


BAKING = [
    said("bread", "I baked sourdough bread on Tuesday", session="a", at="2024-05-21T18:00:00Z"),
    said(
        "water",
        "I have tracked my water for the past two weeks, two bottles a day",
        session="b",
        at="2024-05-22T18:00:00Z",
    ),
]


@pytest.mark.parametrize(
    ("mode", "first"), [("hybrid", "bread"), ("keyword", "water")], ids=["hybrid", "keyword"]
)
async def test_a_question_is_not_matched_by_the_words_that_place_it_in_time(
    tmp_path: Path, fake: FakeOllama, mode: str, first: str
) -> None:
    # "in the past two weeks" anchors the question in time; the turn that says the same
    # words is not about that time. A keyword search still matches every word asked for.
    # (The hash embedder knows no meaning beyond shared words: "bake" is not "baked"
    # there, so every similarity counts as meaning.)
    order = await ranked(
        tmp_path,
        fake,
        BAKING,
        "What did I bake in the past two weeks?",
        at="2024-05-30T12:00:00Z",
        mode=mode,
        min_similarity=-1.0,
    )
    assert first_of(order, "bread", "water") == first


PAINTERS = [
    said("ann", "I painted a lake at sunrise", session="art", at="2024-01-10T18:00:00Z"),
    {
        **said("bob", "", session="art", at="2024-01-10T18:01:00Z"),
        "speaker": "Bob",
        "role": "other",
        "text": "Ann, what did you paint? What did Ann paint, Ann? I paint rarely",
    },
]


async def test_a_question_naming_a_person_ranks_that_persons_turns_first(
    tmp_path: Path, fake: FakeOllama
) -> None:
    # Bob's question repeats every word of it; the knob is what puts Ann's answer first.
    query = "What did Ann paint?"
    named = NEUTRAL | {"rank_named_weight": 0.8}
    on = await ranked(tmp_path / "on", fake, PAINTERS, query, **named)
    off = await ranked(tmp_path / "off", fake, PAINTERS, query, **NEUTRAL)
    assert (first_of(on, "ann", "bob"), first_of(off, "ann", "bob")) == ("ann", "bob")


ANSWERS = {
    "amount": [
        said(
            "says", "We adopted 2 cats from the shelter", session="pets", at="2024-01-10T18:00:00Z"
        ),
        said(
            "around",
            "My cats, oh my cats: do I have the laziest cats? The cats sleep all day",
            session="naps",
            at="2024-01-12T18:00:00Z",
        ),
    ],
    "name": [
        said(
            "says", "On holiday I read Middlemarch twice", session="read", at="2024-06-02T18:00:00Z"
        ),
        said(
            "around",
            "Did I read a book on holiday? I read a book a day on holiday, any book",
            session="beach",
            at="2024-06-04T18:00:00Z",
        ),
    ],
    "time": [
        said(
            "says",
            "I flew to Lisbon last May with my sister",
            session="trip",
            at="2024-06-02T18:00:00Z",
        ),
        said(
            "around",
            "Did I go to Lisbon for the food? I did go to Lisbon for the tiles of Lisbon",
            session="tiles",
            at="2024-06-04T18:00:00Z",
        ),
    ],
}


@pytest.mark.parametrize(
    ("kind", "query"),
    [
        ("amount", "How many cats do I have?"),
        ("time", "When did I go to Lisbon?"),
        ("name", "Which book did I read on holiday?"),
    ],
    ids=["how-many", "when", "which"],
)
async def test_a_question_asking_how_many_when_or_which_ranks_the_turn_that_says_it_first(
    tmp_path: Path, fake: FakeOllama, kind: str, query: str
) -> None:
    # The other turn repeats the question's words; the knob is what puts the turn that
    # states the number (the time) first.
    lines = ANSWERS[kind]
    on = await ranked(
        tmp_path / "on", fake, lines, query, **(NEUTRAL | {"rank_answer_weight": 0.6})
    )
    off = await ranked(tmp_path / "off", fake, lines, query, **NEUTRAL)
    assert (first_of(on, "says", "around"), first_of(off, "says", "around")) == ("says", "around")


MANY = [
    said(
        f"m{n}",
        f"{topic} {detail}",
        session=f"s{n % 7}",
        at=f"2024-0{1 + n % 9}-1{n % 10}T10:00:00Z",
    )
    for n, (topic, detail) in enumerate(
        (topic, detail)
        for topic in (
            "I went hiking",
            "My sister visited",
            "We cooked pasta",
            "I bought a bike",
            "The garden needs water",
            "My cat was sick",
        )
        for detail in (
            "in the mountains with friends",
            "last weekend and it rained",
            "after work on a Tuesday",
            "with my sister and her dog",
            "and the bike had a flat tyre",
            "near the lake by the garden",
        )
    )
]


@pytest.mark.parametrize("query", ["my sister and the bike", "hiking near the lake"])
async def test_a_search_ranks_its_first_hits_the_same_however_many_it_asks_for(
    tmp_path: Path, fake: FakeOllama, query: str
) -> None:
    # A chat's context asks for 8; each side's list goes as deep for it as for 30.
    settings = settings_for(tmp_path, fake.url, api_keys={"ka": "ann"})
    async with serve(make_app(settings)) as address:
        assert (await post(address, jsonl(MANY)))["errors"] == []
        orders = []
        async with http(address) as client:
            for limit in (5, 30):
                params = {"q": query, "kind": "turns", "limit": limit}
                response = await client.get("/memory/search", params=params)
                assert response.status_code == 200, response.text
                orders.append([hit["source_id"] for hit in response.json()["hits"]])
    assert orders[0] == orders[1][:5]
