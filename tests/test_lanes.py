"""The extraction model's limiter: a call a person waits for goes before the backlog."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from actors.extraction import Extractor
from actors.lanes import Lanes
from memory.prompts import Exchange
from schemas.settings import Settings
from tests.fakes import ScriptedLlm

pytestmark = pytest.mark.anyio


async def hold_until(lanes: Lanes, release: anyio.Event) -> None:
    async with lanes.hold():
        await release.wait()


async def take(lanes: Lanes, served: list[str], name: str, urgent: bool = False) -> None:
    async with lanes.hold(urgent=urgent):
        served.append(name)


async def test_a_free_place_goes_to_the_urgent_waiter_before_earlier_ones() -> None:
    lanes, order = Lanes(1), []
    release = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_until, lanes, release)
        await anyio.wait_all_tasks_blocked()
        for name, urgent in [("backlog 1", False), ("backlog 2", False), ("person", True)]:
            tg.start_soon(take, lanes, order, name, urgent)
            await anyio.wait_all_tasks_blocked()
        assert lanes.waiting == 3
        release.set()
    assert order == ["person", "backlog 1", "backlog 2"]


async def test_no_more_than_the_limit_hold_a_place_at_once() -> None:
    lanes, holding, most = Lanes(2), 0, 0

    async def work(urgent: bool) -> None:
        nonlocal holding, most
        async with lanes.hold(urgent=urgent):
            holding += 1
            most = max(most, holding)
            await anyio.sleep(0.001)
            holding -= 1

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(work, i % 3 == 0)
    assert most == 2
    assert lanes.waiting == 0


async def test_a_waiter_cancelled_before_its_turn_leaves_the_places_to_the_others() -> None:
    lanes, served = Lanes(1), []
    release = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_until, lanes, release)
        await anyio.wait_all_tasks_blocked()
        with anyio.move_on_after(0.01):
            await take(lanes, served, "gave up")
        tg.start_soon(take, lanes, served, "stayed")
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert served == ["stayed"]
    with anyio.fail_after(1):  # nothing leaked: the one place is free again
        async with lanes.hold():
            pass


async def test_a_waiter_cancelled_as_its_turn_comes_never_keeps_the_place() -> None:
    lanes, served = Lanes(1), []
    release = anyio.Event()
    scope = anyio.CancelScope()

    async def holder() -> None:
        async with lanes.hold():
            await release.wait()
        scope.cancel()  # the place was just handed to the waiter, which has not run yet

    async with anyio.create_task_group() as tg:
        tg.start_soon(holder)
        await anyio.wait_all_tasks_blocked()
        with scope:
            tg.start_soon(set_soon, release)
            async with lanes.hold():
                served.append("granted first")
    assert served in ([], ["granted first"])  # whichever won, the place is free again
    assert lanes.waiting == 0
    with anyio.fail_after(1):
        async with lanes.hold():
            served.append("next")
    assert served[-1] == "next"


async def set_soon(event: anyio.Event) -> None:
    event.set()


@dataclass
class HeldLlm(ScriptedLlm):
    """Structured calls wait until the test lets them answer; records their order."""

    go: anyio.Event = field(default_factory=anyio.Event)
    asked: list[str] = field(default_factory=list)

    async def generate_json(
        self, prompt: str, *, model: str, schema: dict[str, Any], system: str | None = None
    ) -> str:
        await self.go.wait()
        if "category" in schema.get("properties", {}):
            self.asked.append("classify")
            return '{"category": "preference"}'
        self.asked.append("extract")
        return '{"facts": [], "memory_update": {}, "analysis": {}}'


async def test_classifying_a_fact_added_by_hand_goes_before_queued_extractions() -> None:
    llm = HeldLlm()
    extractor = Extractor(llm, Settings(extract_concurrency=1))
    exchange = [Exchange(turn=1, user="I like tea", assistant="Noted")]
    async with anyio.create_task_group() as tg:
        for _ in range(4):  # one runs, three queue
            tg.start_soon(extractor.extract, exchange)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(extractor.classify, "I love green tea")
        await anyio.wait_all_tasks_blocked()
        llm.go.set()
    assert llm.asked == ["extract", "classify", "extract", "extract", "extract"]
