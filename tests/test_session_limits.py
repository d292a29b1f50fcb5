"""Sessions resume with the turn count their archive proves, a turn number is never used
twice, and one user's live sessions are capped."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from actors.errors import TooManySessions
from schemas.wire import Ack, Chat, Done, End, ServerMessage, Turn
from testing.fake_ollama import FakeOllama
from tests.actor_world import world
from tests.harness import Client, make_app, serve, settings_for

pytestmark = pytest.mark.anyio


async def test_a_session_that_died_before_its_first_snapshot_resumes_from_its_archive() -> None:
    async with world() as w:
        for n in (1, 2, 3):
            await w.ask(Turn(id=f"t{n}", user=f"u{n}", assistant=f"a{n}"))
        await w.ask(End())
        # As if the process died before it ever wrote the session's working memory.
        w.store.working.pop(("u1", "s1"), None)
        actor, resumed = await w.registry.open("u1", "s1")
        [ack] = await w.ask(Turn(id="t4", user="u4", assistant="a4"))
    assert resumed is True
    assert ack == Ack(id="t4", turn=4)
    assert actor.turn_count == 4


async def test_a_new_session_id_starts_at_turn_one_without_reading_anyone_elses() -> None:
    async with world() as w:
        await w.ask(Turn(id="t1", user="u", assistant="a"), user="bob")
        actor, resumed = await w.registry.open("u1", "s1")
        [ack] = await w.ask(Turn(id="t1", user="u", assistant="a"))
    assert (resumed, actor.turn_count, ack) == (False, 1, Ack(id="t1", turn=1))


@pytest.mark.parametrize("failures", [0, 2], ids=["durable", "a-failed-write"])
async def test_done_is_sent_once_the_chat_is_in_the_archive_or_its_write_failed(
    failures: int,
) -> None:
    async with world() as w:
        w.llm.script = ["a reply"]
        w.store.fail_appends = failures  # the write lands after that many retries
        outbox, replies = anyio.create_memory_object_stream[ServerMessage](100)
        with outbox:
            await w.registry.submit("u1", "s1", Chat(id="c1", content="hello"), outbox)
        archived: set[tuple[str, str]] = set()
        with replies, anyio.fail_after(10):
            async for reply in replies:
                if isinstance(reply, Done):  # nothing awaited since it was sent
                    archived = {(m.role, m.text) for m in w.store.messages}
        await w.writer.call(_nothing)  # the retries land meanwhile
        landed = {(m.role, m.text) for m in w.store.messages}
    exchange = {("user", "hello"), ("assistant", "a reply")}
    assert exchange <= landed
    # A failed write does not hold the done back: it goes out at once, and the exchange
    # is written when the store answers again.
    assert (exchange <= archived) is (failures == 0)


async def _nothing() -> None:
    return None


async def test_a_user_past_the_session_cap_gets_too_many_sessions_and_others_do_not() -> None:
    async with world(max_sessions_per_user=2) as w:
        await w.registry.open("u1", "a")
        await w.registry.open("u1", "b")
        with pytest.raises(TooManySessions):
            await w.registry.open("u1", "c")
        await w.registry.open("u2", "c")  # another user is not counted against u1
        _, resumed = await w.registry.open("u1", "a")  # a live one is still reachable
        await w.ask(End(), session="b")
        with anyio.fail_after(5):
            while True:  # the ended actor leaves; then a new session fits
                try:
                    await w.registry.open("u1", "c")
                    break
                except TooManySessions:
                    await anyio.sleep(0.01)
    assert resumed is True


@pytest.fixture
async def capped(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    keys = {"key-a": "alice", "key-b": "bob"}
    settings = settings_for(tmp_path, fake.url, api_keys=keys, max_sessions_per_user=1)
    async with serve(make_app(settings)) as address:
        yield address


async def test_the_session_beyond_the_cap_is_told_and_closed(capped: str) -> None:
    async with Client.connect(capped, "first", token="key-a") as first:
        await first.receive()
        async with Client.connect(capped, "second", token="key-a") as second:
            refused = await second.receive()
            with anyio.fail_after(5):
                await second.connection.wait_closed()
        async with Client.connect(capped, "second", token="key-b") as other:
            ready = await other.receive()
        await first.send(type="turn", id="t1", user="still", assistant="fine")
        ack, _ = await first.until("ack")
    assert refused["type"] == "error"
    assert refused["code"] == "too_many_sessions"
    assert second.connection.close_code == 1008
    assert ready["type"] == "ready"
    assert ack["turn"] == 1


async def test_ending_a_session_deletes_its_snapshot_and_purges_old_versions() -> None:
    async with world() as w:
        await w.ask(Turn(id="t1", user="u", assistant="a"))
        await w.ask(Turn(id="t1", user="u", assistant="a"), session="other")
        await w.ask(End())
        purges = w.store.working_purges
        await w.writer.call(_nothing)  # the other session's snapshot is written by now
    assert purges == 1
    assert ("u1", "s1") not in w.store.working
    assert ("u1", "other") in w.store.working
