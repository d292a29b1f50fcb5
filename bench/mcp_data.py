"""``bench.mcp``'s data and client: facts and questions in everyday words, seeding a data
directory through the server's own store adapter, and timed MCP tool calls."""

from __future__ import annotations

import random
import time
import urllib.request
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx2
from mcp.client import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.common import ADMIN_KEY, histograms
from memory.facts import Stored
from schemas.records import Fact
from server.config import load_settings
from server.main import build_embedder, build_store

__all__ = [
    "SCOPES",
    "fact_text",
    "mcp_session",
    "prompt",
    "question",
    "seed",
    "server_tool_ms",
    "timed_call",
]

SCOPES = ("global", "work", "home")
_BATCH = 2000
_NAME = (
    "Ana Bruno Chen Dara Emil Fatima Goran Hana Ivo Jia Kofi Lena Mira Nils Omar Pia Raj "
    "Sofia Tomas Yuki Zofia Liam Elena Marco"
).split()
_RELATION = "sister brother mother father cousin friend colleague neighbour boss partner".split()
_CITY = (
    "Lisbon Porto Madrid Paris Berlin Rome Vienna Prague Oslo Dublin Boston Tokyo Seoul "
    "Lima Cairo Nairobi Toronto Denver Krakow Hanoi"
).split()
_THING = [
    "jazz records", "mountain trails", "sourdough bread", "vintage cameras", "chess openings",
    "ceramic bowls", "sci-fi novels", "board games", "green tea", "orchids", "old maps",
    "vinyl players", "kayaking", "spicy ramen", "indie films", "podcasts about history",
    "watercolor painting", "crossword puzzles", "electric guitars", "street photography",
]  # fmt: skip
_FOOD = "peanuts shellfish gluten lactose strawberries eggs soy sesame kiwi mustard".split()
_MEAL = "breakfast lunch dinner".split()
_DISH = [
    "oatmeal with berries", "a tuna salad", "lentil soup", "grilled fish", "pasta with pesto",
    "rice and beans", "a cheese omelette", "chicken curry", "miso soup", "avocado toast",
]  # fmt: skip
_PET = [("dog", "Rex"), ("cat", "Mochi"), ("parrot", "Kiwi"), ("rabbit", "Bun"), ("cat", "Luna")]
_ORG = "Acme Globex Initech Hooli Umbrella Contoso Northwind Zenith Apex Harbor".split()
_JOB = "nurse teacher architect chef lawyer pilot designer engineer plumber dentist".split()
_SKILL = "Spanish Japanese piano pottery Rust salsa dancing sailing statistics".split()
_DAY = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
_ACTIVITY = [
    "go running", "swim at the lake", "play tennis", "visit my parents", "bake bread",
    "go to the farmers market", "do yoga", "cycle along the river", "call my grandmother",
]  # fmt: skip
_PROJECT = [
    "the billing migration", "a mobile app", "the quarterly report", "a data pipeline",
    "the website redesign", "an onboarding guide", "the search service", "a budget plan",
]  # fmt: skip
_ITEM = "laptop bicycle camera sofa coffee machine tent guitar phone".split()


def fact_text(rng: random.Random) -> tuple[str, str, str, str]:
    """(subject, predicate, category, content) of one everyday fact about the user."""
    name, rel, city = rng.choice(_NAME), rng.choice(_RELATION), rng.choice(_CITY)
    year, day, org = rng.randint(2005, 2025), rng.choice(_DAY), rng.choice(_ORG)
    pet, pet_name = rng.choice(_PET)
    options = [
        ("user", "likes", "preference", f"I really like {rng.choice(_THING)}"),
        ("user", "dislikes", "preference", f"I can't stand {rng.choice(_THING)}"),
        ("user", "visited", "knowledge", f"I visited {city} in {year} with my {rel} {name}"),
        (name, "lives_in", "identity", f"My {rel} {name} lives in {city}"),
        (name, "occupation", "project", f"{name}, my {rel}, works as a {rng.choice(_JOB)}"),
        (name, "allergic_to", "identity", f"{name} is allergic to {rng.choice(_FOOD)}"),
        ("user", "has_pet", "identity", f"I have a {pet} called {pet_name}"),
        ("user", "works_on", "project", f"I'm working on {rng.choice(_PROJECT)} for {org}"),
        ("user", "learning", "goal", f"I'm learning {rng.choice(_SKILL)} on {day}s"),
        ("user", "habit", "behavior", f"Every {day} I {rng.choice(_ACTIVITY)}"),
        ("user", "eats", "behavior", f"I usually have {rng.choice(_DISH)} for {rng.choice(_MEAL)}"),
        ("user", "owns", "knowledge", f"I bought a {rng.choice(_ITEM)} from {org} in {year}"),
        ("user", "goal", "goal", f"I want to move to {city} before {year + 5}"),
    ]
    return rng.choice(options)


