"""Crash consistency of fact writes: ``mnemo serve`` killed (SIGKILL) at random points
while agents store facts over REST, and started again on the same data directory, several
times. Every fact the server answered 201 for is listed, found by search and read back by
id afterwards, with the log entry of its addition; no fact is stored twice (a journal
replayed into a table that already held part of it).

The kill points come from a seeded random generator; the seed is in the failure message.
"""

from __future__ import annotations

import random
import signal
import zlib
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from testing.fake_ollama import FakeOllama
from tests.harness import serve_process

pytestmark = pytest.mark.anyio

AGENTS = 4
KILLS = 3
#: Facts an agent stores in a cycle at most: all of them fit one page of the event log.
FACTS = 40


def _env(fake: FakeOllama) -> dict[str, str]:
    unlimited = ("MNEMO_USER_RATE", "MNEMO_USER_BURST", "MNEMO_RATE_LIMIT", "MNEMO_RATE_BURST")
    return {
        "MNEMO_OLLAMA_URL": fake.url,
        "MNEMO_EMBEDDER": "hash",
        # Moves into the tables happen often, so kills land in them too.
        "MNEMO_ARCHIVE_FLUSH_INTERVAL": "0.2",
        # Agents writing back to back: no budget to wait for.
        **dict.fromkeys(unlimited, "1000000"),
    }


async def agent(address: str, name: str, cycle: int, acked: dict[str, str]) -> None:
    """Store facts one after another until the server goes away; ``acked``: the id of each
    fact answered 201, by the unique word it holds."""
    async with httpx.AsyncClient(base_url=f"http://{address}", timeout=30) as client:
        for n in range(1, FACTS + 1):
            word = f"zq{name}c{cycle}n{n}"
            # Words of their own, so that no fact is a near-duplicate of another.
            content = " ".join(
                [word, *(f"w{zlib.crc32(f'{word}/{k}'.encode())}" for k in range(6))]
            )
            try:
                answer = await client.post(
                    "/memory/long-term", json={"content": content, "category": "knowledge"}
                )
            except httpx.HTTPError:
                return  # killed
            assert answer.status_code == 201, answer.text
            [added] = answer.json()["added"]
            acked[word] = added["id"]


async def test_killing_the_server_while_agents_store_facts_loses_no_acknowledged_fact(
    tmp_path: Path, fake: FakeOllama
) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    data = tmp_path / "data"
    acked: dict[str, str] = {}
    for cycle in range(KILLS):
        with serve_process(data, **_env(fake)) as (address, process):
            async with anyio.create_task_group() as tg:
                for i in range(AGENTS):
                    tg.start_soon(agent, address, f"a{i}", cycle, acked)
                await anyio.sleep(rng.uniform(0.3, 2.0))
                process.send_signal(signal.SIGKILL)
    context = f"seed {seed}"
    assert len(acked) > 30, context
    with serve_process(data, **_env(fake)) as (address, _):
        async with httpx.AsyncClient(base_url=f"http://{address}", timeout=60) as client:
            items: list[dict[str, Any]] = []
            while True:
                page = await client.get(
                    "/memory/long-term",
                    params={"kind": "facts", "limit": 200, "offset": len(items)},
                )
                got = page.json()["items"]
                items += got
                if not got:
                    break
            ids = {item["id"] for item in items}
            missing = {word for word, ident in acked.items() if ident not in ids}
            unread, unfound = [], []
            for word in rng.sample(sorted(acked), 10):
                one = await client.get(f"/memory/long-term/{acked[word]}")
                if one.status_code != 200 or word not in one.json()["content"]:
                    unread.append(word)
                found = await client.get(
                    "/memory/search", params={"q": word, "mode": "keyword", "kind": "facts"}
                )
                if not any(hit["id"] == acked[word] for hit in found.json()["hits"]):
                    unfound.append(word)
            logged = await client.get(
                "/memory/events", params={"type": "fact_created", "limit": 500}
            )
    assert missing == set(), context
    # Written but killed before its answer went out: there, unacknowledged. Never twice.
    contents = [item["content"] for item in items]
    assert len(ids) == len(items) == len(set(contents)), context
    assert unread == [], context
    assert unfound == [], context
    assert logged.status_code == 200, context
    logged_ids = {e["payload"].get("fact_id") for e in logged.json()["events"]}
    assert set(acked.values()) <= logged_ids, context
