"""Crash consistency: ``mnemo serve`` killed (SIGKILL) at random points under load, and
started again on the same data directory, several times. Every acknowledged turn and
every finished chat is archived and found by search, each session resumes with at least
the turn count its clients saw, and no turn number is ever given out twice.

The kill points come from a seeded random generator; the seed is in the failure message.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from testing.fake_ollama import FakeOllama
from testing.ports import free_port
from tests.harness import Client

pytestmark = pytest.mark.anyio

SESSIONS = 4
KILLS = 3


@dataclass
class Seen:
    """What the clients of one session were told."""

    #: Turn numbers in acks and dones, in the order they came (across restarts).
    numbers: list[int] = field(default_factory=list)
    #: Texts of exchanges the server said it archived.
    texts: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)


@contextmanager
def serving(data: Path, ollama: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    env = {
        **os.environ,
        "MNEMO_DATA_DIR": str(data),
        "MNEMO_PORT": str(port),
        "MNEMO_LLM_URL": ollama,
        "MNEMO_EMBEDDER": "hash",
        "MNEMO_LLM_TIMEOUT": "5",
        # Moves into the table happen often, so kills land in them too; working-memory
        # snapshots every 5 s (the default), so most kills come before a session's first.
        "MNEMO_ARCHIVE_FLUSH_INTERVAL": "0.2",
        # Every user's index saved whenever it has rested 0.1 s: kills land in saves,
        # and restarts read saved indexes (which must hold every acknowledged turn).
        "MNEMO_SAVE_INDEX_FROM": "0",
        "MNEMO_SAVE_INDEX_AFTER": "0.1",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                assert time.monotonic() < deadline, "mnemo serve did not start in 60 s"
                time.sleep(0.05)
        yield f"127.0.0.1:{port}", process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        if process.stderr:
            process.stderr.close()


async def load(address: str, session: str, seen: Seen, cycle: int, problems: list[Any]) -> None:
    """Turns and chats on ``session`` until the server goes away; records what it said."""
    try:
        async with Client.connect(address, session) as client:
            ready = await client.receive()
            if seen.numbers and not (ready["resumed"] and ready["turn_count"] >= max(seen.numbers)):
                problems.append(("resumed behind", session, ready, max(seen.numbers)))
            n = 0
            while True:
                n += 1
                word = f"zq{session}c{cycle}n{n}"
                ident = f"c{cycle}-{n}"
                if n % 3:
                    user, assistant = f"note {word}", f"kept {n}"
                    await client.send(type="turn", id=ident, user=user, assistant=assistant)
                    answer, _ = await client.until("ack", timeout=30)
                else:
                    user, assistant = f"chat {word}", "OK"
                    await client.send(type="chat", id=ident, content=user)
                    answer, _ = await client.until("done", timeout=30)
                seen.numbers.append(answer["turn"])
                seen.texts += [user, assistant]
                seen.words.append(word)
    except (ConnectionClosed, OSError):
        return  # killed


async def messages(address: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    async with httpx.AsyncClient(base_url=f"http://{address}", timeout=60) as client:
        while True:
            page = await client.get(
                "/memory/long-term", params={"kind": "turns", "limit": 200, "offset": len(items)}
            )
            got = page.json()["items"]
            items += got
            if not got:
                return items


async def test_killing_the_server_under_load_loses_no_acked_turn_and_reuses_no_number(
    tmp_path: Path, fake: FakeOllama
) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    fake.record = False
    data = tmp_path / "data"
    seen = {f"s{i}": Seen() for i in range(SESSIONS)}
    problems: list[Any] = []
    for cycle in range(KILLS):
        with serving(data, fake.url) as (address, process):
            async with anyio.create_task_group() as tg:
                for session, record in seen.items():
                    tg.start_soon(load, address, session, record, cycle, problems)
                await anyio.sleep(rng.uniform(0.2, 2.0))
                process.send_signal(signal.SIGKILL)
    with serving(data, fake.url) as (address, _):
        async with anyio.create_task_group() as tg:  # one more round: numbers go on
            for session, record in seen.items():
                tg.start_soon(load, address, session, record, KILLS, problems)
            await anyio.sleep(0.5)
            tg.cancel_scope.cancel()
        stored = {m["text"] for m in await messages(address)}
        async with httpx.AsyncClient(base_url=f"http://{address}", timeout=60) as client:
            missing_from_search = []
            for record in seen.values():
                for word in rng.sample(record.words, min(5, len(record.words))):
                    found = await client.get(
                        "/memory/search", params={"q": word, "mode": "keyword", "kind": "turns"}
                    )
                    if not any(word in hit["text"] for hit in found.json()["hits"]):
                        missing_from_search.append(word)
    context = f"seed {seed}"
    assert problems == [], context
    for session, record in seen.items():
        assert len(record.numbers) == len(set(record.numbers)), (context, session)
        assert record.numbers == sorted(record.numbers), (context, session)
        assert set(record.texts) <= stored, (context, session, set(record.texts) - stored)
    assert sum(len(r.numbers) for r in seen.values()) > 50, context
    assert missing_from_search == [], context
