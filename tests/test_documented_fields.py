"""Every field the server sends is documented: the frames of real sessions against the
"Server → client" table of docs/protocol.md, the answers of real REST requests against
the rows of docs/rest.md's table and observability.md's, facts and turns against the
records docs/rest.md shows. An undocumented field fails here."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from testing.fake_ollama import FakeOllama
from tests.docs_examples import EXTRACTION, REPLY, ROOT, blocks_of, loads_shown
from tests.harness import Client, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

#: Objects whose keys are the client's (``meta``, context variables) or an event's own
#: (``data``, described per kind in docs/observability.md's table, not field by field).
_FREE = ("meta", "context_variables", "data")
_NAME = re.compile(r'[`"]([a-z_A-Z]+)\??[`"]')


def documented_row(document: str, first_cell: str, section: str = "") -> set[str]:
    """The names (in backticks or quotes) of the table row whose first cell starts so,
    the first one after the heading ``section``."""
    text = (ROOT / "docs" / document).read_text(encoding="utf-8")
    for line in text[text.index(section) :].splitlines():
        if line.startswith(f"| `{first_cell}"):
            return set(_NAME.findall(line.split(" | ", 1)[1]))
    raise AssertionError(f"docs/{document} has no row for {first_cell}")


def records() -> dict[str, set[str]]:
    """The keys of the records docs/rest.md shows: a fact, an archived turn (REST), and
    the lines of an import (and export)."""
    shown: dict[str, set[str]] = {}
    for block in blocks_of(ROOT / "docs" / "rest.md"):
        if block.marker and block.marker[1].startswith("shape "):
            shown[block.marker[1].split()[1]] = set(loads_shown(block.body))
        if block.marker and block.marker[1].startswith("file "):
            for line in block.body.splitlines():
                record = json.loads(line)
                shown[f"{record['kind']} line"] = set(record)
    return shown


def undocumented(
    value: Any, names: set[str], shown: dict[str, set[str]], line: bool = False
) -> set[str]:
    """The keys in ``value`` (at any depth) that neither ``names`` nor, for a fact or a
    turn, its shown record list."""
    if isinstance(value, list):
        return set().union(*(undocumented(v, names, shown, line) for v in value))
    if not isinstance(value, dict):
        return set()
    record = shown.get(f"{value.get('kind')} line" if line else str(value.get("kind")))
    allowed = names | (record or set())
    found = {k for k in value if k not in allowed}
    for key, inner in value.items():
        if key not in _FREE:
            found |= undocumented(inner, names, shown, line)
    return found


@pytest.fixture
async def address(tmp_path: Path) -> AsyncIterator[str]:
    async with FakeOllama(models=["llama3.2"], json_default=EXTRACTION) as fake:
        fake.default_reply = REPLY
        async with serve(make_app(settings_for(tmp_path / "data", fake.url))) as address:
            yield address


async def frames_of_a_session(address: str) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    steps = [
        ({"type": "remember", "id": "r1", "content": "I am allergic to peanuts"}, "memory"),
        ({"type": "chat", "id": "c1", "content": "I love green tea"}, "done"),
        ({"type": "turn", "id": "t1", "user": "I live in Lyon", "assistant": "Nice"}, "ack"),
        ({"type": "context", "id": "q1", "query": "what do I drink?"}, "context"),
        ({"type": "chat", "id": "c2"}, "error"),
        ({"type": "ping"}, "pong"),
    ]
    async with Client.connect(address, "s1") as ws:
        frames.append(await ws.receive())
        for frame, answer in steps:
            await ws.send(**frame)
            last, before = await ws.until(answer)
            frames += [*before, last]
    return frames


async def test_every_field_of_every_frame_the_server_sends_is_in_the_protocol_table(
    address: str,
) -> None:
    frames = await frames_of_a_session(address)
    shown = records()
    seen = {frame["type"] for frame in frames}
    assert seen >= {"ready", "delta", "done", "ack", "context", "memory", "error", "pong"}
    for frame in frames:
        names = documented_row("protocol.md", f"{frame['type']}` |", "## Server → client") | {
            "type"
        }
        assert not undocumented(frame, names, shown), (frame["type"], frame)


async def test_every_field_of_every_rest_answer_is_in_the_rest_docs(address: str) -> None:
    await frames_of_a_session(address)
    shown = records()
    async with httpx.AsyncClient(base_url=f"http://{address}") as client:
        listed = (await client.get("/memory/long-term")).json()
        one_id = listed["items"][0]["id"]
        answers = {
            "GET /healthz": (await client.get("/healthz")).json(),
            "GET /memory/long-term?": listed,
            "GET /memory/long-term/{id}": (await client.get(f"/memory/long-term/{one_id}")).json(),
            "POST /memory/long-term": (
                await client.post("/memory/long-term", json={"content": "I like chess"})
            ).json(),
            "GET /memory/search": (await client.get("/memory/search", params={"q": "tea"})).json(),
            "GET /memory/working/{session_id}": (await client.get("/memory/working/s1")).json(),
            "GET /apps/{app_id}/memories": (await client.get("/apps/a/memories")).json(),
            "GET /memory/categories": (await client.get("/memory/categories")).json(),
            "POST /memory/import": (
                await client.post(
                    "/memory/import",
                    content=b'{"kind": "fact"}\n',
                    headers={"Content-Type": "application/x-ndjson"},
                )
            ).json(),
        }
        fact_id = answers["POST /memory/long-term"]["added"][0]["id"]
        patch = {"pinned": True}
        answers["PATCH /memory/long-term/{id}"] = (
            await client.patch(f"/memory/long-term/{fact_id}", json=patch)
        ).json()
        answers["DELETE /memory/long-term/{id}"] = (
            await client.delete(f"/memory/long-term/{fact_id}")
        ).json()
        missing = (await client.get("/memory/long-term/fact_00000000")).json()
        export = [
            json.loads(line) for line in (await client.get("/memory/export")).text.splitlines()
        ]
        actors = (await client.get("/actors")).json()
        actor = (await client.get("/actors/s1")).json()
        answers["DELETE /memory/long-term` |"] = (await client.delete("/memory/long-term")).json()
    assert listed["items"], "facts and turns to look at"
    for row, answer in answers.items():
        assert not undocumented(answer, documented_row("rest.md", row), shown), (row, answer)
    assert {line["kind"] for line in export} == {"fact", "turn"}
    assert not undocumented(export, set(), shown, line=True), export
    errors = set(_NAME.findall((ROOT / "docs" / "rest.md").read_text().split("\n\n")[1]))
    assert not undocumented(missing, errors, shown), missing
    watching = set(_NAME.findall((ROOT / "docs" / "observability.md").read_text()))
    assert actors["items"]
    for item in [*actors["items"], actor]:
        assert not undocumented(item, watching, shown), item
