"""What a person says is what mnemo knows: memory state through the real server, no model.

Ollama is unreachable, so the rule-based extractor reads each turn; everything
else (merge rules, pins, context) is the production path: uvicorn, the
WebSocket protocol, LanceDB on a temporary directory, REST.
"""

# Chinese test sentences use full-width punctuation on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import Client, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

NOBODY = "http://127.0.0.1:9"  # nothing listens there: the fallback extractor runs


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, NOBODY))) as address:
        yield address


_ids = itertools.count()


async def tell(client: Client, text: str, *, learns: bool = True) -> dict[str, Any] | None:
    """One user turn; with ``learns``, wait for the memory frame it causes."""
    await client.send(type="turn", id=f"t{next(_ids)}", user=text, assistant="OK.")
    await client.until("ack")
    if not learns:
        return None
    frame, _ = await client.until("memory")
    return frame


async def facts(server: str, validity: str = "active") -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=f"http://{server}") as http:
        response = await http.get(
            "/memory/long-term", params={"kind": "facts", "validity": validity, "limit": 200}
        )
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def context(client: Client, query: str, budget: int = 300) -> str:
    await client.send(type="context", id="q", query=query, budget=budget)
    frame, _ = await client.until("context")
    text: str = frame["text"]
    return text


async def test_seven_ordinary_statements_are_seven_facts_and_the_likes_answer_the_question(
    server: str,
) -> None:
    said = [
        "I like green tea.",
        "I like jazz.",
        "I love hiking.",
        "I'm allergic to peanuts.",
        "I have two cats.",
        "My sister Ana is a nurse.",
        "I'm vegetarian.",
    ]
    async with Client.connect(server, "s1") as client:
        await client.receive()
        for text in said:
            await tell(client, text)
        block = await context(client, "what do I like?")
    contents = sorted(f["content"] for f in await facts(server))
    assert contents == sorted(
        [
            "User likes green tea",
            "User likes jazz",
            "User loves hiking",
            "User is allergic to peanuts",
            "User has two cats",
            "User's sister Ana is a nurse",
            "User is vegetarian",
        ]
    )
    assert all(word in block for word in ("green tea", "jazz", "hiking"))


async def test_a_move_replaces_the_address_and_keeps_the_old_one_as_linked_history(
    server: str,
) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await tell(client, "I live in Lisbon these days.")
    async with Client.connect(server, "s2") as client:
        await client.receive()
        frame = await tell(client, "Big news: I moved to Porto last month.")
        block = await context(client, "where do I live?")
    assert frame is not None
    [new], [old] = frame["added"], frame["superseded"]
    assert (new["content"], old["content"]) == ("User lives in Porto", "User lives in Lisbon")
    assert (old["validity"], old["superseded_by"], new["supersedes_id"]) == (
        "superseded",
        new["id"],
        old["id"],
    )
    assert [f["content"] for f in await facts(server)] == ["User lives in Porto"]
    assert "Porto" in block
    assert "Lisbon" not in block


async def test_a_pinned_fact_survives_a_contradiction_which_is_kept_beside_it_and_reported(
    server: str,
) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        frame = await tell(client, "I live in Oslo.")
        assert frame is not None
        [oslo] = frame["added"]
    async with httpx.AsyncClient(base_url=f"http://{server}") as http:
        pinned = await http.patch(f"/memory/long-term/{oslo['id']}", json={"pinned": True})
        assert pinned.json()["pinned"] is True
    async with Client.connect(server, "s2") as client:
        await client.receive()
        frame = await tell(client, "I just moved to Bergen.")
    assert frame is not None
    [bergen] = frame["added"]
    assert frame["superseded"] == []
    assert frame["conflicts"] == [{"id": bergen["id"], "kept_id": oslo["id"], "reason": "pinned"}]
    assert (bergen["pinned"], bergen["conflicts_with"]) == (False, oslo["id"])
    active = {f["content"]: f for f in await facts(server)}
    assert active["User lives in Oslo"]["pinned"] is True
    assert "User lives in Bergen" in active


