"""Hostile input at the edges: huge integers, deep nesting, names with a trailing newline,
refused frames answered with their id, and a writer that refuses one request's rows
without stopping for everyone else's."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest
from websockets.exceptions import InvalidStatus

from actors.errors import ArchiveUnavailable, Rejected
from actors.writer import ArchiveWriter
from memory.hashing import HashEmbedder
from memory.json_bounds import INT_MAX, MAX_DEPTH
from schemas.records import ArchivedMessage
from server.adapters.lance_store import LanceStore
from testing.fake_ollama import FakeOllama
from tests import harness
from tests.harness import Client, make_app, serve, settings_for
from tests.hostile import nested

pytestmark = pytest.mark.anyio

KEYS = {"key-eve": "eve", "key-bob": "bob"}
NDJSON = "application/x-ndjson"


def deep_json(depth: int) -> str:
    """``nested(depth)`` as JSON text, without recursing."""
    return "[" * depth + "1" + "]" * depth


def deep_frame(levels: int) -> str:
    """A ``turn`` frame whose JSON nests ``levels`` deep in all (its object is level 1)."""
    head = '{"type": "turn", "id": "deep", "user": "u", "assistant": "a", "meta": {"x": '
    return head + deep_json(levels - 2) + "}}"


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    settings = settings_for(tmp_path, fake.url, api_keys=KEYS, max_frame_bytes=4096)
    async with serve(make_app(settings)) as address:
        yield address


def http(server: str, key: str = "key-eve") -> httpx.AsyncClient:
    return harness.http(server, key, timeout=30)


# -- over the WebSocket ---------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "problem"),
    [
        (
            {"type": "turn", "id": "t1", "user": "u", "assistant": "a", "meta": {"n": 2**64}},
            "out of range",
        ),
        ({"type": "chat", "id": "t1", "content": "hi", "meta": {"n": -(2**70)}}, "out of range"),
        ({"type": "set", "id": "t1", "variables": {"n": 10**30}}, "out of range"),
        ({"type": "context", "id": "t1", "query": "q", "budget": 2**80}, "out of range"),
        (
            {"type": "turn", "id": "t1", "user": "u", "assistant": "a", "meta": {"x": nested(40)}},
            "nested",
        ),
    ],
    ids=["turn-meta-int", "chat-meta-int", "set-variable-int", "context-budget", "turn-deep"],
)
async def test_a_frame_beyond_the_bounds_is_refused_with_its_id_and_others_are_acked(
    server: str, frame: dict[str, Any], problem: str
) -> None:
    async with (
        Client.connect(server, "s1", token="key-eve") as eve,
        Client.connect(server, "s1", token="key-bob") as bob,
    ):
        await eve.receive()
        await bob.receive()
        await eve.send(**frame)
        error = await eve.receive()
        await bob.send(type="turn", id="b1", user="still here", assistant="yes")
        ack, _ = await bob.until("ack")
        await eve.send(type="turn", id="t2", user="and me", assistant="ok")
        eves, _ = await eve.until("ack")
    assert (error["type"], error["code"], error["id"]) == ("error", "bad_request", "t1")
    assert problem in error["message"]
    assert ack["turn"] == 1
    assert eves["id"] == "t2"


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 1000, 5000], ids=["33", "1000", "5000"])
async def test_deeply_nested_frames_get_bad_request_and_the_socket_stays_open(
    server: str, levels: int, caplog: pytest.LogCaptureFixture
) -> None:
    frame = deep_frame(levels)
    assert len(frame) < 4096 * 3
    async with Client.connect(server, "s1", token="key-eve") as client:
        await client.receive()
        await client.connection.send(frame[:4096] if len(frame) > 4096 else frame)
        error = await client.receive()
        await client.send(type="ping")
        pong = await client.receive()
    assert error["code"] == "bad_request"
    assert pong == {"type": "pong"}
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


async def test_eighty_frames_nested_20000_deep_each_get_an_error_with_their_id_at_once(
    server: str,
) -> None:
    nested = deep_json(20_000)
    frames = {
        f"d{n}": (
            f'{{"type": "chat", "id": "d{n}", "content": "x", "meta": {nested}}}'
            if n % 2
            else f'{{"type": "turn", "meta": {{"deep": {nested}}}, "user": "u", "id": "d{n}"}}'
        )
        for n in range(80)
    }
    async with Client.connect(server, "s1", token="key-eve") as client:
        await client.receive()
        for frame in frames.values():
            await client.connection.send(frame)
        answers = [await client.receive(timeout=10) for _ in frames]
        with anyio.fail_after(20):
            while True:  # the socket stays open; the user's budget fills up again
                await client.send(type="ping")
                if (await client.receive())["type"] == "pong":
                    break
                await anyio.sleep(0.5)
    assert {a["id"] for a in answers} == set(frames)
    assert {a["type"] for a in answers} == {"error"}
    assert {a["code"] for a in answers} <= {"bad_request", "rate_limited"}


async def test_a_frame_at_the_nesting_bound_is_taken(server: str) -> None:
    async with Client.connect(server, "s1", token="key-eve") as client:
        await client.receive()
        await client.connection.send(deep_frame(MAX_DEPTH))
        ack, _ = await client.until("ack")
    assert ack["id"] == "deep"


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ('{"type": "chat", "id": "c9"}', "bad_request"),
        ('{"type": "chat", "id": "c9", "content": 5}', "bad_request"),
        ('{"type": "launch", "id": "c9"}', "bad_request"),
        (json.dumps({"type": "chat", "id": "c9", "content": "x" * 5000}), "bad_request"),
        (b'{"type": "ping", "id": "c9"}', "bad_request"),
    ],
    ids=["missing-field", "wrong-type", "unknown-type", "oversized", "binary"],
)
async def test_refused_frames_answer_with_the_id_they_carried(
    server: str, frame: str | bytes, code: str
) -> None:
    async with Client.connect(server, "s1", token="key-eve") as client:
        await client.receive()
        await client.connection.send(frame)
        error = await client.receive()
    assert (error["type"], error["code"], error["id"]) == ("error", code, "c9")


async def test_rate_limited_frames_answer_with_their_id(tmp_path: Path, fake: FakeOllama) -> None:
    settings = settings_for(tmp_path, fake.url, rate_limit=1.0, rate_burst=1.0)
    async with serve(make_app(settings)) as server, Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="ping")
        await client.send(type="context", id="q2", query="tea")
        pong, refused = await client.receive(), await client.receive()
    assert pong == {"type": "pong"}
    assert (refused["code"], refused["id"]) == ("rate_limited", "q2")


async def test_set_beyond_the_variable_bounds_is_refused_and_changes_nothing(server: str) -> None:
    async with Client.connect(server, "s1", token="key-eve") as client:
        await client.receive()
        await client.send(type="set", id="v1", variables={"keep": "me"})
        await client.send(type="set", id="v2", variables={f"k{n}": n for n in range(100)})
        error = await client.receive()
        await client.send(type="ping")
        await client.receive()
    async with http(server) as rest:
        working = (await rest.get("/memory/working/s1")).json()
    assert (error["code"], error["id"]) == ("bad_request", "v2")
    assert working["context_variables"] == {"keep": "me"}


@pytest.mark.parametrize(
    "path",
    ["/ws/abc%0A", "/ws/abc%0D", "/ws/abc?app=global%0A", "/ws/abc?app=a%00"],
    ids=["session-newline", "session-return", "app-newline", "app-nul"],
)
async def test_names_must_match_exactly_at_the_handshake(server: str, path: str) -> None:
    from websockets.asyncio.client import connect

    sep = "&" if "?" in path else "?"
    with pytest.raises(InvalidStatus) as refused:
        async with connect(f"ws://{server}{path}{sep}token=key-eve"):
            pass
    assert refused.value.response.status_code == 400


# -- over REST ------------------------------------------------------------------


async def test_rest_names_must_match_exactly(server: str) -> None:
    async with http(server) as client:
        created = await client.post(
            "/memory/long-term", json={"content": "I like tea", "scope": "global\n"}
        )
        working = await client.get("/memory/working/s1%0A")
        search = await client.get("/memory/search", params={"q": "tea", "scope": "global\n"})
        fact = await client.get("/memory/long-term/fact_0000000a%0A")
    assert created.status_code == 400
    assert working.status_code == 404
    assert search.status_code == 400
    assert fact.status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        '{"content": "x", "pinned": ' + deep_json(3000) + "}",
        '{"content": "x", "extra": ' + deep_json(3000) + "}",
        json.dumps({"content": "x", "confidence": 10**30}),
        "[" * 100_000,
    ],
    ids=["deep-field", "deep-unknown-field", "huge-int", "unclosed"],
)
async def test_hostile_rest_bodies_get_400(server: str, body: str) -> None:
    async with http(server) as client:
        created = await client.post(
            "/memory/long-term", content=body, headers={"content-type": "application/json"}
        )
        patched = await client.patch(
            "/memory/long-term/fact_00000000",
            content=body,
            headers={"content-type": "application/json"},
        )
    assert created.status_code == 400
    assert created.json()["error"]["code"] == "bad_request"
    assert patched.status_code in (400, 404)


async def test_an_oversized_rest_body_is_refused_without_reading_it_whole(server: str) -> None:
    async def body() -> AsyncIterator[bytes]:
        for _ in range(64):
            yield b" " * 65536

    async with http(server) as client:
        response = await client.post(
            "/memory/long-term", content=body(), headers={"content-type": "application/json"}
        )
    assert response.status_code == 400


async def test_import_lines_beyond_the_bounds_are_line_errors_and_the_rest_is_imported(
    server: str,
) -> None:
    def turn(ident: str, **fields: Any) -> str:
        line = {
            "kind": "turn",
            "id": ident,
            "session_id": "old",
            "speaker": "Ann",
            "role": "user",
            "text": f"line {ident}",
            "at": "2024-03-01T09:30:00Z",
        }
        return json.dumps(line | fields)

    lines = [
        turn("a1"),
        turn("a2", meta={"n": 2**64}),
        '{"kind": "turn", "meta": ' + "[" * 2000 + "]" * 2000 + "}",
        turn("a3", meta={"deep": nested(40)}),
        turn("a4\n"),
        turn("a5", session_id="old\n"),
        turn("a6", scope="global\n"),
        turn("a7", meta={"n": INT_MAX}),
    ]
    async with http(server) as client:
        response = await client.post(
            "/memory/import",
            content="\n".join(lines).encode() + b"\n",
            headers={"content-type": NDJSON},
        )
        listed = await client.get("/memory/long-term", params={"kind": "messages"})
    reply = response.json()
    assert response.status_code == 200
    assert reply["imported"] == 2
    assert [e["line"] for e in reply["errors"]] == [2, 3, 4, 5, 6, 7]
    assert sorted(item["text"] for item in listed.json()["items"]) == ["line a1", "line a7"]


# -- the writer refuses one request's rows, not everyone's ----------------------


def _message(n: int, user: str, meta: dict[str, Any]) -> ArchivedMessage:
    return ArchivedMessage(
        id=f"msg_{n:016x}",
        user_id=user,
        session_id="s1",
        scope="global",
        turn=n,
        role="user",
        speaker="user",
        text=f"text {n}",
        at=datetime(2026, 1, 1, tzinfo=UTC),
        meta=meta,
    )


@pytest.mark.parametrize("journal", [True, False], ids=["journaled", "table"])
async def test_rows_the_store_cannot_take_are_refused_alone(tmp_path: Path, journal: bool) -> None:
    embedder = HashEmbedder()
    store = LanceStore(
        tmp_path / "db", embedder=embedder, journal=tmp_path / "j" if journal else None
    )
    await store.open()
    writer = ArchiveWriter(store, embedder, linger=0.05, flush=store.flush_messages)
    outcomes: dict[str, str] = {}

    async def append(name: str, row: ArchivedMessage) -> None:
        try:
            await writer.append([row])
            outcomes[name] = "stored"
        except Rejected as exc:
            outcomes[name] = exc.code

    try:
        async with anyio.create_task_group() as tg:
            await tg.start(writer.run)
            async with anyio.create_task_group() as clients:  # one batch, thanks to linger
                clients.start_soon(append, "bad-int", _message(1, "eve", {"n": 2**70}))
                clients.start_soon(
                    append, "bad-turn", msgspec.structs.replace(_message(2, "eve", {}), turn=2**40)
                )
                clients.start_soon(append, "bob", _message(3, "bob", {"n": 1}))
            await append("later", _message(4, "bob", {}))
            await store.flush_messages()
            tg.cancel_scope.cancel()
        _, total = await store.list_messages("bob", limit=10, offset=0)
        eves = await store.list_messages("eve", limit=10, offset=0)
    finally:
        await store.aclose()
    # The table keeps meta as JSON text; the journal as msgpack, with 64-bit integers.
    assert outcomes == {
        "bad-int": "bad_request" if journal else "stored",
        "bad-turn": "bad_request",
        "bob": "stored",
        "later": "stored",
    }
    assert total == 2
    assert eves[1] == (0 if journal else 1)


class _BuggyStore(LanceStore):
    """Raises an error nobody expects for the rows of user ``eve``."""

    async def append_messages(self, rows: Any, vectors: Any) -> None:
        if any(r.user_id == "eve" for r in rows):
            raise ZeroDivisionError("a bug")
        await super().append_messages(rows, vectors)


async def test_a_writer_that_crashes_answers_that_request_and_takes_the_next_after_a_restart(
    tmp_path: Path,
) -> None:
    embedder = HashEmbedder()
    store = _BuggyStore(tmp_path / "db", embedder=embedder)
    await store.open()
    writer = ArchiveWriter(store, embedder, linger=0.0)
    try:
        async with anyio.create_task_group() as tg:

            async def supervised() -> None:
                with pytest.raises(ExceptionGroup) as crashed:  # from its task group
                    await writer.run()
                assert crashed.group_contains(ZeroDivisionError)
                await writer.run()  # what the app's supervisor does

            tg.start_soon(supervised)
            with pytest.raises(ArchiveUnavailable):
                await writer.append([_message(1, "eve", {})])
            await writer.append([_message(2, "bob", {})])
            tg.cancel_scope.cancel()
        total = (await store.list_messages("bob", limit=10, offset=0))[1]
    finally:
        await store.aclose()
    assert total == 1


async def test_texts_over_sixty_four_thousand_characters_are_refused_at_rest(
    server: str,
) -> None:
    long = "z" * 65537
    line = {
        "kind": "turn",
        "id": "big",
        "session_id": "old",
        "speaker": "Ann",
        "role": "user",
        "text": long,
        "at": "2024-03-01T09:30:00Z",
    }
    async with http(server) as client:
        created = await client.post("/memory/long-term", json={"content": long})
        imported = await client.post(
            "/memory/import",
            content=json.dumps(line).encode() + b"\n",
            headers={"content-type": NDJSON},
        )
    assert created.status_code == 400
    assert imported.json()["imported"] == 0
    assert imported.json()["errors"][0]["line"] == 1
