"""Session actors, registry and writer under trio's MockClock: idle minutes pass in ms."""

from __future__ import annotations

import gc
import weakref
from datetime import UTC, datetime
from typing import Any

import anyio
import msgspec
import pytest
from trio.testing import MockClock

from actors.errors import LlmTimeout, LlmUnavailable, Overloaded
from actors.importer import import_lines
from actors.mailbox import ActorMessage
from actors.writer import ArchiveWriter
from memory.hashing import HashEmbedder
from schemas.transfer import TurnLine
from schemas.wire import (
    Ack,
    Chat,
    ContextRequest,
    Delta,
    Done,
    End,
    ErrorFrame,
    ServerMessage,
    Turn,
)
from tests.actor_world import world
from tests.fakes import MemoryStore

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return ("trio", {"clock": MockClock(autojump_threshold=0)})


async def test_first_message_creates_working_memory_with_turn_count_one() -> None:
    async with world() as w:
        await w.registry.open("u1", "s1")
        assert w.memory() is None
        [ack] = await w.ask(Turn(id="t1", user="hi", assistant="hello"))
        memory = w.memory()
    assert ack == Ack(id="t1", turn=1)
    assert memory is not None
    assert memory.turn_count == 1
    assert memory.created_at == memory.updated_at


async def test_each_message_increments_turn_count_and_updated_at() -> None:
    async with world() as w:
        await w.ask(Turn(id="t1", user="a", assistant="b"))
        first = w.memory()
        await w.ask(Chat(id="c1", content="c"))
        second = w.memory()
    assert first is not None
    assert second is not None
    assert second.turn_count == 2
    assert second.updated_at > first.updated_at
    assert second.created_at == first.created_at


async def test_idle_session_expires_after_thirty_minutes_and_forgets_working_memory() -> None:
    async with world() as w:
        await w.ask(Turn(id="t1", user="a", assistant="b"))
        assert ("u1", "s1") in w.store.working or w.registry.get("u1", "s1") is not None
        await anyio.sleep(29 * 60)
        assert w.registry.get("u1", "s1") is not None
        await anyio.sleep(2 * 60)
        assert w.registry.get("u1", "s1") is None
        assert ("u1", "s1") not in w.store.working
        assert len(w.store.messages) == 2  # the archive stays


async def test_activity_resets_the_idle_timer() -> None:
    async with world() as w:
        for i in range(4):
            await w.ask(Turn(id=f"t{i}", user="a", assistant="b"))
            await anyio.sleep(20 * 60)
        assert w.registry.get("u1", "s1") is not None


async def test_idle_timeout_is_configurable() -> None:
    async with world(idle_timeout=60.0) as w:
        await w.ask(Turn(id="t1", user="a", assistant="b"))
        await anyio.sleep(61)
        assert w.registry.get("u1", "s1") is None


async def test_a_reply_that_streams_past_the_idle_timeout_does_not_expire_the_session() -> None:
    async with world(idle_timeout=60.0) as w:
        w.llm.script, w.llm.chunk_delay = ["one two three"], 40.0  # two minutes of reply
        replies = await w.ask(Chat(id="c1", content="tell me"))
        assert isinstance(replies[-1], Done)
        await anyio.sleep(59)
        assert w.registry.get("u1", "s1") is not None  # idle counts from the reply's end
        await anyio.sleep(2)
        assert w.registry.get("u1", "s1") is None


async def test_sessions_expire_in_the_order_they_fell_idle() -> None:
    async with world(idle_timeout=60.0) as w:
        for name in ("a", "b", "c"):  # at 0, 15 and 30 s
            await w.ask(Turn(id="t1", user="x", assistant="y"), session=name)
            await anyio.sleep(15)
        await w.ask(Turn(id="t2", user="x", assistant="y"), session="a")  # a again at 45 s

        def live() -> list[str]:
            return [s for s in "abc" if w.registry.get("u1", s) is not None]

        await anyio.sleep(31)  # 76 s: b idle for 61 s, c for 46, a for 31
        assert live() == ["a", "c"]
        await anyio.sleep(15)  # 91 s
        assert live() == ["a"]
        await anyio.sleep(15)  # 106 s
        assert live() == []


