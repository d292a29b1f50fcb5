"""Episodes stored directly: defaults, forgetting, the cleanup, the sweep and REST."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import cast

import anyio
import msgspec
import pytest

from actors.consolidation import ConsolidationReport, Consolidator
from actors.sweeper import Sweeper
from memory.episodes import cleanup, forget, new_episode
from schemas.records import Episode
from testing.fake_ollama import FakeOllama
from testing.records import T0
from tests.actor_world import world
from tests.harness import http, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

DAY = timedelta(days=1)


def episode(n: int, *, age_days: float = 0, consolidated: bool = False) -> Episode:
    made = new_episode(f"ep_{n:016x}", "u1", f"observation {n}", "butler", T0 - age_days * DAY)
    return msgspec.structs.replace(made, consolidated=consolidated)


def test_a_new_episode_is_pending_for_a_week_with_seed_002s_defaults() -> None:
    made = new_episode("ep_0000000000000001", "u1", "Saw the user book a flight", "travel", T0)
    assert (made.expires_at, made.importance, made.reference_count) == (T0 + 7 * DAY, 5.0, 0)
    assert (made.consolidated, made.consolidation_status, made.retry_count) == (
        False,
        "pending",
        0,
    )
    assert (made.last_error, made.last_referenced_at, made.meta) == (None, None, {})
    with pytest.raises(ValueError, match="blank"):
        new_episode("ep_1", "u1", "  ", "b", T0)
    with pytest.raises(ValueError, match=r"importance must be within 0\.\.10"):
        new_episode("ep_1", "u1", "x", "b", T0, importance=10.5)


def test_forgetting_an_episode_makes_it_expire_now_never_later() -> None:
    assert forget(episode(1), T0 + DAY).expires_at == T0 + DAY
    stale = episode(2, age_days=30)
    assert forget(stale, T0).expires_at == stale.expires_at


def test_cleanup_deletes_the_expired_then_the_oldest_consolidated_past_capacity() -> None:
    episodes = [
        episode(1, age_days=8),  # expired
        episode(2, age_days=5, consolidated=True),
        episode(3, age_days=4, consolidated=True),
        episode(4, age_days=6),  # oldest left, but pending: never deleted for room
        episode(5, age_days=1, consolidated=True),
    ]
    plan = cleanup(episodes, T0, max_entries=2)
    assert plan.expired == ["ep_0000000000000001"]
    assert plan.for_capacity == ["ep_0000000000000002", "ep_0000000000000003"]
    assert plan.counts() == {"expired_deleted": 1, "capacity_deleted": 2, "remaining": 2}
    pending = [episode(n) for n in range(1, 4)]
    assert cleanup(pending, T0, max_entries=1).counts() == {
        "expired_deleted": 0,
        "capacity_deleted": 0,
        "remaining": 3,
    }


async def test_the_scheduled_sweep_cleans_up_every_users_episodes() -> None:
    async with world() as w:
        now = w.deps.clock.now()
        old = new_episode("ep_00000000000000aa", "u1", "old", "b", now - 8 * DAY)
        new = new_episode("ep_00000000000000bb", "u2", "new", "b", now)
        await w.store.episodes.put_episodes([(old, [1.0]), (new, [1.0])])
        assert await w.sweeper.sweep_once() == 1
        left = [e.id for _, (e, _) in w.store.episodes.episodes.items()]
        logged = await w.store.events.events_of("u1", limit=5)
    assert left == ["ep_00000000000000bb"]
    # The sweep consolidates pending episodes first (the model found nothing), then cleans.
    assert [(e.event_type, e.payload) for e in logged] == [
        ("episodes_cleaned", {"expired_deleted": 1, "capacity_deleted": 0, "remaining": 0}),
        ("episodes_consolidated", {"scope": "b", "episodes": 1}),
    ]


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    keys = {"key-alice": "alice", "key-bob": "bob"}
    async with serve(make_app(settings_for(tmp_path, fake.url, api_keys=keys))) as address:
        yield address


async def test_episodes_are_stored_read_forgotten_and_cleaned_up_over_rest(server: str) -> None:
    async with http(server, "key-alice") as alice:
        body = {"content": "The user asked for vegan recipes", "scope": "kitchen"}
        response = await alice.post("/memory/episodes", json=body | {"importance": 7})
        assert response.status_code == 201, response.text
        made = response.json()
        assert (made["scope"], made["importance"], made["consolidated"]) == ("kitchen", 7.0, False)
        assert "vector" not in made
        assert "user_id" not in made
        await alice.post("/memory/episodes", json={"content": "Other", "scope": "garden"})
        listed = (await alice.get("/memory/episodes", params={"scope": "kitchen"})).json()
        assert [e["id"] for e in listed["episodes"]] == [made["id"]]
        got = (await alice.get(f"/memory/episodes/{made['id']}")).json()
        assert got["reference_count"] == 1
        gone = (await alice.post(f"/memory/episodes/{made['id']}/forget")).json()
        assert gone["expires_at"] < made["expires_at"]
        counts = (await alice.post("/memory/episodes/cleanup", json={"max_entries": 10})).json()
        assert counts == {"expired_deleted": 1, "capacity_deleted": 0, "remaining": 1}
        assert (await alice.get(f"/memory/episodes/{made['id']}")).status_code == 404
        async with http(server, "key-bob") as bob:
            assert (await bob.get("/memory/episodes")).json() == {"episodes": []}
        for bad in (
            {"content": "x", "scope": "a b"},
            {"content": "x"},
            {"content": "", "scope": "k"},
        ):
            assert (await alice.post("/memory/episodes", json=bad)).status_code == 400
        await alice.delete("/memory/long-term")
        assert (await alice.get("/memory/episodes")).json() == {"episodes": []}


class SlowConsolidator:
    """Consolidates one episode per run, taking 50 ms; notes when each run starts and ends."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, float, float]] = []

    async def run(self, user_id: str, *, dry_run: bool = False) -> ConsolidationReport:
        started = anyio.current_time()
        await anyio.sleep(0.05)
        self.runs.append((user_id, started, anyio.current_time()))
        return ConsolidationReport(episodes=1, groups=1, dry_run=dry_run, consolidated=1)


async def test_the_scheduled_consolidation_pauses_after_each_users_run_by_its_share() -> None:
    async with world(consolidation_share=0.25) as w:
        now = w.deps.clock.now()
        for user in ("u1", "u2"):
            made = new_episode(f"ep_00000000000000{user[-1]}a", user, "pending", "b", now)
            await w.store.episodes.put_episodes([(made, [1.0])])
        slow = SlowConsolidator()
        deps = dataclasses.replace(w.deps, consolidator=cast(Consolidator, slow))
        await Sweeper(deps, w.registry).sweep_once()
    [(_, _, first_end), (_, second_start, _)] = slow.runs
    first = slow.runs[0][2] - slow.runs[0][1]
    # At a quarter of the time, each run of d seconds is followed by 3d of rest.
    assert second_start - first_end >= 3 * first * 0.99
