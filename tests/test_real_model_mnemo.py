"""mnemo with a real model: the real server (uvicorn, websockets, LanceDB in a temporary
directory) talks to SmolLM2-135M behind Ollama's API (testing/llama).

The model's words are its own, so the tests check mnemo's contracts around them: how a
reply streams and ends, that an extraction only adds to what the rule-based reader
finds and counts what it drops, that a note
is written at a session's end and that consolidation ends every episode one way or the
other.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from testing.downloads import SMOLLM2
from testing.real_model import serve_models
from tests.app_notes import session
from tests.harness import make_app, serve, settings_for

pytestmark = pytest.mark.anyio

MODEL = SMOLLM2.name
#: Every call ends by this many tokens (a Modelfile's ``PARAMETER num_predict``): enough
#: for a whole note, short enough that a model going on and on costs seconds, not minutes.
NUM_PREDICT = 400
KEY = "key-alice"
ADMIN = "key-admin"


@pytest.fixture(scope="module")
def llm_url() -> Iterator[str]:
    with serve_models(SMOLLM2, parameters={"num_predict": NUM_PREDICT}) as url:
        yield url


@pytest.fixture
async def server(tmp_path: Path, llm_url: str) -> AsyncIterator[str]:
    settings = settings_for(
        tmp_path,
        llm_url,
        chat_model=MODEL,
        extract_model=MODEL,
        llm_timeout=60.0,
        api_keys={KEY: "alice"},
        admin_keys=[ADMIN],
    )
    async with serve(make_app(settings)) as address:
        yield address


def rest(server: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=f"http://{server}", headers={"Authorization": f"Bearer {KEY}"}, timeout=120
    )


async def extraction_stats(server: str) -> dict[str, Any]:
    async with rest(server) as client:
        stats: dict[str, Any] = (await client.get("/healthz")).json()["extraction"]
    return stats


def calls(stats: dict[str, Any]) -> int:
    return sum(stats[k] for k in ("succeeded", "invalid", "failed", "by_rules"))


async def test_a_chat_streams_the_real_models_reply_then_done_with_its_usage(
    server: str,
) -> None:
    async with session(server, "s1") as client:
        await client.send(type="chat", id="c1", content="Hi! I'm Ada and I love green tea.")
        done, before = await client.until("done", timeout=120)
    deltas = [f for f in before if f["type"] == "delta"]
    assert deltas
    assert all(d["id"] == "c1" for d in deltas)
    assert "".join(d["text"] for d in deltas).strip()
    assert (done["id"], done["turn"]) == ("c1", 1)
    usage = done["usage"]
    assert usage["prompt_tokens"] > 20  # the system prompt and the message, as tokens
    assert 1 <= usage["completion_tokens"] <= NUM_PREDICT


async def test_the_real_models_extraction_only_adds_to_what_the_reader_finds(
    server: str,
) -> None:
    async with session(server, "s1") as client:
        await client.send(
            type="turn",
            id="t1",
            user="I live in Berlin, I work at Siemens and I'm allergic to peanuts.",
            assistant="Noted: Berlin, Siemens, and no peanuts.",
        )
        await client.until("ack", timeout=30)
        with anyio.fail_after(240):
            while calls(stats := await extraction_stats(server)) < 1:
                await anyio.sleep(0.5)
    # The model answered in time (none failed, no fallback), whole or cut at its cap.
    assert (stats["failed"], stats["by_rules"]) == (0, 0)
    async with rest(server) as http:
        facts = (await http.get("/memory/long-term", params={"kind": "facts"})).json()["items"]
        metrics = (await http.get("/metrics", headers={"Authorization": f"Bearer {ADMIN}"})).text
    # What the rule-based reader finds in the message stands, whatever the model said.
    values = {f["value"] for f in facts}
    assert {"Berlin", "Siemens", "peanuts"} <= values
    assert {f["extractor"] for f in facts} <= {"llm", "rules"}
    # Each fact of the model's that was dropped is counted, by reason, in /metrics too.
    for reason, count in stats["rejected"].items():
        assert f'mnemo_model_facts_rejected_total{{reason="{reason}"}} {float(count)}' in metrics


async def test_a_session_that_ends_leaves_a_note_written_by_the_real_model(
    server: str,
) -> None:
    async with session(server, "s1", app="calendar") as client:
        await client.send(
            type="turn",
            id="t1",
            user="Book the dentist for Tuesday at 3pm.",
            assistant="Done: dentist, Tuesday 3pm.",
        )
        await client.until("ack", timeout=30)
        await client.send(type="end")
        with anyio.fail_after(120):
            await client.connection.wait_closed()
    async with rest(server) as http:
        with anyio.fail_after(240):
            while not (notes := (await http.get("/apps/calendar/memories")).json()["memories"]):
                await anyio.sleep(0.5)
    [note] = notes
    assert note["content"].strip()
    assert note["sourceConversationId"] == "s1"
    assert 0 <= note["metadata"]["importance"] <= 10


async def test_consolidation_with_the_real_model_ends_each_episode_one_way_or_the_other(
    server: str,
) -> None:
    async with rest(server) as http:
        made: list[dict[str, Any]] = [
            (await http.post("/memory/episodes", json={"content": text, "scope": "kitchen"})).json()
            for text in ("The user asked for a vegan soup", "The user wanted an egg-free cake")
        ]
        report = (await http.post("/memory/consolidation")).json()
        episodes = {e["id"]: e for e in (await http.get("/memory/episodes")).json()["episodes"]}
    assert (report["episodes"], report["groups"], report["dry_run"]) == (2, 1, False)
    ended = [episodes[e["id"]] for e in made]
    if report["consolidated"] == 2:
        assert all(e["consolidated"] for e in ended)
    else:  # the model's answer was unusable: both wait for a retry, with the reason
        assert report["consolidated"] == 0
        assert report["errors"]
        assert all(not e["consolidated"] and e["retry_count"] == 1 for e in ended)
        assert all(e["last_error"] for e in ended)
