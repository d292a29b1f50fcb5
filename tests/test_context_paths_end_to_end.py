"""Memory rules on both paths users take: the ``context`` request and the chat prompt.

Real uvicorn, the websockets client, LanceDB in a temporary directory and the real
Ollama client talking to the fake. Each rule is checked on both paths, so removing
it from either one fails a test.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any, NoReturn

import anyio
import httpx
import pytest

from actors.errors import ArchiveUnavailable
from memory.hashing import HashEmbedder
from memory.tokens import estimate_tokens
from server.adapters.ollama import OllamaLlm
from server.app import create_app
from server.main import build_store
from testing.fake_ollama import FakeOllama
from tests.harness import Client, chat_bodies, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

NDJSON = "application/x-ndjson"
#: Enough facts that a search side's 50 candidates leave some out.
_THINGS = (
    "anchors bagels cactus dahlias easels fiddles geckos hammocks igloos jigsaws kayaks "
    "lanterns mangoes nutmeg oboes parrots quilts rafts saddles tulips ukuleles vases "
    "walnuts yachts zithers acorns banjos canoes donkeys emeralds ferns gongs harps "
    "ivy jackets kettles lemons marbles nickels olives pianos quartz ribbons sandals "
    "teapots umbrellas violins wagons yarn zebras almonds barrels cherries drums "
    "engines feathers goblets helmets"
).split()


def _distinct(contents: Iterable[str], most: float = 0.9) -> list[str]:
    """``contents`` without those the hash embedder would take for near-duplicates."""
    embedder, kept, vectors = HashEmbedder(), list[str](), list[list[float]]()
    for content in contents:
        vector = embedder.embed_one(content)
        if all(sum(a * b for a, b in zip(vector, v, strict=True)) < most for v in vectors):
            kept.append(content)
            vectors.append(vector)
    return kept


FILLER = _distinct(
    f"User keeps {a} and {b}"
    for shift in (7, 13)
    for a, b in zip(_THINGS, _THINGS[shift:], strict=False)
)[:60]
assert len(FILLER) == 60


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, fake.url))) as address:
        yield address


async def _import(server: str, facts: Iterable[tuple[str, str]]) -> None:
    lines = [
        {"kind": "fact", "id": f"f{n}", "content": content, "category": category}
        | {"confidence": 0.8}
        for n, (content, category) in enumerate(facts)
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    async with httpx.AsyncClient(base_url=f"http://{server}", timeout=60) as http:
        response = await http.post("/memory/import", content=body, headers={"content-type": NDJSON})
    assert response.json()["imported"] == len(lines), response.text


async def _facts(server: str) -> dict[str, dict[str, Any]]:
    async with httpx.AsyncClient(base_url=f"http://{server}") as http:
        listed = await http.get("/memory/long-term", params={"kind": "facts", "limit": 200})
    return {f["content"]: f for f in listed.json()["items"]}


async def _memory(
    server: str,
    fake: FakeOllama,
    path: str,
    query: str,
    *,
    session: str = "s1",
    topic: str | None = None,
) -> str:
    """What memory ``path`` ("context" or "chat") gives for ``query``: the block's text, or
    the system prompt the model received."""
    async with Client.connect(server, session) as client:
        await client.receive()
        if topic is not None:
            await client.send(type="set", topic=topic)
        if path == "context":
            await client.send(type="context", id="q", query=query, format="about-user")
            block, _ = await client.until("context")
            text: str = block["text"]
            return text
        fake.script("Sure.")
        await client.send(type="chat", id="c", content=query)
        await client.until("done")
    system: str = chat_bodies(fake)[-1]["messages"][0]["content"]
    return system


@pytest.mark.parametrize("path", ["context", "chat"])
@pytest.mark.parametrize(
    ("query", "shown"),
    [("Where do I live?", True), ("Explain closures in Python", False)],
    ids=["personal", "impersonal"],
)
async def test_identity_facts_are_shown_only_for_personal_queries_on_both_paths(
    server: str, fake: FakeOllama, path: str, query: str, shown: bool
) -> None:
    # seed 004: project facts always; identity only for pronouns or places.
    await _import(
        server,
        [("User is called Ada", "identity"), ("User is building a Python compiler", "project")],
    )
    text = await _memory(server, fake, path, query)
    assert "- User is building a Python compiler" in text
    assert ("- User is called Ada" in text) is shown


@pytest.mark.parametrize("path", ["context", "chat"])
async def test_facts_shown_on_either_path_count_as_accessed(
    server: str, fake: FakeOllama, path: str
) -> None:
    # seed 001: last_accessed = now and access_count + 1 for what the model is given.
    await _import(server, [("User likes green tea", "preference"), ("User owns a boat", "project")])
    for session in ("s1", "s2"):
        await _memory(server, fake, path, "Do I like green tea?", session=session)
    with anyio.move_on_after(5):  # access counts are written in batches by the keeper
        while (await _facts(server))["User likes green tea"]["access_count"] < 2:
            await anyio.sleep(0.05)
    with_tea = (await _facts(server))["User likes green tea"]
    assert with_tea["access_count"] == 2
    assert with_tea["last_accessed"] is not None


@pytest.mark.parametrize("path", ["context", "chat"])
async def test_the_current_topic_joins_the_query_and_finds_what_the_message_alone_misses(
    server: str, fake: FakeOllama, path: str
) -> None:
    # seed 001: the topic's keywords are added to the query. The message alone leaves the
    # chess fact out of both searches' 50 candidates (last by the hash embedder, no word
    # in common); with the topic, it is recalled.
    await _import(server, [*((f, "knowledge") for f in FILLER), ("User plays chess", "goal")])
    asked = "What should I do about trains and rockets?"
    assert "User plays chess" not in await _memory(server, fake, path, asked)
    text = await _memory(server, fake, path, asked, session="s2", topic="chess")
    assert "- User plays chess" in text


@pytest.mark.parametrize("path", ["context", "chat"])
async def test_a_preference_message_recalls_preference_facts_no_search_side_found(
    tmp_path: Path, fake: FakeOllama, path: str
) -> None:
    # seed 001: a message expressing a preference recalls preference memories as
    # candidates. Found by neither search side, such a fact then competes on its score
    # (1.5x boost): chat shows 20 facts here, as a context request does by default.
    facts = [*((f, "knowledge") for f in FILLER), ("User loves spicy food", "preference")]

    async def recalled(data: str, message: str) -> str:
        # A fresh store each: what one message showed counts as accessed for the next.
        settings = settings_for(tmp_path / data, fake.url, retrieval_limit=20)
        async with serve(make_app(settings)) as server:
            await _import(server, facts)
            return await _memory(server, fake, path, message)

    # Neither message shares a word with it, and both rank it last of 61 by embedding.
    told = "Tell me about trains and rockets"
    assert "User loves spicy food" not in await recalled("a", told)
    text = await recalled("b", "I like trains and rockets")
    assert "- User loves spicy food" in text


async def test_the_prompt_sent_to_the_model_fits_its_context_with_the_rendered_memory(
    tmp_path: Path, fake: FakeOllama
) -> None:
    # seed 004: the context window never overflows. Compaction counts fact contents; the
    # rendered block's headings and bullets must fit too.
    settings = settings_for(
        tmp_path, fake.url, chat_context_tokens=2048, system_prompt="Be helpful."
    )
    facts = [(f"User builds compiler part {n}", "project") for n in range(5)]
    system_tokens = estimate_tokens("Be helpful.")
    message = "compiler " * ((2047 - system_tokens - 5 * 7) * 4 // 9)
    async with serve(make_app(settings)) as server:
        await _import(server, facts)
        fake.script("Sure.")
        async with Client.connect(server, "s1") as client:
            await client.receive()
            await client.send(type="chat", id="c", content=message)
            await client.until("done")
    sent = chat_bodies(fake)[-1]["messages"]
    assert "- User builds compiler part" in sent[0]["content"]  # memory was there to fit
    assert sum(estimate_tokens(m["content"]) for m in sent) <= 2048


async def test_a_failing_store_search_leaves_both_paths_working_without_memory_and_is_logged(
    tmp_path: Path,
    fake: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # seed 002: a storage error during context retrieval is logged and the session is not
    # blocked (fail-open).
    settings = settings_for(tmp_path, fake.url)
    embedder = HashEmbedder()
    store = build_store(settings, embedder)
    app = create_app(
        settings,
        llm=OllamaLlm(settings.llm_url, timeout=settings.llm_timeout),
        store=store,
        embedder=embedder,
    )

    async def unavailable(*args: object, **kwargs: object) -> NoReturn:
        raise ArchiveUnavailable("disk gone")

    async with serve(app) as server:
        await _import(server, [("User likes green tea", "preference")])
        assert "green tea" in await _memory(server, fake, "context", "green tea?")
        # The store's searches fail from here on (LanceDB errors arrive as this one).
        monkeypatch.setattr(store.facts, "search_facts", unavailable)
        monkeypatch.setattr(store, "search_messages", unavailable)
        fake.script("Tea is nice.")
        async with Client.connect(server, "s2") as client:
            await client.receive()
            await client.send(type="context", id="q", query="green tea?", format="about-user")
            block = await client.receive()
            await client.send(type="chat", id="c", content="green tea?")
            done, deltas = await client.until("done")
    empty = {"type": "context", "id": "q", "text": "", "tokens": 0, "memory_ids": []}
    assert block == empty  # nothing matched: no budget would do, none named
    assert "".join(d["text"] for d in deltas) == "Tea is nice."
    assert done["id"] == "c"
    assert "green tea" not in chat_bodies(fake)[-1]["messages"][0]["content"]
    warnings = [r.getMessage() for r in caplog.records if r.name == "mnemo.context"]
    assert any("degraded to empty" in w for w in warnings)
    assert any("no facts for chat" in w for w in warnings)
