"""The adversarial suite: hypothesis-generated hostile WebSocket frames and REST requests
against the real app (uvicorn, LanceDB, fake Ollama), while another user keeps sending
turns. Every answer must be documented (codes, statuses), carry the refused frame's id,
leave no traceback or ERROR log, and the other user's turns must all be acknowledged.

Volume per run: ``FRAME_EXAMPLES`` batches of 20-60 frames and ``REST_EXAMPLES`` batches
of 20-40 requests, over 10,000 in all (the last test counts them; it runs after the two
fuzzing tests, which share the module's server, bystander and tallies).
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings

from testing.fake_ollama import FakeOllama
from tests.harness import EMPTY_EXTRACTION, Client, make_app, serve, settings_for
from tests.hostile import ERROR_CODES, REST_CODES, Frame, Request, frames, requests

pytestmark = pytest.mark.anyio

FRAME_EXAMPLES = 150
CONNECTIONS = 4
REST_EXAMPLES = 110
MAX_FRAME = 16384
KEYS = {"key-eve": "eve", "key-bob": "bob"}
_SERVER_TYPES = {"ready", "delta", "done", "ack", "context", "memory", "error", "pong"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Bystander:
    """Bob, another user, sending a turn every 20 ms and waiting for its ack."""

    acked: int = 0
    failures: list[Any] = field(default_factory=list)
    worst_ms: float = 0.0

    async def run(self, address: str) -> None:
        async with Client.connect(address, "bystander", token="key-bob") as bob:
            await bob.receive()
            n = 0
            while True:
                n += 1
                started = anyio.current_time()
                await bob.send(type="turn", id=f"b{n}", user=f"bob {n}", assistant="ok")
                try:
                    answer, _ = await bob.until("ack", timeout=30)
                except TimeoutError:
                    self.failures.append(("no ack", n))
                    continue
                if answer["id"] != f"b{n}" or answer["turn"] != self.acked + 1:
                    self.failures.append(answer)
                self.acked += 1
                self.worst_ms = max(self.worst_ms, (anyio.current_time() - started) * 1000)
                await anyio.sleep(0.02)


@dataclass
class World:
    address: str
    bob: Bystander
    #: Eve's turn numbers (acks and dones) per connection, in order: each must exceed
    #: the one before.
    turns: dict[int, list[int]] = field(default_factory=dict)
    sent: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    batches: int = 0


@pytest.fixture(scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    data: Path = tmp_path_factory.mktemp("adversarial")
    async with FakeOllama(models=["llama3.2"], json_default=EMPTY_EXTRACTION) as fake:
        settings = settings_for(
            data,
            fake.url,
            api_keys=KEYS,
            rate_limit=1e6,
            rate_burst=1e6,
            user_rate=1e6,
            user_burst=1e6,
            mailbox_size=1024,
            max_frame_bytes=MAX_FRAME,
        )
        async with serve(make_app(settings)) as address, anyio.create_task_group() as tg:
            bob = Bystander()
            tg.start_soon(bob.run, address)
            yield World(address, bob)
            tg.cancel_scope.cancel()


async def exchange(client: Client, batch: list[Frame], sync: str) -> list[dict[str, Any]]:
    """Send ``batch``, then a ``context`` request ``sync``; every frame answered before its
    answer, in order (pushed ``memory`` frames without an id are left out). What an
    earlier, interrupted exchange left unread is read and dropped first."""
    await client.send(type="context", id=f"pre-{sync}", query="sync", format="conversation")
    while (await client.receive(timeout=60)).get("id") != f"pre-{sync}":
        pass
    for frame in batch:
        await client.connection.send(frame.payload)
    await client.send(type="context", id=sync, query="sync", format="conversation")
    answers: list[dict[str, Any]] = []
    while True:
        answer = await client.receive(timeout=60)
        if answer.get("id") == sync and answer["type"] == "context":
            return answers
        if answer["type"] == "memory" and answer.get("id") is None:
            continue
        answers.append(answer)


def check_answers(
    world: World, connection: int, batch: list[Frame], everything: list[dict[str, Any]]
) -> None:
    turns = world.turns.setdefault(connection, [])
    answers: dict[Any, list[dict[str, Any]]] = {}
    for answer in everything:
        answers.setdefault(answer.get("id"), []).append(answer)
        assert answer["type"] in _SERVER_TYPES, answer
        if answer["type"] == "error":
            assert answer["code"] in ERROR_CODES, answer
            assert answer["message"], answer
        if answer["type"] in ("ack", "done"):
            if turns:
                assert answer["turn"] > turns[-1], (answer, turns[-5:])
            turns.append(answer["turn"])
    pings = sum(1 for f in batch if f.kind == "valid:ping")
    assert sum(1 for a in everything if a["type"] == "pong") == pings
    for frame in batch:
        world.sent[frame.kind] += 1
        mine = answers.get(frame.id, []) if frame.id is not None else []
        kinds = [a["type"] for a in mine]
        codes = [a.get("code") for a in mine if a["type"] == "error"]
        if frame.kind == "valid:turn":
            assert kinds == ["ack"], (frame.payload[:300], mine)
        elif frame.kind == "valid:chat":
            assert kinds[-1:] == ["done"], (frame.payload[:300], mine)
            assert set(kinds) <= {"delta", "done"}, mine
        elif frame.kind == "valid:context":
            assert kinds == ["context"], (frame.payload[:300], mine)
        elif frame.kind == "valid:remember":
            assert kinds == ["memory"] or codes == ["bad_request"], (frame.payload[:300], mine)
        elif frame.kind == "valid:set":
            assert kinds == [] or codes == ["bad_request"], (frame.payload[:300], mine)
        elif frame.kind == "invalid":
            if frame.id is not None:
                assert kinds == ["error"], (frame.payload[:300], mine)
                assert codes == ["bad_request"], mine
        elif frame.kind == "free" and frame.id is not None:
            assert all(a["type"] in _SERVER_TYPES for a in mine)
    # Refused frames without a usable id are answered without one.
    unnamed = [a for a in answers.get(None, []) if a["type"] == "error"]
    assert all(a["code"] == "bad_request" for a in unnamed), unnamed


_FUZZ = settings(
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)


@pytest.fixture(scope="module")
async def eves(world: World) -> AsyncIterator[list[Client]]:
    """The attacker's connections, one session each, kept across examples (refusals never
    close them); a batch is spread over them and they are answered concurrently."""
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for n in range(CONNECTIONS):
            client = await stack.enter_async_context(
                Client.connect(world.address, f"fuzz{n}", token="key-eve")
            )
            await client.receive()
            clients.append(client)
        yield clients


def bystander_unharmed(world: World, caplog: pytest.LogCaptureFixture) -> None:
    logged = [
        f"{r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.levelname in ("ERROR", "CRITICAL") or r.exc_info
    ]
    assert logged == []
    assert world.bob.failures == []


@settings(_FUZZ, max_examples=FRAME_EXAMPLES)
@given(batch=frames(MAX_FRAME))
async def test_hostile_frames_get_documented_answers_and_another_users_turns_are_acked(
    world: World, eves: list[Client], caplog: pytest.LogCaptureFixture, batch: list[Frame]
) -> None:
    world.batches += 1

    async def one(n: int) -> None:
        mine = batch[n::CONNECTIONS]
        answers = await exchange(eves[n], mine, f"sync{world.batches}")
        check_answers(world, n, mine, answers)

    async with anyio.create_task_group() as tg:
        for n in range(CONNECTIONS):
            tg.start_soon(one, n)
    bystander_unharmed(world, caplog)


async def send(client: httpx.AsyncClient, request: Request) -> httpx.Response:
    return await client.request(
        request.method,
        request.path,
        params=request.params,
        content=request.body,
        headers=request.headers,
    )


def check_response(request: Request, response: httpx.Response) -> None:
    described = f"{request.method} {request.path} {request.params} -> {response.status_code}"
    assert response.status_code in request.expect, (described, response.text[:300])
    if response.status_code >= 400:
        body = response.json()
        assert body["error"]["code"] in REST_CODES, (described, body)
        assert body["error"]["message"], (described, body)
    elif request.path == "/memory/export":
        for line in filter(None, response.text.split("\n")):  # not splitlines: U+2028 ...
            json.loads(line)
    elif request.headers.get("accept") == "application/x-ndjson":
        lines = [json.loads(line) for line in filter(None, response.text.split("\n"))]
        assert "imported" in lines[-1], (described, lines[-1])
    else:
        response.json()


@settings(_FUZZ, max_examples=REST_EXAMPLES)
@given(batch=requests())
async def test_hostile_rest_requests_get_documented_statuses_and_another_users_turns_are_acked(
    world: World, caplog: pytest.LogCaptureFixture, batch: list[Request]
) -> None:
    headers = {"Authorization": "Bearer key-eve"}
    base = f"http://{world.address}"
    async with (
        httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as eve,
        httpx.AsyncClient(base_url=base, timeout=60) as stranger,
    ):

        async def some(first: int) -> None:
            for n in range(first, len(batch), CONNECTIONS):
                request = batch[n]
                anonymous = n % 10 == 9 and request.path != "/healthz"
                response = await send(stranger if anonymous else eve, request)
                if anonymous and response.status_code != 404:
                    assert response.status_code in (401, 405), (request, response.text)
                else:
                    check_response(request, response)
                world.statuses[str(response.status_code)] += 1

        async with anyio.create_task_group() as tg:  # a few at a time, as clients do
            for first in range(CONNECTIONS):
                tg.start_soon(some, first)
    bystander_unharmed(world, caplog)


async def test_the_fuzzing_above_sent_over_ten_thousand_frames_and_requests(world: World) -> None:
    frames_sent, requests_sent = sum(world.sent.values()), sum(world.statuses.values())
    assert frames_sent + requests_sent >= 10_000, (world.sent, world.statuses)
    print(f"fuzzed {frames_sent} frames and {requests_sent} requests")
    assert set(world.sent) >= {
        "valid:turn",
        "valid:chat",
        "valid:context",
        "valid:remember",
        "valid:set",
        "valid:ping",
        "invalid",
        "free",
    }
    assert {"200", "400", "401", "404"} <= set(world.statuses), world.statuses
    assert world.bob.failures == []
    assert world.bob.acked > 100, world.bob
