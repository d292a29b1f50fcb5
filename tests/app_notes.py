"""Per-app notes end to end: a fake model that answers by the structured call's system
prompt, and a conversation in an app's session that waits for its background work."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx
from websockets.asyncio.client import connect

from testing.fake_ollama import FakeOllama, Reply
from tests import harness
from tests.harness import EMPTY_EXTRACTION, Client

__all__ = [
    "DECISION",
    "EXTRACTION",
    "NOTE",
    "PROFILE",
    "USER_SAID",
    "Answer",
    "NoteModel",
    "calls",
    "contents",
    "converse",
    "default_note",
    "http",
    "notes",
    "refuse_decision",
    "session",
    "wait_calls",
]


USER_SAID = re.compile(r"user: <episode_content>(.*?)</episode_content>")
EXTRACTION = "extract durable facts"
NOTE = "memory creation assistant"
DECISION = "memory management assistant"
PROFILE = "short profile"


Answer = str | dict[str, Any] | Reply


class NoteModel:
    """The fake's responder: picks the answer by the structured call's system prompt.

    A note is ``Note: <first thing the user said>``; ``note`` and ``decision``
    may be replaced per test (each gets the call's user prompt).
    """

    def __init__(self) -> None:
        self.note: Callable[[str], Answer] = default_note
        self.decision: Callable[[str], Answer] = refuse_decision

    def __call__(self, path: str, body: dict[str, Any]) -> Answer:
        if "format" not in body:
            return "Sure."
        system, prompt = body["messages"][0]["content"], body["messages"][-1]["content"]
        if EXTRACTION in system:
            return EMPTY_EXTRACTION
        if NOTE in system:
            return self.note(prompt)
        if DECISION in system:
            return self.decision(prompt)
        if PROFILE in system:
            return {"recent": "talked about plans"}
        return "an unexpected structured call"


def default_note(prompt: str) -> Answer:
    return {"content": f"Note: {USER_SAID.findall(prompt)[0]}"}


def refuse_decision(prompt: str) -> Answer:
    """Tests that expect a decision set one; an invalid answer here means FIFO."""
    return "no decision was scripted"


def http(server: str, key: str = "key-alice") -> httpx.AsyncClient:
    return harness.http(server, key)


def calls(fake: FakeOllama, marker: str) -> list[dict[str, Any]]:
    """Bodies of the structured calls whose system prompt contains ``marker``."""
    return [
        body
        for _, path, body in fake.requests
        if path == "/api/chat" and "format" in body and marker in body["messages"][0]["content"]
    ]


async def wait_calls(fake: FakeOllama, marker: str, count: int) -> None:
    with anyio.fail_after(10):
        while len(calls(fake, marker)) < count:
            await anyio.sleep(0.01)


@asynccontextmanager
async def session(
    server: str, session_id: str, *, app: str | None = None, key: str = "key-alice"
) -> AsyncIterator[Client]:
    """A protocol v1 client of ``/ws/{session_id}?app=...`` (``Client.connect`` has no app)."""
    query = urlencode({"token": key} | ({"app": app} if app else {}))
    async with connect(f"ws://{server}/ws/{session_id}?{query}") as connection:
        client = Client(connection)
        assert (await client.receive())["type"] == "ready"
        yield client


async def converse(
    server: str,
    fake: FakeOllama,
    session_id: str,
    *,
    app: str | None = "calendar",
    user: str | None = None,
    key: str = "key-alice",
    before_end: Callable[[], None] | None = None,
) -> None:
    """One turn in a session, then ``end``; returns once the session's background work
    (note, compaction, profile) is over."""
    extractions, profiles = len(calls(fake, EXTRACTION)), len(calls(fake, PROFILE))
    async with session(server, session_id, app=app, key=key) as client:
        await client.send(
            type="turn", id="t1", user=user or f"plans of {session_id}", assistant="Noted."
        )
        await client.until("ack")
        await wait_calls(fake, EXTRACTION, extractions + 1)
        if before_end is not None:
            before_end()
        await client.send(type="end")
        with anyio.fail_after(10):
            await client.connection.wait_closed()
        assert client.connection.close_code == 1000
    await wait_calls(fake, PROFILE, profiles + 1)


async def notes(server: str, app: str = "calendar", key: str = "key-alice") -> list[Any]:
    async with http(server, key) as client:
        response = await client.get(f"/apps/{app}/memories")
    assert response.status_code == 200
    memories: list[Any] = response.json()["memories"]
    return memories


def contents(listed: list[dict[str, Any]]) -> set[str]:
    return {note["content"] for note in listed}
