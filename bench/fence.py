"""What fencing a user costs a cluster node: the time a user's first request in a new
holding of their shard waits while the node gives their rows its epoch
(``server.adapters.lance_epochs``), on moto's S3 server and on a local directory.

    python -m bench.fence [--users 20] [--facts 40]

Each user holds what a person of a few weeks' chats holds: ``--facts`` facts, 5
entities, 3 rules, 2 app notes, a profile, 2 working-memory snapshots, 3 episodes, 10
links and 10 audit events, written by a node at epoch 1. A node at epoch 2 then fences
each user in turn (one ``update`` per table holding rows of theirs, at once, then the
record: an object in the bucket; in memory for the local directory); a user with no
rows at all is fenced too (what a new user costs), and 200 new users 32 at a time (a
dead node's users arriving at once), and the users with rows again, all at once. Also
timed: a fact's replacement, before and after, as the writers do it (conditional on
the epoch). Writes ``bench/results/fence.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio

from bench.common import machine, percentiles, write_result
from memory.episodes import new_episode
from memory.facts import Stored
from memory.hashing import HashEmbedder
from memory.rules import StoredRule, new_rule
from schemas.records import (
    AppNote,
    Entity,
    MemoryEvent,
    MemoryLink,
    UserProfile,
    WorkingMemory,
)
from server.adapters.lance_fences import KeptRecords, Records
from server.adapters.lance_store import LanceStore
from server.cluster.node import FenceRecords
from server.cluster.objects import Objects
from testing.records import make_fact
from testing.s3_server import moto_server

_BUCKET = "mnemo-fence"
_T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
_embedder = HashEmbedder()


async def _fill(store: LanceStore, user: str, facts: int) -> None:
    def at(n: int) -> datetime:
        return _T0 + timedelta(seconds=n)

    await store.facts.add_facts(
        [
            Stored(
                make_fact(f"fact_{n:08x}", user_id=user, content=f"{user} fact {n}"),
                _embedder.embed_one(f"{user} fact {n}"),
            )
            for n in range(facts)
        ]
    )
    await store.entities.put_entities(
        [
            Entity(
                id=f"ent_{n:08x}",
                user_id=user,
                canonical_name=f"Name {n}",
                entity_type="person",
                created_at=at(n),
                updated_at=at(n),
            )
            for n in range(5)
        ]
    )
    rules = [new_rule(f"rule_{n:08x}", user, f"Rule {n}", _T0) for n in range(3)]
    await store.rules.put_rules([StoredRule(r, _embedder.embed_one(r.content)) for r in rules])
    await store.facts.put_notes(
        [
            AppNote(
                id=f"note_{n:08x}",
                user_id=user,
                app_id="chat",
                content=f"Note {n}",
                created_at=at(n),
                updated_at=at(n),
            )
            for n in range(2)
        ]
    )
    await store.facts.put_profile(UserProfile(user_id=user, work="writes code"))
    await store.put_working(
        [
            (
                user,
                WorkingMemory(
                    session_id=f"s{n}",
                    current_topic="tea",
                    context_variables={},
                    turn_count=n,
                    last_emotion=None,
                    created_at=_T0,
                    updated_at=_T0,
                ),
            )
            for n in range(2)
        ]
    )
    episodes = [new_episode(f"ep_{n:016x}", user, f"Day {n}", "work", _T0) for n in range(3)]
    await store.episodes.add_episodes([(e, _embedder.embed_one(e.content)) for e in episodes])
    await store.links.add_links(
        [
            MemoryLink(
                user_id=user,
                source_type="fact",
                source_id=f"fact_{n:08x}",
                target_type="rule",
                target_id="rule_00000000",
                relation="related_to",
                created_at=at(n),
            )
            for n in range(10)
        ]
    )
    await store.events.append_events(
        [
            MemoryEvent(
                id=f"evt_{user}_{n}",
                user_id=user,
                event_type="fact_created",
                created_at=at(n),
                actor="bench",
            )
            for n in range(10)
        ]
    )


async def _measure(uri: str, users: int, facts: int, records: Records) -> dict[str, Any]:
    old = LanceStore(uri, embedder=_embedder, shared=True)
    new = LanceStore(uri, embedder=_embedder, shared=True)
    await old.open()
    await new.open()
    old.epochs.serve_with(lambda _user: 1, records=records)
    new.epochs.serve_with(lambda _user: 2, records=records)
    try:
        names = [f"user-{n}" for n in range(users)]
        for name in names:
            await _fill(old, name, facts)
        replace_before = await _replacements(old, names)
        await new.refresh()
        fenced, rows = [], 0
        for name in names:
            began = time.perf_counter()
            rows += await new.epochs.restamp(name, 2)
            fenced.append((time.perf_counter() - began) * 1000)
        empty = []
        for n in range(users):
            began = time.perf_counter()
            await new.epochs.restamp(f"nobody-{n}", 2)
            empty.append((time.perf_counter() - began) * 1000)
        replace_after = await _replacements(new, names)
        crowd = await _crowd(new, [f"crowd-{n}" for n in range(200)], 32, 2)
        again = await _crowd(new, names, len(names), 3)
        return {
            "rows_per_user": rows // users,
            "fence_ms": _rounded(percentiles(fenced)),
            "fence_new_user_ms": _rounded(percentiles(empty)),
            "fence_200_new_users_32_at_once": crowd,
            "fence_all_users_at_once_again": again,
            "fact_replacement_ms": {
                "written_at_epoch_1": _rounded(percentiles(replace_before)),
                "after_the_fence": _rounded(percentiles(replace_after)),
            },
        }
    finally:
        await old.aclose()
        await new.aclose()


async def _crowd(store: LanceStore, users: list[str], at_once: int, epoch: int) -> dict[str, Any]:
    limiter = anyio.CapacityLimiter(at_once)
    took: list[float] = []

    async def fence(user: str) -> None:
        async with limiter:
            began = time.perf_counter()
            await store.epochs.restamp(user, epoch)
            took.append((time.perf_counter() - began) * 1000)

    began = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for user in users:
            tasks.start_soon(fence, user)
    return {"total_s": round(time.perf_counter() - began, 2), "ms": _rounded(percentiles(took))}


async def _replacements(store: LanceStore, names: list[str]) -> list[float]:
    took = []
    for name in names:
        fact = make_fact("fact_00000000", user_id=name, content=f"{name} fact 0, again")
        began = time.perf_counter()
        await store.facts.put_facts([Stored(fact, _embedder.embed_one(fact.content))])
        took.append((time.perf_counter() - began) * 1000)
    return took


def _rounded(values: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 1) for k, v in values.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--facts", type=int, default=40)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        place = f"{tmp}/db"
        results["local directory"] = asyncio.run(
            _measure(place, args.users, args.facts, KeptRecords())
        )
    with moto_server(_BUCKET) as s3:
        os.environ.update(s3)
        records = FenceRecords(Objects(f"s3://{_BUCKET}/cluster", s3))
        uri = f"s3://{_BUCKET}/data"
        results["moto S3 server"] = asyncio.run(_measure(uri, args.users, args.facts, records))
    for place, result in results.items():
        print(f"{place}: {result}")
    path = write_result(
        "fence",
        {
            "machine": machine(),
            "setup": f"{args.users} users of {args.facts} facts and ~40 other rows each, "
            "hash embedder, one process; moto's S3 server on this machine",
            "results": results,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
