"""Watching the server live, end to end: ``/ws/tail``, ``/actors``, ``/metrics`` and who
may see what."""

from __future__ import annotations

import gc
import json
import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from testing.fake_ollama import FakeOllama
from tests.app_notes import NoteModel, converse, session
from tests.harness import ADMIN, KEYS, Client, http, make_app, one_turn, serve, settings_for

pytestmark = pytest.mark.anyio


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    settings = settings_for(tmp_path, fake.url, api_keys=KEYS, admin_keys=[ADMIN])
    async with serve(make_app(settings)) as address:
        yield address


@asynccontextmanager
async def tail(server: str, query: str) -> AsyncIterator[ClientConnection]:
    async with connect(f"ws://{server}/ws/tail?{query}") as connection:
        yield connection


async def next_event(connection: ClientConnection, timeout: float = 10.0) -> dict[str, Any]:
    with anyio.fail_after(timeout):
        event: dict[str, Any] = json.loads(await connection.recv())
    return event


async def events_until(connection: ClientConnection, kind: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    while not seen or seen[-1]["kind"] != kind:
        seen.append(await next_event(connection))
    return seen


async def test_tail_streams_a_sessions_life_as_it_happens(server: str) -> None:
    async with tail(server, f"token={ADMIN}&session=s1") as events:
        await one_turn(server, "s1", "key-alice")
        seen = await events_until(events, "actor.ended")
    kinds = [e["kind"] for e in seen]
    assert kinds[:3] == ["actor.spawned", "turn.received", "turn.acked"]
    assert "extraction.started" in kinds
    assert "store.flushed" not in kinds  # the writer's events carry no session
    assert all(e["session_id"] == "s1" and e["user_id"] == "alice" for e in seen)
    assert all(e["at"].endswith("Z") or "+00:00" in e["at"] for e in seen)
    assert seen[2]["data"]["id"] == "t1"
    assert seen[2]["data"]["turn"] == 1
    assert seen[2]["data"]["ms"] >= 0


async def test_tail_filters_by_kind_family_and_user(server: str) -> None:
    async with tail(server, f"token={ADMIN}&user=bob&kind=actor,turn.acked") as events:
        await one_turn(server, "a1", "key-alice")
        await one_turn(server, "b1", "key-bob")
        seen = await events_until(events, "actor.ended")
    assert [e["kind"] for e in seen] == ["actor.spawned", "turn.acked", "actor.ended"]
    assert {e["user_id"] for e in seen} == {"bob"}


async def test_a_user_key_tails_only_its_own_users_events(server: str) -> None:
    async with tail(server, "token=key-alice&kind=actor.spawned") as events:
        await one_turn(server, "b1", "key-bob")
        await one_turn(server, "a1", "key-alice")
        [event] = await events_until(events, "actor.spawned")
    assert (event["user_id"], event["session_id"]) == ("alice", "a1")
    with pytest.raises(InvalidStatus) as refused:
        async with tail(server, "token=key-alice&user=bob"):
            pass
    assert refused.value.response.status_code == 400


async def test_a_user_key_holds_at_most_its_cap_of_tails_and_others_still_tail(
    tmp_path: Path, fake: FakeOllama
) -> None:
    settings = settings_for(
        tmp_path, fake.url, api_keys=KEYS, admin_keys=[ADMIN], max_tails_per_user=2
    )

    def as_(key: str) -> Any:
        url = f"ws://{address}/ws/tail"
        return connect(url, additional_headers={"Authorization": f"Bearer {key}"})

    async with serve(make_app(settings)) as address:
        async with as_("key-alice"), as_("key-alice"):
            with pytest.raises(InvalidStatus) as refused:
                async with as_("key-alice"):
                    pass
            assert refused.value.response.status_code == 429
            body = json.loads(refused.value.response.body or b"{}")
            assert body["error"]["code"] == "too_many_tails"
            async with as_("key-bob") as bobs, as_(ADMIN), as_(ADMIN), as_(ADMIN):
                await one_turn(address, "b1", "key-bob")
                assert (await next_event(bobs))["user_id"] == "bob"
        async with as_("key-alice"), as_("key-alice"):
            pass  # closed tails no longer count


@pytest.mark.parametrize("query", ["", "token=nope", "token=key-alice&kind=bogus"])
async def test_tail_refuses_missing_keys_and_unknown_kinds(server: str, query: str) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with tail(server, query):
            pass
    assert refused.value.response.status_code == (400 if "bogus" in query else 401)
    body = json.loads(refused.value.response.body or b"{}")
    assert body["error"]["code"] in ("unauthorized", "bad_request")


async def test_actors_lists_live_sessions_to_their_user_and_all_to_an_admin(
    server: str,
) -> None:
    await one_turn(server, "a1", "key-alice", end=False)
    await one_turn(server, "a2", "key-alice", end=False)
    await one_turn(server, "b1", "key-bob", end=False)
    async with http(server, "key-alice") as alice, http(server, ADMIN) as admin:
        mine = (await alice.get("/actors")).json()
        everyone = (await admin.get("/actors")).json()
        bobs = (await admin.get("/actors", params={"user": "bob"})).json()
        hidden = await alice.get("/actors/b1")
        one = (await alice.get("/actors/a1")).json()
    assert [a["session_id"] for a in mine["items"]] == ["a1", "a2"]
    assert mine["total"] == 2
    assert everyone["total"] == 3
    assert [a["session_id"] for a in bobs["items"]] == ["b1"]
    assert hidden.status_code == 404
    first = mine["items"][0]
    assert (first["user_id"], first["turn_count"], first["mailbox_depth"]) == ("alice", 1, 0)
    assert first["state"] in ("idle", "extracting")
    assert 0 <= first["idle_seconds"] < 60
    assert 1740 < first["expires_in"] <= 1800
    assert one["working_memory"]["turn_count"] == 1
    assert [e["kind"] for e in one["recent_events"]][:3] == [
        "actor.spawned",
        "turn.received",
        "turn.acked",
    ]


async def test_watching_needs_a_key_and_metrics_need_an_admin_key(server: str) -> None:
    async with http(server, None) as anonymous, http(server, "key-alice") as alice:
        assert (await anonymous.get("/actors")).status_code == 401
        assert (await anonymous.get("/metrics")).status_code == 401
        assert (await alice.get("/metrics")).status_code == 401


async def test_metrics_count_turns_frames_and_live_sessions(server: str) -> None:
    await one_turn(server, "a1", "key-alice", end=False)
    async with Client.connect(server, "a1", "key-alice") as client:
        await client.receive()
        await client.send(type="nonsense")
        await client.until("error")
    async with http(server, ADMIN) as admin:
        response = await admin.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert "mnemo_live_sessions 1.0" in text
    assert "mnemo_live_actors 1.0" in text  # the deprecated name, one release more
    assert "mnemo_turns_total 1.0" in text
    assert 'mnemo_frames_in_total{type="turn"} 1.0' in text
    assert 'mnemo_frames_in_total{type="invalid"} 1.0' in text
    assert 'mnemo_frames_out_total{type="ack"} 1.0' in text
    assert 'mnemo_errors_total{code="bad_request"} 1.0' in text
    assert 'mnemo_actor_events_total{kind="spawned"} 1.0' in text
    assert 'mnemo_store_write_rows_count{writer="archive"}' in text


async def test_metrics_time_the_servers_own_part_of_a_chats_first_delta(
    server: str, fake: FakeOllama
) -> None:
    fake.fault(path="/api/chat", delay=0.3)  # the model waits 300 ms before its first chunk
    async with Client.connect(server, "c1", "key-alice") as client:
        await client.receive()
        started = time.monotonic()
        await client.send(type="chat", id="c1", content="Hello?")
        await client.until("delta")
        first_delta_s = time.monotonic() - started
        await client.until("done")
    async with http(server, ADMIN) as admin:
        text = (await admin.get("/metrics")).text
    [count] = re.findall(r"mnemo_chat_overhead_ms_count (\S+)", text)
    [total_ms] = re.findall(r"mnemo_chat_overhead_ms_sum (\S+)", text)
    assert float(count) == 1
    assert first_delta_s >= 0.3
    assert 0 < float(total_ms) < first_delta_s * 1000 - 250  # the model's 300 ms left out


async def test_metrics_time_the_garbage_collectors_pauses(server: str) -> None:
    gc.collect()  # a full collection, timed by the server's metrics (same process here)
    async with http(server, ADMIN) as admin:
        text = (await admin.get("/metrics")).text
    [full] = re.findall(r'mnemo_gc_pause_ms_count\{generation="2"\} (\d+)', text)
    assert int(float(full)) >= 1


@pytest.fixture
async def notes_server(tmp_path: Path, fake: FakeOllama, model: NoteModel) -> AsyncIterator[str]:
    settings = settings_for(tmp_path, fake.url, api_keys=KEYS, admin_keys=[ADMIN], notes_per_app=2)
    async with serve(make_app(settings)) as address:
        yield address


async def test_seed_003s_note_metrics_count_creation_compaction_and_injection(
    notes_server: str, fake: FakeOllama
) -> None:
    for number in (1, 2, 3):  # the third note is one too many: FIFO compaction
        await converse(notes_server, fake, f"s{number}", key="key-alice")
    async with Client.connect(notes_server, "s4", "key-alice") as plain:
        await plain.receive()
        await plain.send(type="chat", id="c0", content="Hi")  # not an app session
        await plain.until("done")
    async with session(notes_server, "s5", app="calendar") as client:
        await client.send(type="chat", id="c1", content="When do we meet?")
        await client.until("done")
    async with http(notes_server, ADMIN) as admin:
        text = (await admin.get("/metrics")).text
    assert 'mnemo_notes_created_total{app="calendar"} 3.0' in text
    assert 'mnemo_note_compactions_total{app="calendar",by="fifo"} 1.0' in text
    assert "mnemo_note_llm_ms_count 3.0" in text
    assert 'mnemo_app_chats_total{with_notes="true"} 1.0' in text
    assert "mnemo_apps_seen 1.0" in text
    assert "mnemo_apps_with_notes 1.0" in text


async def test_seed_003s_note_work_is_logged(
    notes_server: str, fake: FakeOllama, model: NoteModel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mnemo")
    for number in (1, 2, 3):
        await converse(notes_server, fake, f"s{number}", key="key-alice")
    model.note = lambda prompt: "not a note"
    await converse(notes_server, fake, "s4", key="key-alice")
    async with session(notes_server, "s5", app="calendar") as client:
        await client.send(type="chat", id="c1", content="When do we meet?")
        await client.until("done")
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("mnemo")]
    assert any(
        re.fullmatch(r"created note note_\w+ for app calendar from session s1", m) for m in messages
    )
    assert any(
        m.startswith("compacted notes of app calendar by FIFO: deleted ['note_") for m in messages
    )
    assert any(m.startswith("no note for session s4 of app calendar: ") for m in messages)
    assert "retrieved 2 notes of app calendar for user alice" in messages


async def test_every_logged_memory_change_reaches_the_tail_as_it_happens(server: str) -> None:
    async with tail(server, f"token={ADMIN}&kind=memory") as events:
        async with http(server, "key-alice") as alice:
            rule = (await alice.post("/memory/rules", json={"content": "Be brief"})).json()
            await alice.post(f"/memory/rules/{rule['id']}/forget")
            body = {"canonical_name": "Ana", "entity_type": "person"}
            await alice.post("/memory/entities", json=body)
        seen = [await next_event(events) for _ in range(3)]
    assert [(e["kind"], e["user_id"], e["data"]["event_type"]) for e in seen] == [
        ("memory.logged", "alice", "rule_created"),
        ("memory.logged", "alice", "rule_forgotten"),
        ("memory.logged", "alice", "entity_created"),
    ]
    assert seen[0]["data"] == {
        "event_type": "rule_created",
        "actor": "rest",
        "rule_id": rule["id"],
        "maturity": "candidate",
        "effectiveness_score": 0.0,
    }
