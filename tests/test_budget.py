"""Each user's budget of work, over all their connections and requests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from memory.ratelimit import TokenBucket
from server.budget import UNIT_BYTES, cost_of
from testing.fake_ollama import FakeOllama
from tests.harness import Client, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

KEYS = {"key-eve": "eve", "key-bob": "bob"}


def test_a_bucket_spends_by_cost_and_into_debt_within_a_limit() -> None:
    bucket = TokenBucket(rate=10.0, burst=20.0, now=0.0)
    assert bucket.take(0.0, cost=15.0)
    assert not bucket.take(0.0, cost=6.0)
    assert bucket.spend(0.0, 25.0, limit=1.0) is None  # would owe 2 s: nothing spent
    assert bucket.spend(0.0, 10.0) == pytest.approx(0.5)  # 5 left, 10 spent: 0.5 s of debt
    assert not bucket.take(0.4)
    assert bucket.take(1.0, cost=4.0)


def test_a_frame_costs_one_unit_and_one_more_per_four_kibibytes() -> None:
    assert cost_of(0) == 1.0
    assert cost_of(UNIT_BYTES * 16) == 17.0


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    settings = settings_for(tmp_path, fake.url, api_keys=KEYS, user_rate=1.0, user_burst=30.0)
    async with serve(make_app(settings)) as address:
        yield address


async def test_big_frames_on_several_connections_share_one_users_budget(server: str) -> None:
    query = "x" * (UNIT_BYTES * 8)  # over 9 units a frame: three fit in the burst of 30
    codes = []
    async with (
        Client.connect(server, "a", token="key-eve") as first,
        Client.connect(server, "b", token="key-eve") as second,
        Client.connect(server, "c", token="key-bob") as bob,
    ):
        for client in (first, second, bob):
            await client.receive()
        for n, client in enumerate([first, second, first, second]):
            await client.send(type="context", id=f"q{n}", query=query)
            answer = await client.receive()
            codes.append(answer.get("code", answer["type"]))
        await bob.send(type="context", id="b", query=query)
        bobs = await bob.receive()
    assert codes == ["context", "context", "context", "rate_limited"]
    assert bobs["type"] == "context"


async def test_a_rest_request_beyond_the_budget_is_refused_with_429(
    tmp_path: Path, fake: FakeOllama
) -> None:
    # 5 units saved, 1 a second: a request may wait 5 s, so up to 10 units are admitted.
    settings = settings_for(tmp_path, fake.url, api_keys=KEYS, user_rate=1.0, user_burst=5.0)
    headers = {"Authorization": "Bearer key-eve"}
    async with (
        serve(make_app(settings)) as server,
        httpx.AsyncClient(base_url=f"http://{server}", headers=headers) as client,
    ):
        huge = await client.get("/memory/search", params={"q": "y" * (UNIT_BYTES * 12)})
        small = await client.get("/memory/search", params={"q": "tea"})
    assert huge.status_code == 429
    assert huge.json()["error"]["code"] == "rate_limited"
    assert small.status_code == 200


async def test_an_oversized_frame_is_refused_and_still_costs_its_user(server: str) -> None:
    async with Client.connect(server, "a", token="key-eve") as client:
        await client.receive()
        await client.send(type="context", id="big", query="x" * (UNIT_BYTES * 40))
        refused = await client.receive()
        await client.send(type="ping")
        after = await client.receive()
    assert (refused["code"], refused["id"]) == ("bad_request", "big")
    assert after["code"] == "rate_limited"
