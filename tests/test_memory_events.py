"""The audit log of memory changes: which events each change makes, and the log over REST."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from memory.events import EventMaker, fact_events, rule_events, sweep_events
from memory.facts import Changes, Conflict, Stored
from memory.hashing import HashEmbedder
from memory.rules import StoredRule, forget, mark_harmful, mark_helpful, new_rule
from schemas.records import Fact, MemoryEvent
from testing.fake_ollama import FakeOllama
from testing.records import a_fact
from tests.actor_world import world
from tests.harness import http, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def maker() -> EventMaker:
    counter = itertools.count(1)
    return EventMaker("u1", "llm", T0, lambda: f"evt_{next(counter):016x}")


def fact(fact_id: str, **changes: object) -> Fact:
    return a_fact(fact_id, category="identity", **changes)


def kinds(events: list[MemoryEvent]) -> list[tuple[str, dict[str, Any]]]:
    return [(e.event_type, e.payload) for e in events]


def test_each_kind_of_fact_change_makes_its_event_with_ids_and_never_the_text() -> None:
    changes = Changes(
        added=[Stored(fact("fact_00000002"), [1.0])],
        updated=[fact("fact_00000003", mention_count=2)],
        superseded=[
            fact("fact_00000001", validity="superseded", superseded_by="fact_00000002"),
            fact("fact_00000004", validity="retracted", superseded_by="fact_00000005"),
        ],
        removed=[fact("fact_00000006")],
        conflicts=[Conflict("fact_00000007", "fact_00000008", "pinned")],
    )
    events = fact_events(changes, maker())
    assert kinds(events) == [
        ("fact_created", {"fact_id": "fact_00000002", "category": "identity", "scope": "global"}),
        ("fact_updated", {"fact_id": "fact_00000003", "confidence": 0.9, "mention_count": 2}),
        ("fact_superseded", {"fact_id": "fact_00000001", "superseded_by": "fact_00000002"}),
        ("fact_retracted", {"fact_id": "fact_00000004", "superseded_by": "fact_00000005"}),
        ("fact_evicted", {"fact_id": "fact_00000006"}),
        ("fact_conflicted", {"fact_id": "fact_00000007", "kept_id": "fact_00000008"}),
    ]
    assert [e.id for e in events] == [f"evt_{i:016x}" for i in range(1, 7)]
    assert {(e.user_id, e.actor, e.created_at) for e in events} == {("u1", "llm", T0)}
    assert "Lyon" not in msgspec.json.encode(events).decode()


def test_the_sweep_logs_each_fact_it_expired_faded_or_brought_back() -> None:
    swept = [
        fact("fact_00000001", validity="expired"),
        fact("fact_00000002", status="fading"),
        fact("fact_00000003"),
    ]
    assert [k for k, _ in kinds(sweep_events(swept, maker()))] == [
        "fact_expired",
        "fact_fading",
        "fact_unfaded",
    ]


def test_a_rule_change_logs_its_cause_and_each_transition_it_made() -> None:
    rule = new_rule("rule_00000001", "u1", "Be brief", T0)
    assert kinds(rule_events(None, rule, maker(), "rule_created")) == [
        ("rule_created", {"rule_id": rule.id, "maturity": "candidate", "effectiveness_score": 0.0})
    ]
    four = rule
    for _ in range(4):
        four = mark_helpful(four, T0)
    five = mark_helpful(four, T0)
    assert [k for k, _ in kinds(rule_events(four, five, maker(), "rule_marked_helpful"))] == [
        "rule_marked_helpful",
        "rule_promoted",
    ]
    harmed = mark_harmful(five, T0)
    events = kinds(rule_events(five, harmed, maker(), "rule_marked_harmful"))
    assert events[1] == (
        "rule_demoted",
        {"rule_id": rule.id, "from": "established", "to": "candidate"},
    )
    flagged = mark_harmful(mark_harmful(mark_harmful(rule, T0), T0), T0)
    twice = mark_harmful(mark_harmful(rule, T0), T0)
    assert "rule_flagged_for_inversion" in [
        k for k, _ in kinds(rule_events(twice, flagged, maker(), None))
    ]
    gone = forget(rule, T0)
    assert [k for k, _ in kinds(rule_events(rule, gone, maker(), "rule_forgotten"))] == [
        "rule_forgotten"
    ]
    assert [k for k, _ in kinds(rule_events(rule, gone, maker(), None))] == ["rule_forgotten"]


# -- through the server --------------------------------------------------------------------

KEYS = {"key-alice": "alice", "key-bob": "bob"}


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, fake.url, api_keys=KEYS))) as address:
        yield address


async def events(client: httpx.AsyncClient, **params: str) -> list[dict[str, Any]]:
    response = await client.get("/memory/events", params=params)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["events"]
    return found


async def test_the_log_holds_every_change_of_facts_and_rules_newest_first(server: str) -> None:
    async with http(server, "key-alice") as alice:
        lyon = (await alice.post("/memory/long-term", json={"content": "I live in Lyon"})).json()
        paris = (await alice.post("/memory/long-term", json={"content": "I live in Paris"})).json()
        [old], [new] = lyon["added"], paris["added"]
        await alice.patch(f"/memory/long-term/{new['id']}", json={"pinned": True})
        await alice.delete(f"/memory/long-term/{new['id']}")
        rule = (await alice.post("/memory/rules", json={"content": "Be brief"})).json()
        for _ in range(5):
            await alice.post(f"/memory/rules/{rule['id']}/helpful")
        log = await events(alice)
        assert [e["event_type"] for e in log[:3]] == [
            "rule_promoted",
            "rule_marked_helpful",
            "rule_marked_helpful",
        ]
        facts = [(e["event_type"], e["payload"]) for e in log if "fact_id" in e["payload"]]
        # One write's events in reverse too: the old fact superseded after the new was made.
        assert facts == [
            ("fact_deleted", {"fact_id": new["id"]}),
            ("fact_edited", {"fact_id": new["id"], "fields": ["pinned"]}),
            ("fact_superseded", {"fact_id": old["id"], "superseded_by": new["id"]}),
            (
                "fact_created",
                {"fact_id": new["id"], "category": new["category"], "scope": "global"},
            ),
            (
                "fact_created",
                {"fact_id": old["id"], "category": old["category"], "scope": "global"},
            ),
        ]
        assert {e["actor"] for e in log} == {"manual", "rest"}
        assert "Paris" not in str(log)
        assert "user_id" not in log[0]
        only = await events(alice, type="rule_created,fact_deleted", limit="1")
        assert [e["event_type"] for e in only] == ["rule_created"]
        async with http(server, "key-bob") as bob:
            assert await events(bob) == []
        bad = await alice.get("/memory/events", params={"type": "x' OR 1=1"})
        assert bad.status_code == 400
        await alice.delete("/memory/long-term")
        assert await events(alice) == []


async def test_the_scheduled_sweep_logs_the_decay_transitions_of_facts_and_rules() -> None:
    async with world() as w:
        now = w.deps.clock.now()
        old = now - timedelta(days=40)
        ephemeral = fact("fact_00000001", decay_rate=0.1, last_confirmed_at=old, last_seen=now)
        await w.store.facts.put_facts([Stored(ephemeral, HashEmbedder().embed_one("x"))])
        aged = new_rule("rule_00000001", "u1", "Be brief", now - timedelta(days=100))
        await w.store.rules.put_rules([StoredRule(aged, HashEmbedder().embed_one("y"))])
        assert await w.sweeper.sweep_once() == 2
        logged = await w.store.events.events_of("u1", limit=10)
    assert sorted((e.event_type, e.actor) for e in logged) == [
        ("fact_expired", "sweep"),
        ("rule_fading", "sweep"),
    ]
