"""Protocol v1 end to end: real uvicorn, real websockets client, real LanceDB, fake Ollama."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from testing.fake_ollama import FakeOllama, Reply
from tests.harness import Client, chat_bodies, make_app, serve, settings_for

pytestmark = pytest.mark.anyio


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, fake.url))) as address:
        yield address


async def test_new_session_gets_ready_with_zero_turns(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        ready = await client.receive()
    assert ready == {
        "type": "ready",
        "session_id": "s1",
        "turn_count": 0,
        "resumed": False,
        "protocol": 1,
    }


async def test_chat_streams_deltas_then_done_with_turn_number(
    server: str, fake: FakeOllama
) -> None:
    fake.script("Hello there, friend!")
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="chat", id="c1", content="hi")
        done, deltas = await client.until("done")
    assert [d["type"] for d in deltas] == ["delta"] * len(deltas)
    assert len(deltas) > 1
    assert "".join(d["text"] for d in deltas) == "Hello there, friend!"
    assert done["id"] == "c1"
    assert done["turn"] == 1
    assert done["usage"]["completion_tokens"] > 0


async def test_chat_sends_history_and_recalled_memories_to_the_model(
    server: str, fake: FakeOllama
) -> None:
    async with Client.connect(server, "old") as client:
        await client.receive()
        await client.send(type="turn", id="t1", user="my cat is called Miso", assistant="Cute!")
        await client.until("ack")
    fake.script("First.", "Second.")
    async with Client.connect(server, "new") as client:
        await client.receive()
        await client.send(type="chat", id="c1", content="what is my cat called?")
        await client.until("done")
        await client.send(type="chat", id="c2", content="and again?")
        await client.until("done")
    chats = chat_bodies(fake)
    first, second = chats[-2], chats[-1]
    assert first["messages"][0]["role"] == "system"
    assert "my cat is called Miso" in first["messages"][0]["content"]
    assert [m["content"] for m in second["messages"][1:]] == [
        "what is my cat called?",
        "First.",
        "and again?",
    ]


async def test_turn_is_acked_and_then_readable_through_rest(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="turn", id="t1", user="I live in Lyon", assistant="Nice city.")
        ack = await client.receive()
        assert ack == {"type": "ack", "id": "t1", "turn": 1}
        async with httpx.AsyncClient(base_url=f"http://{server}") as http:
            listed = (await http.get("/memory/long-term")).json()
    assert listed["total"] == 2
    texts = {(item["role"], item["text"]) for item in listed["items"]}
    assert texts == {("user", "I live in Lyon"), ("assistant", "Nice city.")}
    assert all(item["session_id"] == "s1" and item["turn"] == 1 for item in listed["items"])


async def test_turn_numbers_count_every_user_message(server: str, fake: FakeOllama) -> None:
    fake.script("ok")
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="turn", id="t1", user="a", assistant="b")
        assert (await client.until("ack"))[0]["turn"] == 1
        await client.send(type="chat", id="c1", content="c")
        assert (await client.until("done"))[0]["turn"] == 2
        await client.send(type="turn", id="t2", user="d", assistant="e")
        assert (await client.until("ack"))[0]["turn"] == 3


async def test_context_returns_a_block_of_relevant_memories(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="turn", id="t1", user="I love green tea", assistant="Noted.")
        await client.until("ack")
        await client.send(type="turn", id="t2", user="My car is red", assistant="OK.")
        await client.until("ack")
        await client.send(
            type="context", id="q1", query="green tea", budget=200, format="conversation"
        )
        block = await client.receive()
    assert block["type"] == "context"
    assert block["id"] == "q1"
    assert "user: I love green tea" in block["text"]
    assert block["text"].startswith("## Relevant past conversation")
    assert 0 < block["tokens"] <= 200
    assert len(block["memory_ids"]) >= 1


async def test_context_with_tiny_budget_is_empty_not_over_budget_and_names_the_budget_needed(
    server: str,
) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="turn", id="t1", user="I love green tea", assistant="Noted.")
        await client.until("ack")
        await client.send(type="context", id="q1", query="tea", budget=5, format="conversation")
        block = await client.receive()
    empty = {"type": "context", "id": "q1", "text": "", "tokens": 0, "memory_ids": []}
    # The shorter message ("Noted.") as a dated line under the heading: 17 tokens.
    assert block == empty | {"budget_needed": 17}


async def test_context_with_unknown_format_is_bad_request(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="context", id="q1", query="tea", format="poetry")
        error = await client.receive()
    assert error["code"] == "bad_request"
    assert error["id"] == "q1"
    assert "conversation" in error["message"]


async def test_ping_gets_pong(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="ping")
        assert await client.receive() == {"type": "pong"}


async def test_set_updates_working_memory_topic_and_variables(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="set", topic="travel", variables={"city": "Oslo"})
        await client.send(type="ping")
        await client.until("pong")
        async with httpx.AsyncClient(base_url=f"http://{server}") as http:
            working = (await http.get("/memory/working/s1")).json()
    assert working["current_topic"] == "travel"
    assert working["context_variables"] == {"city": "Oslo"}
    assert working["turn_count"] == 0


async def test_reconnect_reaches_the_same_live_session(server: str, fake: FakeOllama) -> None:
    fake.script("ok")
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="chat", id="c1", content="hello")
        await client.until("done")
    async with Client.connect(server, "s1") as client:
        ready = await client.receive()
    assert ready["resumed"] is True
    assert ready["turn_count"] == 1


async def test_end_archives_forgets_working_memory_and_closes_and_turn_numbers_go_on(
    server: str,
) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="set", topic="travel")
        await client.send(type="turn", id="t1", user="a", assistant="b")
        await client.until("ack")
        await client.send(type="end")
        with anyio.fail_after(10):
            await client.connection.wait_closed()
        assert client.connection.close_code == 1000
    async with httpx.AsyncClient(base_url=f"http://{server}") as http:
        assert (await http.get("/memory/working/s1")).status_code == 404
        assert (await http.get("/memory/long-term")).json()["total"] == 2
    async with Client.connect(server, "s1") as client:
        ready = await client.receive()
        await client.send(type="turn", id="t2", user="c", assistant="d")
        ack, _ = await client.until("ack")
        async with httpx.AsyncClient(base_url=f"http://{server}") as http:
            working = (await http.get("/memory/working/s1")).json()
    # The session id's archive holds turn 1: a turn number is never used twice.
    assert (ready["resumed"], ready["turn_count"], ack["turn"]) == (True, 1, 2)
    assert working["current_topic"] is None


async def test_chat_stream_is_not_blocked_by_other_sessions(server: str, fake: FakeOllama) -> None:
    fake.script(Reply("slow reply here", chunk_delay=0.2), "fast")
    async with Client.connect(server, "slow") as slow, Client.connect(server, "fast") as fast:
        await slow.receive()
        await fast.receive()
        await slow.send(type="chat", id="a", content="x")
        await slow.until("delta")
        await fast.send(type="turn", id="t", user="u", assistant="a")
        ack, _ = await fast.until("ack", timeout=1.0)
        assert ack["id"] == "t"
        await slow.until("done")
