"""Search and context on a small memory, as every new user has one (issue 43).

Through the real server (uvicorn, LanceDB on a temporary directory) with the bundled
MiniLM embedder, since what a hit shares with a question is meaning as much as words:
a hit that shares neither never outranks one that shares both, the hybrid order keeps
what the semantic and the keyword orders agree on, a context block leaves out what is
not relevant, and the first hits do not depend on how many were asked for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from schemas.settings import MIN_SIMILARITY
from server.main import build_app
from tests.harness import Client, http, serve, settings_for
from tests.import_lines import jsonl, post
from tests.mcp_client import call, mcp_session

pytestmark = pytest.mark.anyio

NOBODY = "http://127.0.0.1:9"  # no model: nothing here needs one


def turn(ident: str, session: str, minute: int, text: str, role: str = "user") -> dict[str, Any]:
    return {
        "kind": "turn",
        "id": ident,
        "session_id": session,
        "speaker": role,
        "role": role,
        "text": text,
        "at": f"2026-01-05T10:{minute:02d}:00Z",
    }


#: The issue's four turns: only the cat turn shares a word or a meaning with "cat Tom".
FIRST_HOUR = [
    turn("hi", "first", 0, "Hi!"),
    turn("tea", "first", 1, "I love green tea"),
    turn("noted", "first", 2, "Noted.", role="assistant"),
    turn("cat", "c9", 5, "I have a cat named Tom and I live in Oslo"),
]

#: A few sessions of a new user's week, all said within the hour (no newer word replaces
#: an older one) and by the user alone (no speaker is weighed down).
WEEK = [
    turn("w1", "monday", 0, "Hi there, how are you today?"),
    turn("w2", "monday", 1, "My cat Tom knocked a glass off the kitchen table again"),
    turn("w3", "monday", 2, "I cleaned it up and put his food bowl somewhere else"),
    turn("w4", "tuesday", 10, "I started a new job as a nurse at the city hospital"),
    turn("w5", "tuesday", 11, "The night shifts are long but my colleagues are kind"),
    turn("w6", "wednesday", 20, "Tom the cat sleeps on my laptop whenever I work"),
    turn("w7", "wednesday", 21, "We are planning a trip to Kyoto in the spring"),
    turn("w8", "thursday", 30, "Green tea in the morning, coffee never"),
    turn("w9", "thursday", 31, "Our cat needs a vet appointment for his vaccines"),
    turn("w10", "friday", 40, "Thanks, that was helpful"),
]
#: Questions that ask for no kind of answer and are not in the first person, so that no
#: ranking step after the search weighs a hit (``memory.ranking``).
PLAIN = ["cat Tom", "job at the city hospital", "Kyoto trip in spring", "green tea or coffee"]
#: And questions that do.
ASKING = ["what do I drink?", "how many cats do I have?", "my job at the hospital"]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[str]:
    settings = settings_for(tmp_path, NOBODY, embedder="onnx-minilm", preload_embedder=False)
    async with serve(build_app(settings)) as address:
        yield address


async def search(server: str, query: str, **params: Any) -> list[dict[str, Any]]:
    async with http(server, None) as client:
        answer = await client.get("/memory/search", params={"q": query, **params})
    assert answer.status_code == 200, answer.text
    hits: list[dict[str, Any]] = answer.json()["hits"]
    return hits


async def turns(server: str, query: str, mode: str = "hybrid", limit: int = 10) -> list[str]:
    hits = await search(server, query, kind="turns", mode=mode, limit=limit)
    return [hit["source_id"] for hit in hits]


async def test_the_issues_four_turns_find_the_cat_and_nothing_that_shares_nothing(
    server: str,
) -> None:
    assert (await post(server, jsonl(FIRST_HOUR)))["errors"] == []
    hybrid = await search(server, "cat Tom", kind="turns", limit=5)
    assert [hit["source_id"] for hit in hybrid] == ["cat"]
    assert hybrid[0]["relevance"] > 0.5
    # Both single-side orders put it first too; the others share no meaning with it.
    semantic = await search(server, "cat Tom", kind="turns", mode="semantic", limit=5)
    assert semantic[0]["source_id"] == "cat"
    assert all(hit["score"] < MIN_SIMILARITY for hit in semantic[1:])
    assert await turns(server, "cat Tom", "keyword") == ["cat"]
    assert [hit["source_id"] for hit in await search(server, "cat Tom", limit=5)] == ["cat"]


@pytest.mark.parametrize(
    ("said", "questions"),
    [(FIRST_HOUR, ["cat Tom", "green tea"]), (WEEK, PLAIN)],
    ids=["first-hour", "week"],
)
async def test_no_hit_sharing_neither_words_nor_meaning_outranks_one_sharing_both(
    server: str, said: list[dict[str, Any]], questions: list[str]
) -> None:
    assert (await post(server, jsonl(said)))["errors"] == []
    users = {line["id"] for line in said if line["role"] == "user"}
    for question in questions:
        hybrid = await turns(server, question)
        semantic = {
            hit["source_id"]: hit["score"]
            for hit in await search(server, question, kind="turns", mode="semantic", limit=50)
        }
        keyword = await turns(server, question, "keyword", limit=50)
        both = [t for t in hybrid if t in keyword and semantic[t] >= MIN_SIMILARITY]
        neither = [t for t in hybrid if t not in keyword and semantic[t] < MIN_SIMILARITY]
        for shared in both:
            for unshared in neither:
                assert hybrid.index(shared) < hybrid.index(unshared), (question, hybrid)
        # What both sides agree on, the hybrid order keeps (the user's turns: for a
        # question about the user, the assistant's replies rank at half their score).
        order = [t for t in semantic if t in hybrid and t in users]
        for high in order:
            for low in order[order.index(high) + 1 :]:
                if high in keyword and (
                    low not in keyword or keyword.index(high) < keyword.index(low)
                ):
                    assert hybrid.index(high) < hybrid.index(low), (question, high, low, hybrid)


async def test_a_context_block_leaves_out_what_is_not_relevant(server: str) -> None:
    assert (await post(server, jsonl(FIRST_HOUR)))["errors"] == []
    async with Client.connect(server, "ctx") as client:
        await client.receive()
        asked = {}
        for ident, query in (("far", "quantum chromodynamics lattice"), ("near", "cat Tom")):
            await client.send(type="context", id=ident, query=query, format="conversation")
            asked[ident], _ = await client.until("context")
    assert (asked["far"]["text"], asked["far"]["tokens"], asked["far"]["memory_ids"]) == ("", 0, [])
    near = asked["near"]["text"]
    assert "I have a cat named Tom" in near
    assert "green tea" not in near
    assert "Hi!" not in near


async def test_the_first_hits_are_the_same_whatever_the_limit(server: str) -> None:
    assert (await post(server, jsonl(WEEK)))["errors"] == []
    longest = 0
    for question in [*PLAIN, *ASKING]:
        every = await turns(server, question, limit=10)
        longest = max(longest, len(every))
        for limit in range(1, len(every)):
            assert await turns(server, question, limit=limit) == every[:limit], question
        mixed = [hit["id"] for hit in await search(server, question, limit=10)]
        for limit in (1, 2, 4):
            hits = await search(server, question, limit=limit)
            assert [hit["id"] for hit in hits] == mixed[:limit], question
    assert longest >= 5
    async with mcp_session(server) as mcp:
        wide = await call(mcp, "memory_search", query="cat Tom", limit=4)
        narrow = await call(mcp, "memory_search", query="cat Tom", limit=2)
    assert len(wide["results"]) == 4
    assert narrow["results"] == wide["results"][:2]


def fact(ident: str, content: str, category: str, **fields: Any) -> dict[str, Any]:
    """A fact of an export (restored as it is: its counts and importance too), stated and
    confirmed an hour ago."""
    at = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    line = {"kind": "fact", "id": ident, "content": content, "category": category}
    times = {"at": at, "updated_at": at, "last_seen": at, "last_confirmed_at": at}
    return line | {"confidence": 0.6, **times} | fields


async def test_a_facts_standing_never_puts_it_above_one_that_shares_the_question(
    server: str,
) -> None:
    # Tea is important, sure, recently and often used: seeds 001 and 002 weigh that. It
    # shares neither words nor meaning with "cat Tom"; the cat fact shares both.
    busy = {"importance": 10.0, "confidence": 1.0, "access_count": 90}
    lines = [
        fact("fact_0000000a", "User loves green tea", "preference", **busy),
        fact(
            "fact_0000000b", "User has a cat named Tom", "knowledge", importance=1.0, confidence=0.3
        ),
        fact("fact_0000000c", "User lives in Oslo", "identity", **busy),
    ]
    assert (await post(server, jsonl(lines)))["errors"] == []
    hits = await search(server, "cat Tom", kind="facts", limit=3)
    assert [hit["content"] for hit in hits][:1] == ["User has a cat named Tom"]
    async with Client.connect(server, "ctx") as client:
        await client.receive()
        await client.send(type="context", id="q", query="cat Tom", format="memory-context")
        block, _ = await client.until("context")
    assert block["memory_ids"][0] == "fact_0000000b"
