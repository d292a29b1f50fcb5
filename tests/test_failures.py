"""Failure behaviour end to end: Ollama faults, bad frames, floods, restarts."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from server.adapters.ollama import OllamaEmbedder, OllamaLlm
from server.app import create_app
from server.main import build_store
from testing.fake_ollama import FakeOllama, Reply
from tests.harness import Client, chat_bodies, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

TIMEOUT = 0.5


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    settings = settings_for(tmp_path, fake.url, llm_timeout=TIMEOUT, max_frame_bytes=1024)
    async with serve(make_app(settings)) as address:
        yield address


async def archived_texts(server: str) -> list[str]:
    async with httpx.AsyncClient(base_url=f"http://{server}") as client:
        items = (await client.get("/memory/long-term", params={"limit": 200})).json()["items"]
    return [item["text"] for item in items]


async def wait_archived(server: str, text: str, timeout: float = 5) -> None:
    with anyio.fail_after(timeout):
        while text not in await archived_texts(server):
            await anyio.sleep(0.02)


@pytest.mark.parametrize(
    ("fault", "code"),
    [
        ({"status": 500}, "llm_error"),
        ({"status": 400, "error": "bad model options"}, "llm_error"),
        ({"delay": TIMEOUT * 4}, "llm_timeout"),
        ({"stream_error_after": 2}, "llm_error"),
        ({"drop_after": 2}, "llm_error"),
        ({"garbage_after": 2}, "llm_error"),
    ],
    ids=["status-500", "status-400", "slow", "error-line", "dropped", "junk"],
)
async def test_ollama_fault_becomes_error_frame_message_archived_socket_survives(
    server: str, fake: FakeOllama, fault: dict[str, object], code: str
) -> None:
    fake.default_reply = "one two three four five six"
    fake.fault(path="/api/chat", **fault)
    async with Client.connect(server, "s1") as client:
        await client.receive()
        started = anyio.current_time()
        await client.send(type="chat", id="c1", content="hello faulty world")
        error, _ = await client.until("error")
        assert anyio.current_time() - started < TIMEOUT * 3 + 1
        assert error["id"] == "c1"
        assert error["code"] == code
        fake.script("recovered")
        await client.send(type="chat", id="c2", content="again")
        done, deltas = await client.until("done")
    assert "".join(d["text"] for d in deltas) == "recovered"
    assert done["turn"] == 2
    await wait_archived(server, "hello faulty world")


async def test_unknown_model_is_llm_error(tmp_path: Path, fake: FakeOllama) -> None:
    settings = settings_for(tmp_path, fake.url, chat_model="no-such-model")
    async with serve(make_app(settings)) as server, Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="chat", id="c1", content="hi")
        error, _ = await client.until("error")
    assert error["code"] == "llm_error"
    assert "no-such-model" in error["message"]


async def test_ollama_down_gives_llm_unavailable_but_turns_and_context_work(
    tmp_path: Path,
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with serve(make_app(settings_for(tmp_path, dead))) as server:
        async with Client.connect(server, "s1") as client:
            await client.receive()
            await client.send(type="chat", id="c1", content="is anyone there")
            error, _ = await client.until("error")
            await client.send(type="turn", id="t1", user="tea please", assistant="here")
            ack, _ = await client.until("ack")
            await client.send(type="context", id="q", query="tea", format="conversation")
            block = await client.receive()
        await wait_archived(server, "is anyone there")
    assert error["code"] == "llm_unavailable"
    assert ack["turn"] == 2
    assert "tea please" in block["text"]


@pytest.mark.parametrize(
    "frame",
    [
        "not json",
        "[1, 2]",
        '{"type": "launch-missiles", "id": "x"}',
        '{"type": "chat", "id": "c1"}',
        '{"type": "chat", "id": 5, "content": "x"}',
        '{"type": "turn", "id": "t", "user": "u", "assistant": ["no"]}',
        '{"type": "context", "id": "q", "query": "x", "budget": "big"}',
        '{"type": "chat", "id": "", "content": "x"}',
        json.dumps({"type": "chat", "id": "x" * 200, "content": "x"}),
        json.dumps({"type": "chat", "id": "big", "content": "x" * 5000}),
    ],
    ids=[
        "not-json",
        "not-object",
        "unknown-type",
        "missing-field",
        "wrong-type",
        "wrong-nested-type",
        "wrong-budget",
        "empty-id",
        "long-id",
        "oversized",
    ],
)
async def test_bad_frame_gets_bad_request_socket_stays_open_nothing_stored(
    server: str, frame: str
) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.connection.send(frame)
        error = await client.receive()
        await client.send(type="ping")
        pong = await client.receive()
    assert error["type"] == "error"
    assert error["code"] == "bad_request"
    assert error["message"]
    assert pong == {"type": "pong"}
    assert await archived_texts(server) == []


async def test_binary_frame_gets_bad_request(server: str) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.connection.send(b"\x00\x01")
        error = await client.receive()
    assert error["code"] == "bad_request"


async def test_flood_beyond_the_mailbox_gets_overloaded_not_unbounded_queueing(
    tmp_path: Path, fake: FakeOllama
) -> None:
    settings = settings_for(tmp_path, fake.url, mailbox_size=4, rate_limit=1e6, rate_burst=1e6)
    fake.default_reply = Reply("slow " * 20, chunk_delay=0.05)
    async with serve(make_app(settings)) as server, Client.connect(server, "s1") as client:
        await client.receive()
        for i in range(30):
            await client.send(type="chat", id=f"c{i}", content="x")
        codes: dict[str, str] = {}
        with anyio.fail_after(30):
            while len(codes) < 30:
                frame = await client.receive()
                if frame["type"] in ("done", "error"):
                    codes[frame["id"]] = frame.get("code", "done")
    assert list(codes.values()).count("overloaded") >= 20
    assert list(codes.values()).count("done") >= 4


async def test_frames_beyond_the_rate_limit_are_refused(tmp_path: Path, fake: FakeOllama) -> None:
    settings = settings_for(tmp_path, fake.url, rate_limit=1.0, rate_burst=3.0)
    async with serve(make_app(settings)) as server, Client.connect(server, "s1") as client:
        await client.receive()
        for _ in range(5):
            await client.send(type="ping")
        frames = [await client.receive() for _ in range(5)]
    assert [f["type"] for f in frames].count("pong") == 3
    assert [f.get("code") for f in frames].count("rate_limited") == 2


async def test_acked_turn_survives_a_server_restart(tmp_path: Path, fake: FakeOllama) -> None:
    settings = settings_for(tmp_path, fake.url)
    async with serve(make_app(settings)) as server, Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="turn", id="t1", user="remember the blue door", assistant="ok")
        await client.until("ack")
    async with serve(make_app(settings)) as server:
        assert "remember the blue door" in await archived_texts(server)
        async with Client.connect(server, "s1") as client:
            ready = await client.receive()
            fake.script("hi")
            await client.send(type="chat", id="c1", content="what door?")
            await client.until("done")
    assert ready["resumed"] is True
    assert ready["turn_count"] == 1
    history = [m["content"] for m in chat_bodies(fake)[-1]["messages"][1:]]
    assert history == ["remember the blue door", "ok", "what door?"]


async def test_client_leaving_mid_stream_keeps_the_actor_and_archives_the_message(
    server: str, fake: FakeOllama
) -> None:
    fake.script(Reply("a b c d e f g h", chunk_delay=0.1))
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="chat", id="c1", content="tell me a long story")
        await client.until("delta")
    await wait_archived(server, "tell me a long story")
    async with Client.connect(server, "s1") as client:
        ready = await client.receive()
    assert ready["resumed"] is True


async def test_a_failing_embedder_does_not_hold_back_done_and_the_reply_lands_later(
    tmp_path: Path,
) -> None:
    async with FakeOllama(models=["llama3.2", "nomic-embed-text"]) as fake:
        settings = settings_for(tmp_path, fake.url, embedder="ollama:nomic-embed-text")
        embedder = OllamaEmbedder(fake.url, "nomic-embed-text", timeout=settings.llm_timeout)
        llm = OllamaLlm(fake.url, timeout=settings.llm_timeout)
        app = create_app(
            settings, llm=llm, store=build_store(settings, embedder), embedder=embedder
        )
        try:
            async with serve(app) as server, Client.connect(server, "s1") as client:
                await client.receive()
                for _ in range(1000):  # the embedder is down: every write of the archive fails
                    fake.fault(path="/api/embed", status=500)
                fake.script("the answer streams anyway")
                started = anyio.current_time()
                await client.send(type="chat", id="c1", content="is the archive there")
                done, deltas = await client.until("done", timeout=settings.ack_timeout * 2)
                waited = anyio.current_time() - started
                fake.clear_faults()  # back up: the exchange, still queued, lands
                await wait_archived(server, "is the archive there", timeout=15)
        finally:
            await embedder.aclose()
    assert "".join(d["text"] for d in deltas) == "the answer streams anyway"
    assert done["turn"] == 1
    assert waited < settings.ack_timeout / 4