async def test_an_ended_session_is_not_kept_in_memory_by_the_idle_timer() -> None:
    async with world() as w:
        await w.ask(Turn(id="t1", user="a", assistant="b"))
        actor = w.registry.get("u1", "s1")
        gone = weakref.ref(actor)
        del actor
        await w.ask(End())
        await anyio.sleep(1)
        gc.collect()
        assert gone() is None


async def test_llm_failure_becomes_error_frame_archives_user_message_and_actor_survives() -> None:
    async with world() as w:
        w.llm.script = [LlmUnavailable("connection refused"), LlmTimeout("no answer"), "fine"]
        [error] = await w.ask(Chat(id="c1", content="first"))
        [timeout] = await w.ask(Chat(id="c2", content="second"))
        replies = await w.ask(Chat(id="c3", content="third"))
        await w.writer.call(_noop)
    assert error == ErrorFrame(id="c1", code="llm_unavailable", message="connection refused")
    assert isinstance(timeout, ErrorFrame)
    assert timeout.code == "llm_timeout"
    assert isinstance(replies[-1], Done)
    assert replies[-1].turn == 3
    assert "".join(r.text for r in replies if isinstance(r, Delta)) == "fine"
    archived = [(m.role, m.text) for m in w.store.messages]
    assert ("user", "first") in archived
    assert ("user", "second") in archived
    assert ("assistant", "fine") in archived


async def test_crashing_actor_is_logged_replaced_and_other_sessions_live_on() -> None:
    async with world() as w:
        await w.ask(Turn(id="t0", user="x", assistant="y"), session="other")
        w.llm.script = [ZeroDivisionError("bug")]
        [error] = await w.ask(Chat(id="c1", content="boom"))
        assert isinstance(error, ErrorFrame)
        assert error.code == "session_closed"
        assert w.registry.crashes == 1
        assert w.registry.get("u1", "other") is not None
        [ack] = await w.ask(Turn(id="t1", user="again", assistant="ok"))
    assert isinstance(ack, Ack)


async def test_mail_queued_behind_end_is_answered_with_session_closed() -> None:
    async with world() as w:
        w.llm.chunk_delay = 1.0
        results: dict[str, list[ServerMessage]] = {}

        async def ask(name: str, message: ActorMessage) -> None:
            results[name] = await w.ask(message)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "chat", Chat(id="c1", content="one two three four"))
            await anyio.sleep(0.5)
            tg.start_soon(ask, "end", End())
            await anyio.sleep(0.1)
            tg.start_soon(ask, "late", ContextRequest(id="q", query="x"))
    assert isinstance(results["chat"][-1], Done)
    assert results["end"] == []
    assert results["late"] == [
        ErrorFrame(id="q", code="session_closed", message="the session has ended")
    ]


async def test_flood_beyond_the_mailbox_is_refused_as_overloaded() -> None:
    async with world(mailbox_size=2) as w:
        w.llm.chunk_delay = 10.0
        outbox, replies = anyio.create_memory_object_stream[ServerMessage](1000)
        refused = 0
        with outbox:
            for i in range(10):
                try:
                    await w.registry.submit("u1", "s1", Chat(id=f"c{i}", content="x"), outbox)
                except Overloaded:
                    refused += 1
        replies.close()
    assert refused >= 6


async def test_acked_turn_waits_for_durability_through_store_failures() -> None:
    async with world() as w:
        w.store.fail_appends = 3
        [ack] = await w.ask(Turn(id="t1", user="a", assistant="b"))
    assert ack == Ack(id="t1", turn=1)
    assert w.writer.stats.retries == 3
    assert [m.text for m in w.store.messages] == ["a", "b"]


async def test_turn_not_durable_in_time_gets_archive_unavailable() -> None:
    async with world(ack_timeout=1.0) as w:
        w.store.fail_appends = 1000
        [error] = await w.ask(Turn(id="t1", user="a", assistant="b"))
    assert isinstance(error, ErrorFrame)
    assert error.code == "archive_unavailable"
    assert error.id == "t1"


