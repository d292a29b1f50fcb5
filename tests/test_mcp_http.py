"""MCP over streamable HTTP, the way agents use it: the SDK's own client against the real
server (uvicorn, LanceDB on a temp dir, the real Ollama client against the fake), every
tool's effect checked through REST."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from websockets.asyncio.client import connect

from server.mcp_tools import TOOLS
from testing.fake_ollama import FakeOllama
from tests.consolidation_model import ConsolidationModel
from tests.harness import http, make_app, serve, settings_for
from tests.mcp_client import ToolFailed, call, mcp_session

pytestmark = pytest.mark.anyio

KEYS = {"key-alice": "alice", "key-bob": "bob"}

#: Seed 002's parameters of each tool: name -> (required, {optional: default}).
SIGNATURES: dict[str, tuple[set[str], dict[str, Any]]] = {
    "memory_store_episode": ({"content", "butler"}, {"session_id": None, "importance": 5.0}),
    "memory_store_fact": (
        {"subject", "predicate", "content"},
        {"importance": 5.0, "permanence": "standard", "scope": "global", "tags": None},
    ),
    "memory_store_rule": ({"content"}, {"scope": "global", "tags": None}),
    "memory_search": (
        {"query"},
        {"types": None, "scope": None, "mode": "hybrid", "limit": 10, "min_confidence": 0.2},
    ),
    "memory_recall": ({"topic"}, {"scope": None, "limit": 10}),
    "memory_get": ({"memory_type", "memory_id"}, {}),
    "memory_confirm": ({"memory_type", "memory_id"}, {}),
    "memory_mark_helpful": ({"rule_id"}, {}),
    "memory_mark_harmful": ({"rule_id"}, {"reason": None}),
    "memory_forget": ({"memory_type", "memory_id"}, {}),
    "memory_stats": (set(), {"scope": None}),
    "memory_context": ({"trigger_prompt", "butler"}, {"token_budget": None}),
    "entity_create": (
        {"canonical_name", "entity_type", "tenant_id"},
        {"aliases": None, "metadata": None},
    ),
    "entity_get": ({"entity_id"}, {}),
    "entity_update": (
        {"entity_id"},
        {"canonical_name": None, "aliases": None, "metadata": None},
    ),
    "entity_resolve": (
        {"name"},
        {
            "tenant_id": "default",
            "entity_type": None,
            "context_hints": None,
            "enable_fuzzy": False,
        },
    ),
    "entity_merge": ({"source_entity_id", "target_entity_id"}, {}),
    "memory_run_consolidation": (set(), {}),
    "memory_run_episode_cleanup": (set(), {"max_entries": 10000}),
}


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    fake.json_default = None
    fake.responder = ConsolidationModel()  # consolidation answers for the scope "kitchen"
    settings = settings_for(tmp_path, fake.url, api_keys=KEYS, admin_keys=["key-admin"])
    async with serve(make_app(settings)) as address:
        yield address


def walk(value: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) pair anywhere in a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key, item
            yield from walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item)


_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def assert_plain_json(answer: Any) -> None:
    """No vector anywhere; ids are strings; times are ISO-8601 strings."""
    for key, item in walk(answer):
        assert key not in ("vector", "embedding"), key
        if key == "id" or key.endswith("_id"):
            assert item is None or isinstance(item, str), (key, item)
        if key.endswith("_at") or key in ("last_seen", "last_accessed"):
            assert item is None or _TIME.match(item), (key, item)


async def test_the_server_lists_seed_002s_19_tools_with_their_parameters_and_defaults(
    server: str,
) -> None:
    async with mcp_session(server, "key-alice") as session:
        listed = (await session.list_tools()).tools
    assert [t.name for t in listed] == list(TOOLS) == list(SIGNATURES)
    for tool in listed:
        required, optional = SIGNATURES[tool.name]
        schema = tool.input_schema
        assert set(schema.get("required", [])) == required, tool.name
        properties = schema["properties"]
        assert set(properties) >= required | set(optional), tool.name
        for name, default in optional.items():
            assert properties[name].get("default") == default, (tool.name, name)
        assert "ctx" not in properties
        assert "user_id" not in properties
        assert len(tool.description or "") > 40, tool.name
    permanence = next(t for t in listed if t.name == "memory_store_fact").input_schema
    assert permanence["properties"]["importance"]["maximum"] == 10


async def test_writing_reading_and_feedback_tools_change_memory_as_rest_sees_it(
    server: str,
) -> None:
    async with mcp_session(server, "key-alice") as mcp, http(server, "key-alice") as rest:
        stored = await call(
            mcp,
            "memory_store_fact",
            subject="user",
            predicate="lives_in",
            content="User lives in Lisbon",
            importance=8.0,
            permanence="stable",
            tags=["home"],
        )
        fact_id = stored["id"]
        fact = (await rest.get(f"/memory/long-term/{fact_id}")).json()
        assert (fact["content"], fact["predicate"], fact["importance"]) == (
            "User lives in Lisbon",
            "lives_in",
            8.0,
        )
        assert (fact["permanence"], fact["tags"]) == ("stable", ["home"])
        moved = await call(
            mcp,
            "memory_store_fact",
            subject="user",
            predicate="lives_in",
            content="User lives in Porto",
        )
        assert [f["id"] for f in moved["superseded"]] == [fact_id]
        old = (await rest.get(f"/memory/long-term/{fact_id}")).json()
        assert (old["validity"], old["superseded_by"]) == ("superseded", moved["id"])

        rule = await call(mcp, "memory_store_rule", content="Answer in Portuguese", tags=["lang"])
        assert (await rest.get(f"/memory/rules/{rule['id']}")).json()["tags"] == ["lang"]
        episode = await call(
            mcp,
            "memory_store_episode",
            content="The user asked for a vegan soup",
            butler="kitchen",
            session_id="s1",
        )
        seen = (await rest.get(f"/memory/episodes/{episode['id']}")).json()
        assert (seen["scope"], seen["session_id"], seen["consolidation_status"]) == (
            "kitchen",
            "s1",
            "pending",
        )

        found = await call(mcp, "memory_search", query="where does the user live in Porto")
        assert found["results"][0]["id"] == moved["id"]
        assert {h["memory_type"] for h in found["results"]} <= {"fact", "rule", "episode"}
        rules_only = await call(mcp, "memory_search", query="Portuguese", types=["rule"])
        assert [h["memory_type"] for h in rules_only["results"]] == ["rule"]
        keyword = await call(mcp, "memory_search", query="vegan soup", mode="keyword")
        assert [h["id"] for h in keyword["results"]] == [episode["id"]]
        recalled = await call(mcp, "memory_recall", topic="where the user lives")
        assert recalled["results"][0]["id"] == moved["id"]

        got = await call(mcp, "memory_get", memory_type="fact", memory_id=moved["id"])
        counted = (await rest.get(f"/memory/long-term/{moved['id']}")).json()["access_count"]
        assert (got["access_count"], counted) == (counted, got["access_count"])
        assert got["access_count"] >= 1
        assert got["last_accessed"] is not None
        assert (await call(mcp, "memory_get", memory_type="rule", memory_id=rule["id"]))[
            "reference_count"
        ] == 2  # REST's read counted too
        assert (await call(mcp, "memory_get", memory_type="episode", memory_id=episode["id"]))[
            "reference_count"
        ] == 2

        await call(mcp, "memory_mark_helpful", rule_id=rule["id"])
        harmed = await call(mcp, "memory_mark_harmful", rule_id=rule["id"], reason="user is Lisa")
        kept = (await rest.get(f"/memory/rules/{rule['id']}")).json()
        assert (kept["applied_count"], kept["success_count"], kept["harmful_count"]) == (2, 1, 1)
        assert (
            kept["meta"]["harmful_reasons"] == ["user is Lisa"] == harmed["meta"]["harmful_reasons"]
        )
        confirmed = await call(mcp, "memory_confirm", memory_type="rule", memory_id=rule["id"])
        assert confirmed["last_confirmed_at"] >= rule["last_confirmed_at"]
        await call(mcp, "memory_confirm", memory_type="fact", memory_id=moved["id"])

        forgotten = await call(mcp, "memory_forget", memory_type="fact", memory_id=moved["id"])
        assert forgotten["validity"] == "retracted"
        assert (await rest.get(f"/memory/long-term/{moved['id']}")).json()["validity"] == (
            "retracted"
        )
        await call(mcp, "memory_forget", memory_type="rule", memory_id=rule["id"])
        assert (await rest.get(f"/memory/rules/{rule['id']}")).json()["meta"]["forgotten"]
        stats = await call(mcp, "memory_stats")
        assert stats == (await rest.get("/memory/stats")).json()
        assert stats["facts"]["retracted"] == 1
        assert stats["rules"]["forgotten"] == 1
        for answer in (stored, moved, rule, episode, found, recalled, got, stats):
            assert_plain_json(answer)


async def test_memory_context_is_the_context_builders_memory_context_block(server: str) -> None:
    async with mcp_session(server, "key-alice") as mcp, http(server, "key-alice") as rest:
        await call(
            mcp, "memory_store_fact", subject="user", predicate="diet", content="User is vegan"
        )
        await call(mcp, "memory_store_rule", content="Suggest vegan recipes", scope="kitchen")
        await call(mcp, "memory_store_rule", content="Prune in winter", scope="garden")
        text = await call(mcp, "memory_context", trigger_prompt="dinner ideas", butler="kitchen")
        assert text.startswith("# Memory Context\n")
        assert "- [user] [diet]: User is vegan (confidence: 1.00)" in text
        assert "- Suggest vegan recipes (maturity: candidate, effectiveness: 0.00)" in text
        assert "Prune in winter" not in text
        small = await call(
            mcp, "memory_context", trigger_prompt="dinner", butler="kitchen", token_budget=12
        )
        assert len(small) <= 12 * 4
        facts = (await rest.get("/memory/long-term", params={"kind": "facts"})).json()["items"]
        with anyio.fail_after(10):  # counted as used, in the writer's next batch
            while facts[0]["access_count"] == 0:
                await anyio.sleep(0.05)
                facts = (await rest.get("/memory/long-term", params={"kind": "facts"})).json()[
                    "items"
                ]


async def test_entity_consolidation_and_cleanup_tools_change_memory_as_rest_sees_it(
    server: str,
) -> None:
    async with mcp_session(server, "key-alice") as mcp, http(server, "key-alice") as rest:
        ana = await call(
            mcp,
            "entity_create",
            canonical_name="Ana Souza",
            entity_type="person",
            tenant_id="someone-else",  # never decides whose memory
            aliases=["Ana"],
            metadata={"relation": "sister"},
        )
        assert (await rest.get(f"/memory/entities/{ana['id']}")).json()["aliases"] == ["Ana"]
        assert (await call(mcp, "entity_get", entity_id=ana["id"]))["metadata"] == {
            "relation": "sister"
        }
        updated = await call(mcp, "entity_update", entity_id=ana["id"], aliases=["Ana", "Aninha"])
        assert updated["aliases"] == ["Ana", "Aninha"]
        resolved = await call(mcp, "entity_resolve", name="aninha")
        assert [c["entity_id"] for c in resolved["candidates"]] == [ana["id"]]
        twin = await call(
            mcp,
            "entity_create",
            canonical_name="A. Souza",
            entity_type="person",
            tenant_id="default",
        )
        merged = await call(
            mcp, "entity_merge", source_entity_id=twin["id"], target_entity_id=ana["id"]
        )
        assert merged["target"]["id"] == ana["id"]
        assert "A. Souza" in merged["target"]["aliases"]
        gone = (await rest.get(f"/memory/entities/{twin['id']}")).json()
        assert gone["metadata"]["merged_into"] == ana["id"]

        await call(
            mcp, "memory_store_episode", content="The user asked for a vegan soup", butler="kitchen"
        )
        report = await call(mcp, "memory_run_consolidation")
        assert (report["consolidated"], report["facts_added"], report["rules_added"]) == (1, 1, 1)
        rules = (await rest.get("/memory/rules")).json()["rules"]
        assert [r["content"] for r in rules] == ["Suggest vegan recipes"]

        old = await call(mcp, "memory_store_episode", content="Watered the roses", butler="garden")
        await call(mcp, "memory_forget", memory_type="episode", memory_id=old["id"])
        cleaned = await call(mcp, "memory_run_episode_cleanup", max_entries=10000)
        assert cleaned["expired_deleted"] == 1
        assert (await rest.get(f"/memory/episodes/{old['id']}")).status_code == 404
        for answer in (ana, updated, resolved, merged, report, cleaned):
            assert_plain_json(answer)


async def test_a_second_users_key_sees_none_of_the_first_users_memories_through_any_tool(
    server: str,
) -> None:
    async with mcp_session(server, "key-alice") as alice:
        fact = await call(
            alice,
            "memory_store_fact",
            subject="user",
            predicate="pet",
            content="User has a cat named Miso",
        )
        rule = await call(alice, "memory_store_rule", content="Mention Miso")
        episode = await call(alice, "memory_store_episode", content="Miso was sick", butler="vet")
        entity = await call(
            alice, "entity_create", canonical_name="Miso", entity_type="other", tenant_id="alice"
        )
    async with mcp_session(server, "key-bob") as bob:
        assert (await call(bob, "memory_search", query="Miso cat"))["results"] == []
        assert (await call(bob, "memory_recall", topic="Miso cat"))["results"] == []
        text = await call(bob, "memory_context", trigger_prompt="Miso", butler="vet")
        assert "Miso" not in text
        assert (await call(bob, "entity_resolve", name="Miso", tenant_id="alice"))[
            "candidates"
        ] == []
        stats = await call(bob, "memory_stats")
        assert stats["facts"]["active"] == 0
        assert stats["rules"]["candidate"] == 0
        attempts: list[tuple[str, dict[str, Any]]] = [
            ("memory_get", {"memory_type": "fact", "memory_id": fact["id"]}),
            ("memory_get", {"memory_type": "rule", "memory_id": rule["id"]}),
            ("memory_get", {"memory_type": "episode", "memory_id": episode["id"]}),
            ("memory_confirm", {"memory_type": "fact", "memory_id": fact["id"]}),
            ("memory_forget", {"memory_type": "rule", "memory_id": rule["id"]}),
            ("memory_forget", {"memory_type": "episode", "memory_id": episode["id"]}),
            ("memory_mark_harmful", {"rule_id": rule["id"]}),
            ("entity_get", {"entity_id": entity["id"]}),
            ("entity_update", {"entity_id": entity["id"], "canonical_name": "Bob's"}),
        ]
        for tool, arguments in attempts:
            with pytest.raises(ToolFailed, match=r"no (fact|rule|episode|entity) with id"):
                await call(bob, tool, **arguments)
    async with http(server, "key-alice") as rest:
        kept = (await rest.get(f"/memory/rules/{rule['id']}")).json()
        assert (kept["harmful_count"], kept["meta"].get("forgotten")) == (0, None)
        assert (await rest.get(f"/memory/entities/{entity['id']}")).json()["canonical_name"] == (
            "Miso"
        )


async def test_a_request_without_a_valid_key_is_refused_before_it_reaches_mcp(
    server: str,
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    for key in (None, "wrong"):
        async with http(server, key) as client:
            answer = await client.post("/mcp", json=body, headers=headers)
        assert answer.status_code == 401
        assert answer.json()["error"]["code"] == "unauthorized"
    with pytest.raises(ExceptionGroup) as refused:  # the SDK's task groups wrap it
        async with mcp_session(server, "wrong"):
            pass
    assert refused.group_contains(MCPError, match="Server returned an error response")


async def test_bad_arguments_unknown_ids_and_refused_changes_are_tool_errors_on_a_live_session(
    server: str,
) -> None:
    async with mcp_session(server, "key-alice") as mcp:
        source = await call(
            mcp, "entity_create", canonical_name="Ana", entity_type="person", tenant_id="x"
        )
        target = await call(
            mcp, "entity_create", canonical_name="Ana S", entity_type="person", tenant_id="x"
        )
        await call(
            mcp, "entity_merge", source_entity_id=source["id"], target_entity_id=target["id"]
        )
        refused: list[tuple[str, dict[str, Any], str]] = [
            (
                "memory_store_fact",
                {"subject": "user", "predicate": "p", "content": "c", "permanence": "forever"},
                "valid levels: permanent, stable, standard, volatile, ephemeral",
            ),
            (
                "entity_create",
                {"canonical_name": "X", "entity_type": "robot", "tenant_id": "x"},
                "person",
            ),
            (
                "entity_merge",
                {"source_entity_id": source["id"], "target_entity_id": target["id"]},
                "merged",
            ),
            (
                "entity_create",
                {"canonical_name": "Ana S", "entity_type": "person", "tenant_id": "x"},
                "already exists",
            ),
            ("memory_get", {"memory_type": "fact", "memory_id": "fact_00000000"}, "no fact"),
            ("memory_get", {"memory_type": "note", "memory_id": "fact_00000000"}, "memory_type"),
            ("memory_confirm", {"memory_type": "episode", "memory_id": "ep_1"}, "do not decay"),
            ("memory_mark_helpful", {"rule_id": "rule_00000000"}, "no rule"),
            ("memory_search", {"query": "x", "limit": 0}, "limit"),
            ("memory_search", {"query": "x", "mode": "fuzzy"}, "mode"),
            ("memory_store_episode", {"content": "c"}, "butler"),
            ("memory_store_episode", {"content": "c", "butler": "bad scope!"}, "butler"),
            ("no_such_tool", {}, "Unknown tool"),
        ]
        for tool, arguments, message in refused:
            with pytest.raises(ToolFailed, match=re.escape(message)):
                await call(mcp, tool, **arguments)
        assert (await call(mcp, "memory_stats"))["facts"]["active"] == 0


async def test_tool_mutations_reach_the_tail_the_event_log_and_the_metrics(server: str) -> None:
    url = f"ws://{server}/ws/tail?token=key-alice"
    async with connect(url) as tail, mcp_session(server, "key-alice") as mcp:
        stored = await call(
            mcp, "memory_store_fact", subject="user", predicate="job", content="User is a nurse"
        )
        with anyio.fail_after(10):
            while True:
                event = json.loads(await tail.recv())
                if event["kind"] == "memory.logged":
                    break
        assert event["data"]["event_type"] == "fact_created"
        await call(mcp, "memory_forget", memory_type="fact", memory_id=stored["id"])
        with pytest.raises(ToolFailed):
            await call(mcp, "memory_forget", memory_type="fact", memory_id="fact_00000000")
    async with http(server, "key-alice") as rest:
        log = (await rest.get("/memory/events")).json()["events"]
        assert [e["event_type"] for e in log[:2]] == ["fact_retracted", "fact_created"]
        assert log[0]["actor"] == "mcp"  # REST's own changes say "rest"
        await rest.post(f"/memory/long-term/{stored['id']}/confirm")
        assert (await rest.get("/memory/events")).json()["events"][0]["actor"] == "rest"
    async with http(server, "key-admin") as admin:
        metrics = (await admin.get("/metrics")).text
    assert 'mnemo_mcp_tool_calls_total{outcome="ok",tool="memory_store_fact"} 1.0' in metrics
    assert 'mnemo_mcp_tool_calls_total{outcome="error",tool="memory_forget"} 1.0' in metrics
    assert 'mnemo_mcp_tool_ms_count{tool="memory_forget"} 2.0' in metrics


async def test_without_keys_the_single_local_user_is_the_caller(
    tmp_path: Path, fake: FakeOllama
) -> None:
    async with serve(make_app(settings_for(tmp_path, fake.url))) as server:
        async with mcp_session(server) as mcp:
            rule = await call(mcp, "memory_store_rule", content="Be brief")
        async with httpx.AsyncClient(base_url=f"http://{server}") as rest:
            assert (await rest.get(f"/memory/rules/{rule['id']}")).json()["content"] == "Be brief"


async def test_a_tool_call_from_a_web_page_origin_is_refused_on_loopback(server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {
        "Accept": "application/json, text/event-stream",
        "Origin": "http://evil.example",
    }
    async with http(server, "key-alice") as client:
        answer = await client.post("/mcp", json=body, headers=headers)
    assert answer.status_code == 403


async def test_an_archived_chat_turn_is_an_episode_that_memory_get_shows_as_rest_does(
    server: str,
) -> None:
    line = {
        "kind": "turn",
        "id": "t1",
        "session_id": "trip",
        "speaker": "Ann",
        "role": "user",
        "text": "We landed in Porto",
        "at": "2024-06-02T12:00:00Z",
        "turn": 1,
    }
    async with http(server, "key-alice") as rest, mcp_session(server, "key-alice") as mcp:
        imported = await rest.post(
            "/memory/import",
            content=json.dumps(line) + "\n",
            headers={"Content-Type": "application/x-ndjson"},
        )
        assert imported.json()["imported"] == 1
        [turn] = (await rest.get("/memory/long-term", params={"kind": "turns"})).json()["items"]
        got = await call(mcp, "memory_get", memory_type="episode", memory_id=turn["id"])
        assert got == turn
        with pytest.raises(ToolFailed, match="not forgotten but deleted"):
            await call(mcp, "memory_forget", memory_type="episode", memory_id=turn["id"])


async def test_bad_ids_unknown_prompts_and_tools_are_clean_errors_and_log_nothing(
    server: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        async with mcp_session(server, "key-alice") as mcp:
            with pytest.raises(MCPError) as unknown:
                await mcp.get_prompt("nope", {})
            assert (unknown.value.code, unknown.value.error.message) == (
                INVALID_PARAMS,
                "Unknown prompt: nope",
            )
            for tool, arguments in [
                ("memory_get", {"memory_type": "fact", "memory_id": "fact_\x00"}),
                ("memory_get", {"memory_type": "episode", "memory_id": "msg_'\x00"}),
                ("memory_forget", {"memory_type": "rule", "memory_id": "\x00"}),
                ("memory_confirm", {"memory_type": "fact", "memory_id": "a' OR '1"}),
                ("memory_mark_helpful", {"rule_id": "rule_\x00"}),
                ("memory_mark_harmful", {"rule_id": "x\x00y"}),
            ]:
                with pytest.raises(ToolFailed, match=r"memory_id|rule_id") as refused:
                    await call(mcp, tool, **arguments)
                assert "try again later" not in str(refused.value)
            with pytest.raises(ToolFailed, match="Unknown tool"):
                await call(mcp, "no_such_tool")
    failures = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert failures == [], [r.getMessage() for r in failures]