async def test_a_retraction_retracts_exactly_the_fact_it_negates(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await tell(client, "I eat meat pretty much every day.")
        await tell(client, "I eat fish on Fridays.")
    async with Client.connect(server, "s2") as client:
        await client.receive()
        frame = await tell(client, "I don't eat meat anymore, I went vegetarian.")
    assert frame is not None
    assert [(f["content"], f["validity"]) for f in frame["superseded"]] == [
        ("User eats meat pretty much every day", "retracted")
    ]
    active = sorted(f["content"] for f in await facts(server))
    assert active == [
        "User eats fish on Fridays",
        "User is vegetarian",
        "User no longer eats meat",
    ]


async def test_other_peoples_facts_are_theirs_and_hedges_give_nothing(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await tell(client, "My friend Tom loves heavy metal.")
        for hedge in (
            "I might try learning Svelte at some point.",
            "Do you like opera?",
            "If I lived in Paris I would eat croissants daily.",
            "Translate 'I have three cats' into Italian.",
        ):
            await tell(client, hedge, learns=False)
        await tell(client, "I speak Portuguese and German.")
        block = await context(client, "what music does my friend like?")
    found = await facts(server)
    assert sorted(f["content"] for f in found) == [
        "User speaks German",
        "User speaks Portuguese",
        "User's friend Tom loves heavy metal",
    ]
    tom = next(f for f in found if "Tom" in f["content"])
    assert (tom["subject"], tom["relation"], tom["category"]) == ("Tom", "friend", "knowledge")
    assert "heavy metal" in block


async def test_chinese_moves_and_retractions_are_understood(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await tell(client, "我住在上海。")
        await tell(client, "我每天都喝咖啡。")
    async with Client.connect(server, "s2") as client:
        await client.receive()
        await tell(client, "我上个月搬到北京了。")
        await tell(client, "我不再喝咖啡了，改喝茶。")
        where = await context(client, "我住在哪里？")
        drink = await context(client, "我喝什么？")
    active = sorted(f["content"] for f in await facts(server))
    assert active == ["用户不再喝咖啡", "用户住在北京", "用户喝茶"]
    history = {f["content"]: f["validity"] for f in await facts(server, "any")}
    assert (history["用户住在上海"], history["用户每天喝咖啡"]) == ("superseded", "retracted")
    assert "北京" in where
    assert "上海" not in where
    assert "茶" in drink


async def test_a_small_budget_keeps_the_fact_that_answers_the_question(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        for text in [
            "I work at Acme as an engineer.",
            "I'm working on a compiler for Lua.",
            "I like dark chocolate.",
            "I like jazz.",
            "I prefer dark mode over light mode.",
            "I'm allergic to peanuts.",
        ]:
            await tell(client, text)
        block = await context(client, "what am I allergic to?", budget=30)
    assert "peanuts" in block


async def test_people_named_earlier_are_found_again_in_later_turns_and_sessions(
    server: str,
) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await tell(client, "My brother Mike lives in Tucson.")
        await tell(client, "My girlfriend Mia is a nurse.")
        frame = await tell(client, "She also runs marathons.")
    assert frame is not None
    [marathons] = frame["added"]
    assert (marathons["subject"], marathons["relation"]) == ("Mia", "girlfriend")
    async with Client.connect(server, "s2") as client:
        await client.receive()
        frame = await tell(client, "mike moved to denver last week")
    assert frame is not None
    [denver], [tucson] = frame["added"], frame["superseded"]
    assert (denver["content"], denver["subject"]) == ("User's brother Mike lives in Denver", "Mike")
    assert tucson["content"] == "User's brother Mike lives in Tucson"


async def test_markup_and_code_are_not_read_as_facts_and_an_ampersand_stays(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        for said in (
            "I love <img src=x onerror=alert(1)>",
            "I use `rm -rf /` daily",
            "I like the <script>alert(1)</script> tag",
        ):
            await tell(client, said, learns=False)
        rock = await tell(client, "I love rock & roll")
        jazz = await tell(client, "I love <b>jazz</b>")
    assert rock is not None
    assert jazz is not None
    assert [f["content"] for f in rock["added"]] == ["User loves rock & roll"]
    assert [f["content"] for f in jazz["added"]] == ["User loves jazz"]
    assert sorted(f["content"] for f in await facts(server)) == [
        "User loves jazz",
        "User loves rock & roll",
    ]


async def test_a_chat_no_model_answers_still_teaches_what_the_user_said(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="chat", id="c1", content="I live in Oslo")
        error, _ = await client.until("error")
        frame, _ = await client.until("memory")
    assert error["code"] == "llm_unavailable"
    [oslo] = frame["added"]
    assert (oslo["content"], oslo["extractor"]) == ("User lives in Oslo", "rules")
    assert [f["content"] for f in await facts(server)] == ["User lives in Oslo"]