async def test_writer_batches_appends_from_many_sessions() -> None:
    async with world() as w:
        w.writer._linger = 0.01

        async def one(session: str) -> None:
            await w.ask(Turn(id="t", user="a", assistant="b"), session=session)

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(one, f"s{i}")
    assert sum(w.store.appends) == 40
    assert len(w.store.appends) < 20


async def test_writer_optimizes_on_schedule_only_after_writes() -> None:
    async with world() as w:
        await anyio.sleep(130)
        assert w.store.optimizes == 0
        await w.ask(Turn(id="t1", user="a", assistant="b"))
        await anyio.sleep(61)
        assert w.store.optimizes == 1


async def test_sessions_of_different_users_with_equal_ids_are_separate_actors() -> None:
    async with world() as w:
        await w.ask(Turn(id="t1", user="a", assistant="b"), user="alice")
        await w.ask(Turn(id="t1", user="c", assistant="d"), user="bob")
        await w.ask(Turn(id="t2", user="e", assistant="f"), user="bob")
        alice = w.registry.get("alice", "s1")
        bob = w.registry.get("bob", "s1")
    assert alice is not None
    assert bob is not None
    assert alice is not bob
    assert alice.turn_count == 1
    assert bob.turn_count == 2


async def _noop() -> None:
    return None


async def test_writer_optimizes_on_schedule_even_under_constant_load() -> None:
    async with world() as w:
        for i in range(15):
            await w.ask(Turn(id=f"t{i}", user="a", assistant="b"))
            await anyio.sleep(10)
        assert w.store.optimizes >= 2


async def test_turns_are_acked_while_a_slow_optimize_runs() -> None:
    async with world() as w:
        w.store.optimize_delay = 300.0
        w.writer._optimize_after_writes = 1
        await w.ask(Turn(id="t0", user="a", assistant="b"))
        await w.writer.call(_noop)  # the optimize has started
        started = anyio.current_time()
        [ack] = await w.ask(Turn(id="t1", user="c", assistant="d"))
        waited = anyio.current_time() - started
        assert w.store.optimizes == 0  # still running
    assert isinstance(ack, Ack)
    assert waited < 1.0


async def test_turns_are_acked_while_a_slow_snapshot_is_written() -> None:
    async with world() as w:
        w.store.working_delay = 300.0
        await w.ask(Turn(id="t0", user="a", assistant="b"))
        await anyio.sleep(2)  # the snapshot of turn 0 is being written
        started = anyio.current_time()
        [ack] = await w.ask(Turn(id="t1", user="c", assistant="d"), session="s2")
        waited = anyio.current_time() - started
        assert ("u1", "s1") not in w.store.working  # still writing
    assert isinstance(ack, Ack)
    assert waited < 1.0


async def test_a_call_without_barrier_does_not_wait_for_a_slow_coalesced_write() -> None:
    started, release, barrier_done = anyio.Event(), anyio.Event(), anyio.Event()

    async def slow_flush() -> None:
        started.set()
        await release.wait()

    async def barrier_call() -> None:
        await writer.call(_noop)
        barrier_done.set()

    writer = ArchiveWriter(MemoryStore(), HashEmbedder())
    writer.add_flusher(slow_flush)
    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        writer.request_flush()
        await started.wait()  # the coalesced write is being written, slowly
        with anyio.fail_after(1):
            await writer.call(_noop, barrier=False)
        tg.start_soon(barrier_call)
        await anyio.sleep(10)
        assert not barrier_done.is_set()  # a barrier lets the coalesced write land first
        release.set()
        with anyio.fail_after(1):
            await barrier_done.wait()
        tg.cancel_scope.cancel()


async def test_writer_optimizes_after_many_writes_without_waiting_for_the_interval() -> None:
    async with world() as w:
        w.writer._optimize_after_writes = 5
        w.writer._flush_rows = 2  # each turn moves into the table: a table write each
        for i in range(6):
            await w.ask(Turn(id=f"t{i}", user="a", assistant="b"))
            await anyio.sleep(0.01)
        await w.writer.call(_noop)
        assert w.store.flushes == 6
        assert w.store.optimizes >= 1


