"""Learning end to end: real uvicorn, websockets, LanceDB, and the real Ollama client on a fake."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from testing.fake_ollama import FakeOllama
from tests.harness import Client, make_app, serve, settings_for

pytestmark = pytest.mark.anyio


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, fake.url))) as address:
        yield address


def extraction(*facts: dict[str, object]) -> dict[str, object]:
    return {"facts": list(facts), "memory_update": {"should_store": True}, "analysis": {}}


async def test_a_turn_teaches_a_fact_pushed_listed_and_used_in_context(
    server: str, fake: FakeOllama
) -> None:
    fake.script_json(
        extraction(
            {
                "content": "User is allergic to peanuts",
                "category": "identity",
                "confidence": 0.95,
                "subject": "user",
                "predicate": "allergic_to",
                "value": "peanuts",
            }
        )
    )
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="turn", id="t1", user="I'm allergic to peanuts", assistant="Noted")
        memory, _ = await client.until("memory")
        await client.send(type="context", id="q", query="what am I allergic to?", budget=300)
        block = await client.receive()
    [added] = memory["added"]
    assert added["content"] == "User is allergic to peanuts"
    assert added["kind"] == "fact"
    async with httpx.AsyncClient(base_url=f"http://{server}") as http:
        facts = (await http.get("/memory/long-term", params={"kind": "facts"})).json()
    assert [f["id"] for f in facts["items"]] == [added["id"]]
    assert block["text"] == (
        "## What you know about this user\n\nAbout user:\n- User is allergic to peanuts"
    )
    assert block["memory_ids"] == [added["id"]]
    structured = [b for _, path, b in fake.requests if path == "/api/chat" and "format" in b]
    assert structured[0]["options"]["temperature"] == 0
    required = structured[0]["format"]["$defs"]["ExtractedFact"]["required"]
    assert {"subject", "predicate", "value"} <= set(required)
    assert structured[0]["format"]["$defs"]["ExtractedFact"]["properties"]["confidence"] == {
        "type": "number",
        "minimum": 0.0,
        "maximum": 1.0,
    }


async def test_facts_are_recalled_in_a_later_session_and_sent_to_the_model(
    server: str, fake: FakeOllama
) -> None:
    fake.script_json(
        extraction(
            {
                "content": "User prefers short answers",
                "category": "preference",
                "confidence": 0.9,
                "subject": "user",
                "predicate": "prefers",
                "value": "short answers",
            }
        )
    )
    async with Client.connect(server, "first") as client:
        await client.receive()
        await client.send(type="turn", id="t1", user="Keep answers short please", assistant="OK")
        await client.until("memory")
    fake.script("Sure.")
    async with Client.connect(server, "second") as client:
        await client.receive()
        await client.send(type="chat", id="c1", content="Which answers do I prefer?")
        await client.until("done")
    chats = [b for _, path, b in fake.requests if path == "/api/chat" and "format" not in b]
    system = chats[-1]["messages"][0]["content"]
    assert "Preferences:\n- User prefers short answers" in system


def extraction_calls(fake: FakeOllama) -> list[dict[str, Any]]:
    return [
        b
        for _, path, b in fake.requests
        if path == "/api/chat"
        and "format" in b
        and "extract durable facts" in str(b["messages"][0]["content"])
    ]


async def test_extraction_reads_only_the_newest_turns_and_asks_for_user_stated_facts(
    server: str, fake: FakeOllama
) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        for n, said in enumerate(["I live in Lyon", "I work on compilers"], start=1):
            await client.send(type="turn", id=f"t{n}", user=said, assistant="Noted")
            await client.until("ack")
            with anyio.fail_after(10):
                while len(extraction_calls(fake)) < n:
                    await anyio.sleep(0.01)
    first, second = (b["messages"] for b in extraction_calls(fake))
    system, prompt = first[0]["content"], second[-1]["content"]
    assert "0.9 or more only when the user stated it directly" in system
    # The structure the merge rules read: who, which predicate (and how many values), negation.
    assert '"user" when the fact is about the user' in system
    assert "lives_in [one]: where the subject lives now" in system
    assert "likes [many]" in system
    assert "negated: true when the user says it is not, or no longer, so" in system
    assert "I work on compilers" in prompt
    assert "I live in Lyon" not in prompt  # already extracted: not sent again


async def test_sensitive_facts_are_kept_like_any_other(server: str, fake: FakeOllama) -> None:
    health = {
        "content": "User has type 1 diabetes",
        "category": "identity",
        "confidence": 0.95,
        "subject": "user",
        "predicate": "health",
        "value": "type 1 diabetes",
    }
    fake.script_json(extraction(health))
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="turn", id="t1", user="I have type 1 diabetes", assistant="OK")
        memory, _ = await client.until("memory")
    assert [f["content"] for f in memory["added"]] == ["User has type 1 diabetes"]


async def test_a_models_invented_fact_is_dropped_counted_and_the_readers_fact_stored(
    server: str, fake: FakeOllama
) -> None:
    invented = {
        "content": "John Smith is allergic to peanuts",
        "category": "knowledge",
        "confidence": 0.9,
        "subject": "john_smith",
        "predicate": "allergic_to",
        "value": "peanuts",
    }
    fake.script_json(extraction(invented))
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="turn", id="t1", user="I'm allergic to peanuts", assistant="Noted")
        memory, _ = await client.until("memory")
    async with httpx.AsyncClient(base_url=f"http://{server}") as http:
        health = (await http.get("/healthz")).json()
        metrics = (await http.get("/metrics")).text
    [added] = memory["added"]
    assert (added["subject"], added["value"], added["extractor"]) == ("user", "peanuts", "rules")
    assert health["extraction"]["rejected"] == {"subject_not_said": 1}
    assert 'mnemo_model_facts_rejected_total{reason="subject_not_said"} 1.0' in metrics