def question(rng: random.Random) -> str:
    """A question an agent would search memory with (seldom a stored fact's own words)."""
    name, rel, city = rng.choice(_NAME), rng.choice(_RELATION), rng.choice(_CITY)
    options = [
        f"where does my {rel} live",
        f"is {name} allergic to anything",
        f"when did I go to {city}",
        f"who is {name}",
        "what pets do I have",
        f"what am I working on for {rng.choice(_ORG)}",
        f"do I like {rng.choice(_THING)}",
        f"what do I usually eat for {rng.choice(_MEAL)}",
        "which languages or instruments am I learning",
        f"what do I do on {rng.choice(_DAY)}s",
        f"what did I buy from {rng.choice(_ORG)}",
        f"what does {name} do for a living",
        "where do I want to move",
        f"things I enjoy that relate to {rng.choice(_THING).split()[-1]}",
        f"{name} {city} trip",
    ]
    return rng.choice(options)


def prompt(rng: random.Random) -> str:
    """A user's message that an agent builds a memory context block for."""
    name, city = rng.choice(_NAME), rng.choice(_CITY)
    options = [
        f"Can you help me plan a long weekend in {city}?",
        f"I need a birthday gift idea for {name}, any thoughts?",
        f"What should I cook for {rng.choice(_MEAL)} tonight? Something quick please.",
        "Suggest a weekly routine that fits my habits and hobbies.",
        f"Write a short note to {name} about our plans for {rng.choice(_DAY)}.",
        f"I have a meeting at {rng.choice(_ORG)} tomorrow, what should I prepare?",
        f"Recommend something to read or watch about {rng.choice(_THING)}.",
        f"Remind me what I told you about {rng.choice(_SKILL)} lessons.",
    ]
    return rng.choice(options)


def _fact(rng: random.Random, user: str, n: int, now: datetime) -> Fact:
    """Stated and confirmed in the last weeks (one every 5 minutes, newest last): recent
    enough that decay keeps them above ``memory_search``'s ``min_confidence``."""
    subject, predicate, category, content = fact_text(rng)
    at = now - timedelta(minutes=5 * n)
    return Fact(
        id=f"fact_{n:08x}",
        user_id=user,
        content=content,
        category=category,
        confidence=0.9,
        created_at=at,
        updated_at=at,
        last_seen=at,
        last_confirmed_at=at,
        scope=SCOPES[n % len(SCOPES)],
        subject=subject,
        predicate=predicate,
        source="user_stated",
        extractor="import",
    )


async def seed(data_dir: str, env: Mapping[str, str], users: Mapping[str, int]) -> float:
    """Write ``users[u]`` active facts for each user ``u`` straight into the data directory
    through the server's own store adapter (``add_facts``, embedded by the server's own
    embedder, in batches), before any server opens it; seconds taken."""
    settings = load_settings({**env, "MNEMO_DATA_DIR": data_dir})
    embedder = build_embedder(settings)
    store = build_store(settings, embedder)
    rng = random.Random(21)
    rows = [(user, n) for user, count in users.items() for n in range(count)]
    now = datetime.now(UTC)
    started = time.perf_counter()
    await store.open()
    try:
        for first in range(0, len(rows), _BATCH):
            made = [_fact(rng, user, n, now) for user, n in rows[first : first + _BATCH]]
            vectors = await embedder.embed([f.content for f in made])
            await store.facts.add_facts([Stored(f, v) for f, v in zip(made, vectors, strict=True)])
        await store.optimize(cleanup_older_than=0)
    finally:
        await store.aclose()
    return time.perf_counter() - started


@asynccontextmanager
async def mcp_session(address: str, key: str) -> AsyncIterator[ClientSession]:
    """An initialized MCP session over streamable HTTP with its own connection pool, as
    one agent would hold it; ended (``DELETE``) on leaving."""
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        streamable_http_client(f"http://{address}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def timed_call(
    session: ClientSession, tool: str, arguments: dict[str, Any]
) -> tuple[float, str | None]:
    """Milliseconds around ``call_tool`` as the client sees it, and the error (a tool
    error's text, or the exception's name), None when it succeeded."""
    started = time.perf_counter()
    try:
        result = await session.call_tool(tool, arguments)
    except Exception as exc:  # a broken session counts, it does not end the bench
        return (time.perf_counter() - started) * 1000, type(exc).__name__
    took = (time.perf_counter() - started) * 1000
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        return took, f"tool error: {text[:120]}"
    return took, None


def server_tool_ms(address: str) -> dict[str, dict[str, float]]:
    """``mnemo_mcp_tool_ms`` by tool: calls, mean (exact: sum over count) and the share of
    calls within each bucket bound."""
    request = urllib.request.Request(
        f"http://{address}/metrics", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    out = histograms(text, "mnemo_mcp_tool_ms", "tool")
    for row in out.values():
        calls = row["calls"] = row.pop("count", 0.0)
        row["sum_ms"] = row.pop("sum", 0.0)
        row["mean_ms"] = row["sum_ms"] / calls if calls else float("nan")
        for key in [k for k in row if k.startswith("le_")]:
            row[key] = round(row[key] / calls, 4) if calls else 0.0
    return out
