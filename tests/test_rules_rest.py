"""Seed 002's rules through the real server: REST, feedback, the sweep, and the memory-context."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx
import pytest
from websockets.asyncio.client import connect

from testing.fake_ollama import FakeOllama
from tests.harness import Client, http, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

KEYS = {"key-alice": "alice", "key-bob": "bob"}
RULE_ID = re.compile(r"^rule_[0-9a-f]{8}$")
RULES = "/memory/rules"


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    # The sweep every half second: inversion and decay are seen without waiting an hour.
    settings = settings_for(tmp_path, fake.url, api_keys=KEYS, sweep_interval=0.5)
    async with serve(make_app(settings)) as address:
        yield address


@pytest.fixture
async def alice(server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with http(server, "key-alice") as client:
        yield client


async def add_rule(client: httpx.AsyncClient, content: str, **fields: Any) -> dict[str, Any]:
    response = await client.post(RULES, json={"content": content, **fields})
    assert response.status_code == 201, response.text
    rule: dict[str, Any] = response.json()
    return rule


async def mark(client: httpx.AsyncClient, rule_id: str, how: str, **body: Any) -> dict[str, Any]:
    response = await client.post(f"{RULES}/{rule_id}/{how}", json=body or None)
    assert response.status_code == 200, response.text
    rule: dict[str, Any] = response.json()
    return rule


@asynccontextmanager
async def session(server: str, app: str | None = None) -> AsyncIterator[Client]:
    query = urlencode({"token": "key-alice"} | ({"app": app} if app else {}))
    async with connect(f"ws://{server}/ws/s1?{query}") as connection:
        client = Client(connection)
        assert (await client.receive())["type"] == "ready"
        yield client


async def memory_context(server: str, query: str, app: str | None = None) -> str:
    async with session(server, app) as client:
        await client.send(type="context", id="c1", query=query, format="memory-context")
        block, _ = await client.until("context")
    text: str = block["text"]
    return text


async def test_a_stored_rule_is_a_candidate_with_seed_002s_starting_values(
    alice: httpx.AsyncClient,
) -> None:
    rule = await add_rule(alice, "Answer in British English", tags=["style"])
    assert RULE_ID.match(rule["id"])
    assert rule["maturity"] == "candidate"
    assert (rule["confidence"], rule["decay_rate"], rule["effectiveness_score"]) == (
        0.5,
        0.01,
        0.0,
    )
    assert (rule["applied_count"], rule["success_count"], rule["harmful_count"]) == (0, 0, 0)
    assert (rule["scope"], rule["tags"]) == ("global", ["style"])
    assert rule["created_at"].endswith("Z")
    assert "user_id" not in rule
    assert "vector" not in rule
    listed = (await alice.get(RULES)).json()["rules"]
    assert [r["id"] for r in listed] == [rule["id"]]


async def test_getting_a_rule_counts_a_reference(alice: httpx.AsyncClient) -> None:
    rule = await add_rule(alice, "Use metric units")
    first = (await alice.get(f"{RULES}/{rule['id']}")).json()
    second = (await alice.get(f"{RULES}/{rule['id']}")).json()
    assert (first["reference_count"], second["reference_count"]) == (1, 2)
    assert second["last_referenced_at"] >= first["last_referenced_at"]


async def test_five_helpful_marks_establish_a_rule_and_each_is_recorded(
    alice: httpx.AsyncClient,
) -> None:
    rule = await add_rule(alice, "Show code before prose")
    for _ in range(4):
        marked = await mark(alice, rule["id"], "helpful")
    assert marked["maturity"] == "candidate"
    marked = await mark(alice, rule["id"], "helpful")
    assert (marked["maturity"], marked["effectiveness_score"]) == ("established", 1.0)
    assert marked["last_applied_at"] is not None
    harmed = await mark(alice, rule["id"], "harmful", reason="the user wanted prose")
    assert harmed["effectiveness_score"] == pytest.approx(5 / 9.01)
    assert harmed["maturity"] == "candidate"
    assert harmed["meta"]["harmful_reasons"] == ["the user wanted prose"]
    response = await alice.get(f"{RULES}/{rule['id']}/applications")
    applications = response.json()["applications"]
    assert [a["outcome"] for a in applications] == ["harmful"] + ["helpful"] * 5
    assert applications[0]["context"] == "the user wanted prose"
    assert {a["rule_id"] for a in applications} == {rule["id"]}


async def test_three_harms_flag_a_rule_and_the_sweep_inverts_it_into_an_anti_pattern(
    alice: httpx.AsyncClient, server: str
) -> None:
    rule = await add_rule(alice, "Suggest tabs for indentation")
    for reason in ("the team uses spaces", "linters fail", "diffs get noisy"):
        marked = await mark(alice, rule["id"], "harmful", reason=reason)
    assert marked["meta"]["needs_inversion"] is True
    with anyio.fail_after(10):
        while (current := (await alice.get(RULES)).json()["rules"][0])["maturity"] == "candidate":
            await anyio.sleep(0.1)
    assert current["maturity"] == "anti_pattern"
    assert current["content"] == (
        "ANTI-PATTERN: Do NOT Suggest tabs for indentation. This caused problems because: "
        "the team uses spaces; linters fail; diffs get noisy"
    )
    assert current["meta"]["original_content"] == "Suggest tabs for indentation"
    text = await memory_context(server, "how should I indent this file?")
    assert "- ANTI-PATTERN: Do NOT Suggest tabs" in text


async def test_the_memory_context_shows_active_rules_of_global_and_the_sessions_app(
    alice: httpx.AsyncClient, server: str
) -> None:
    await add_rule(alice, "Keep answers under five sentences")
    await add_rule(alice, "Write SQL keywords in capitals", scope="sql")
    await add_rule(alice, "Cite the calendar entry", scope="calendar")
    text = await memory_context(server, "how long should answers be?", app="sql")
    assert text.startswith("# Memory Context\n")
    assert "\n## Active Rules\n" in text
    assert (
        "- Keep answers under five sentences (maturity: candidate, effectiveness: 0.00)\n" in text
    )
    assert "Write SQL keywords in capitals" in text
    assert "calendar" not in text


async def test_a_forgotten_rule_stays_listed_as_forgotten_and_leaves_every_context(
    alice: httpx.AsyncClient, server: str
) -> None:
    rule = await add_rule(alice, "Greet the user by name")
    forgotten = await mark(alice, rule["id"], "forget")
    assert forgotten["meta"]["forgotten"] is True
    assert (await alice.get(RULES)).json()["rules"] == []
    listed = (await alice.get(RULES, params={"forgotten": "true"})).json()["rules"]
    assert [r["id"] for r in listed] == [rule["id"]]
    assert "Greet the user" not in await memory_context(server, "greet me")
    confirmed = await mark(alice, rule["id"], "confirm")
    assert confirmed["last_confirmed_at"] >= rule["last_confirmed_at"]


async def test_a_deleted_rule_and_its_applications_are_gone(alice: httpx.AsyncClient) -> None:
    rule = await add_rule(alice, "Prefer short variable names")
    await mark(alice, rule["id"], "helpful")
    response = await alice.delete(f"{RULES}/{rule['id']}")
    assert response.json() == {"deleted": rule["id"]}
    for path in (f"{RULES}/{rule['id']}", f"{RULES}/{rule['id']}/applications"):
        missing = await alice.get(path)
        assert missing.status_code == 404, (path, missing.text)
        assert missing.json()["error"]["code"] == "not_found"
    assert (await alice.delete(f"{RULES}/{rule['id']}")).status_code == 404


async def test_another_users_rules_do_not_exist_for_them(
    alice: httpx.AsyncClient, server: str
) -> None:
    rule = await add_rule(alice, "Reply in French")
    async with http(server, "key-bob") as bob:
        assert (await bob.get(RULES)).json()["rules"] == []
        for how in ("helpful", "harmful", "confirm", "forget"):
            assert (await bob.post(f"{RULES}/{rule['id']}/{how}")).status_code == 404
        assert (await bob.get(f"{RULES}/{rule['id']}")).status_code == 404
        assert (await bob.delete(f"{RULES}/{rule['id']}")).status_code == 404
    unchanged = (await alice.get(RULES)).json()["rules"][0]
    assert (unchanged["applied_count"], unchanged["meta"]) == (0, {})


async def test_clearing_long_term_memory_deletes_the_rules_too(alice: httpx.AsyncClient) -> None:
    await add_rule(alice, "Use the 24-hour clock")
    response = await alice.delete("/memory/long-term")
    assert response.json()["deleted"] >= 1
    assert (await alice.get(RULES)).json()["rules"] == []


@pytest.mark.parametrize(
    ("method", "path", "body", "message"),
    [
        ("POST", RULES, {"content": ""}, "length >= 1"),
        ("POST", RULES, {"content": "   "}, "blank"),
        ("POST", RULES, {"content": "x", "scope": "a b"}, "scope"),
        ("POST", RULES, {"content": "x", "maturity": "proven"}, "unknown field"),
        ("POST", RULES, {"content": "x", "tags": [""]}, "length >= 1"),
        ("GET", f"{RULES}?maturity=wise", None, "maturity must be one of"),
        ("GET", f"{RULES}?forgotten=maybe", None, "forgotten must be true or false"),
        ("GET", f"{RULES}?scope=%27%20OR%201%3D1", None, "scope"),
    ],
)
async def test_bad_rule_requests_get_a_400_naming_the_problem(
    alice: httpx.AsyncClient, method: str, path: str, body: Any, message: str
) -> None:
    response = await alice.request(method, path, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "bad_request"
    assert message in error["message"]


async def test_a_harmful_mark_with_a_bad_body_is_refused_and_changes_nothing(
    alice: httpx.AsyncClient,
) -> None:
    rule = await add_rule(alice, "Ask before deleting files")
    response = await alice.post(f"{RULES}/{rule['id']}/harmful", json={"why": "x"})
    assert response.status_code == 400
    assert (await alice.get(RULES)).json()["rules"][0]["harmful_count"] == 0
    assert (await alice.post(f"{RULES}/rule_nothex!/helpful")).status_code == 404
