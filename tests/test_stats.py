"""Seed 002's memory_stats: counts of facts and rules by state, pure and through the server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import msgspec
import pytest

from memory.episodes import new_episode
from memory.rules import forget, new_rule
from memory.stats import episode_stats, fact_stats, in_scope, rule_stats
from testing.fake_ollama import FakeOllama
from testing.records import T0, a_fact
from tests.harness import http, make_app, serve, settings_for

pytestmark = pytest.mark.anyio


def test_a_scope_sees_global_and_itself_and_no_scope_sees_all() -> None:
    assert [in_scope(s, "sql") for s in ("global", "sql", "calendar")] == [True, True, False]
    assert in_scope("calendar", None)


def test_fading_facts_count_apart_from_active_ones_and_other_states_as_counted() -> None:
    base = a_fact()
    active = [base, msgspec.structs.replace(base, status="fading"), base]
    assert fact_stats(active, {"expired": 4, "superseded": 2}) == {
        "active": 2,
        "fading": 1,
        "superseded": 2,
        "expired": 4,
        "retracted": 0,
    }


def test_rules_count_by_maturity_and_forgotten_ones_whatever_their_maturity() -> None:
    rule = new_rule("rule_00000001", "u1", "x", T0)
    proven = msgspec.structs.replace(rule, maturity="proven")
    assert rule_stats([rule, proven, forget(proven, T0)]) == {
        "candidate": 1,
        "established": 0,
        "proven": 1,
        "anti_pattern": 0,
        "forgotten": 1,
    }


def test_episode_stats_count_stored_and_archived_and_age_the_pending_backlog() -> None:
    old = new_episode("ep_0000000000000001", "u1", "a", "b", T0)
    done = msgspec.structs.replace(
        new_episode("ep_0000000000000002", "u1", "b", "b", T0), consolidation_status="consolidated"
    )
    later = T0 + timedelta(hours=5, minutes=30)
    assert episode_stats([old, done], archived=4, now=later) == {
        "total": 6,
        "unconsolidated": 1,
        "backlog_age_hours": 5.5,
    }
    assert episode_stats([done], archived=0, now=later)["backlog_age_hours"] == 0.0


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    keys = {"key-alice": "alice", "key-bob": "bob"}
    async with serve(make_app(settings_for(tmp_path, fake.url, api_keys=keys))) as address:
        yield address


async def test_stats_count_the_users_facts_rules_and_messages_in_a_scope(server: str) -> None:
    async with http(server, "key-alice") as alice:
        for content, scope in [
            ("I live in Lyon", "global"),
            ("I live in Paris", "global"),
            ("I use PostgreSQL at work", "sql"),
            ("I have a dentist appointment on Friday", "calendar"),
        ]:
            await alice.post("/memory/long-term", json={"content": content, "scope": scope})
        for content, scope in [("Be brief", "global"), ("Uppercase SQL", "sql")]:
            await alice.post("/memory/rules", json={"content": content, "scope": scope})
        rule = (await alice.post("/memory/rules", json={"content": "Cite dates"})).json()
        await alice.post(f"/memory/rules/{rule['id']}/forget")
        body = {"kind": "turn", "id": "t", "session_id": "s", "role": "user", "speaker": "user"}
        line = msgspec.json.encode(body | {"text": "hello", "at": "2026-11-22T08:00:00Z"})
        headers = {"Content-Type": "application/x-ndjson"}
        await alice.post("/memory/import", content=line, headers=headers)
        everything = (await alice.get("/memory/stats")).json()
        assert everything == {
            "facts": {"active": 3, "fading": 0, "superseded": 1, "expired": 0, "retracted": 0},
            "rules": {
                "candidate": 2,
                "established": 0,
                "proven": 0,
                "anti_pattern": 0,
                "forgotten": 1,
            },
            "episodes": {"total": 1, "unconsolidated": 0, "backlog_age_hours": 0.0},
        }
        sql = (await alice.get("/memory/stats", params={"scope": "sql"})).json()
        assert (sql["facts"]["active"], sql["facts"]["superseded"]) == (2, 1)
        assert (sql["rules"]["candidate"], sql["rules"]["forgotten"]) == (2, 1)
        bad = await alice.get("/memory/stats", params={"scope": "a' OR '1'='1"})
        assert bad.status_code == 400
        async with http(server, "key-bob") as bob:
            empty = (await bob.get("/memory/stats")).json()
        assert empty["facts"]["active"] == empty["rules"]["candidate"] == 0
        assert empty["episodes"] == {"total": 0, "unconsolidated": 0, "backlog_age_hours": 0.0}