async def test_acked_rows_move_into_the_table_a_second_later_in_one_write() -> None:
    async with world() as w:
        await w.ask(Turn(id="t1", user="a", assistant="b"))
        await w.ask(Turn(id="t2", user="c", assistant="d"), session="s2")
        assert w.store.flushes == 0
        await anyio.sleep(1.1)
        assert w.store.flushes == 1
        await anyio.sleep(10)
        assert w.store.flushes == 1  # nothing new to move


async def test_enough_journaled_rows_move_without_waiting_for_the_interval() -> None:
    async with world() as w:
        w.writer._flush_rows = 4
        await w.ask(Turn(id="t1", user="a", assistant="b"))
        await anyio.sleep(0.01)
        assert w.store.flushes == 0
        await w.ask(Turn(id="t2", user="c", assistant="d"))
        await anyio.sleep(0.01)
        assert w.store.flushes == 1


async def test_turns_are_acked_while_a_slow_move_into_the_table_runs() -> None:
    async with world() as w:
        w.store.flush_delay = 300.0
        await w.ask(Turn(id="t0", user="a", assistant="b"))
        await anyio.sleep(2)  # moving turn 0
        started = anyio.current_time()
        [ack] = await w.ask(Turn(id="t1", user="c", assistant="d"))
        waited = anyio.current_time() - started
        assert w.store.flushes == 0
    assert isinstance(ack, Ack)
    assert waited < 1.0


async def test_a_failed_move_into_the_table_is_tried_again_after_the_interval() -> None:
    async with world() as w:
        w.store.fail_flushes = 2
        await w.ask(Turn(id="t1", user="a", assistant="b"))
        await anyio.sleep(2.5)
        assert (w.store.fail_flushes, w.store.flushes) == (0, 0)  # failed twice
        await anyio.sleep(1)
        assert w.store.flushes == 1


async def test_journaled_rows_move_into_the_table_when_the_writer_stops() -> None:
    async with world(archive_flush_interval=3600.0) as w:
        await w.ask(Turn(id="t1", user="a", assistant="b"))
        assert w.store.flushes == 0
    assert w.store.flushes == 1


async def test_archived_messages_carry_the_message_they_answer_for_search() -> None:
    async with world() as w:
        await w.ask(Turn(id="t1", user="Where should I travel?", assistant="Try Lisbon."))
        await w.ask(Turn(id="t2", user="Why  there?", assistant="Great food."))
    contexts = [(m.role, m.text, m.context) for m in w.store.messages]
    assert contexts == [
        ("user", "Where should I travel?", ""),
        ("assistant", "Try Lisbon.", "user: Where should I travel?"),
        ("user", "Why  there?", "assistant: Try Lisbon."),
        ("assistant", "Great food.", "user: Why there?"),
    ]


async def test_imported_turns_carry_the_turn_before_them_across_batches() -> None:
    lines = [
        TurnLine(
            id=f"d{n}",
            session_id="s1",
            speaker=speaker,
            role="user",
            text=text,
            at=datetime(2023, 5, 8, tzinfo=UTC),
        )
        for n, (speaker, text) in enumerate(
            [("Melanie", "Been anywhere?"), ("Caroline", "Camping!"), ("Melanie", "Nice")]
        )
    ]
    previous: dict[str, str] = {}
    numbered = list(enumerate(lines, 1))
    async with world() as w:
        await import_lines(w.deps, "u1", numbered[:2], previous)
        await import_lines(w.deps, "u1", numbered[2:], previous)  # the next batch
    assert [m.context for m in w.store.messages] == [
        "",
        "Melanie: Been anywhere?",
        "Caroline: Camping!",
    ]


async def test_a_resumed_session_counts_its_turns_from_the_archive_when_its_snapshot_lags() -> None:
    async with world() as w:
        for n in (1, 2, 3):
            await w.ask(Turn(id=f"t{n}", user=f"u{n}", assistant=f"a{n}"))
        stale = w.memory()
        assert stale is not None
        await w.ask(End())
        # As if the process died after turn 3 was archived, before its snapshot was written.
        w.store.working[("u1", "s1")] = msgspec.structs.replace(stale, turn_count=1)
        actor, resumed = await w.registry.open("u1", "s1")
        [ack] = await w.ask(Turn(id="t4", user="u4", assistant="a4"))
    assert resumed is True
    assert ack == Ack(id="t4", turn=4)
    assert actor.turn_count == 4
