"""The event bus: filters, bounded buffers, the skipped marker, listeners that fail."""

from __future__ import annotations

import gc
import logging

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream

from actors.events import Event, EventBus, RecentEvents

pytestmark = pytest.mark.anyio


def drain(events: MemoryObjectReceiveStream[Event]) -> list[Event]:
    out = []
    while True:
        try:
            out.append(events.receive_nowait())
        except anyio.WouldBlock:
            return out


async def test_a_slow_subscriber_misses_events_and_is_told_how_many() -> None:
    bus = EventBus()
    with bus.subscribe(buffer=4) as slow:
        for n in range(10):
            bus.emit("turn.acked", session_id="s1", user_id="u1", turn=n)  # never blocks
        first = drain(slow.events)
        bus.emit("turn.acked", session_id="s1", user_id="u1", turn=10)
        after = drain(slow.events)
    assert [e.data["turn"] for e in first] == [0, 1, 2, 3]
    assert [(e.kind, e.data) for e in after] == [
        ("tail.skipped", {"skipped": 6}),
        ("turn.acked", {"turn": 10}),
    ]


async def test_subscriptions_filter_by_session_user_and_kind_family() -> None:
    bus = EventBus()
    with bus.subscribe(user_id="u1", kinds=["facts", "actor.spawned"]) as sub:
        bus.emit("actor.spawned", session_id="s1", user_id="u1")
        bus.emit("actor.spawned", session_id="s2", user_id="u2")
        bus.emit("actor.ended", session_id="s1", user_id="u1")
        bus.emit("facts.added", session_id="s1", user_id="u1", facts=[])
        bus.emit("turn.acked", session_id="s1", user_id="u1")
        got = [e.kind for e in drain(sub.events)]
    assert got == ["actor.spawned", "facts.added"]
    assert bus.subscribers == 0


async def test_a_failing_listener_is_logged_and_the_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus, seen = EventBus(), list[Event]()

    def broken(_: Event) -> None:
        raise ValueError("boom")

    bus.listen(broken)
    bus.listen(seen.append)
    with caplog.at_level(logging.ERROR, logger="mnemo.events"):
        bus.emit("turn.acked", session_id="s1", user_id="u1")
    assert [e.kind for e in seen] == ["turn.acked"]
    assert "event listener failed on turn.acked" in caplog.text


async def test_recent_events_keep_the_last_ones_of_live_sessions_only() -> None:
    bus, recent = EventBus(), RecentEvents(size=3)
    bus.listen(recent)
    for n in range(5):
        bus.emit("turn.acked", session_id="s1", user_id="u1", turn=n)
    bus.emit("turn.acked", session_id="s1", user_id="u2", turn=99)
    kept = [e.data["turn"] for e in recent.of("u1", "s1")]
    bus.emit("actor.expired", session_id="s1", user_id="u1")
    assert kept == [2, 3, 4]
    assert recent.of("u1", "s1") == []
    assert [e.data["turn"] for e in recent.of("u2", "s1")] == [99]


async def test_kept_events_are_left_out_of_garbage_collections() -> None:
    # Thousands live in RecentEvents at a time; the collector need not walk them.
    bus, recent = EventBus(), RecentEvents()
    bus.listen(recent)
    bus.emit("facts.added", session_id="s1", user_id="u1", facts=["Lives in Lisbon"])
    [event] = recent.of("u1", "s1")
    assert not gc.is_tracked(event)
    assert event.data == {"facts": ["Lives in Lisbon"]}
