"""The model's learning work served fairly (``actors.model_queue``): round-robin by user, a
bounded number of calls at once, a lane of its own for what a person waits for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from actors.errors import ModelBusy
from actors.extraction import Extractor
from actors.model_queue import ModelQueue
from memory.prompts import Exchange
from schemas.settings import Settings
from tests.fakes import ScriptedLlm

pytestmark = pytest.mark.anyio


async def hold_until(queue: ModelQueue, user: str, release: anyio.Event) -> None:
    async with queue.turn(user):
        await release.wait()


async def take(
    queue: ModelQueue, served: list[str], user: str, name: str, urgent: bool = False
) -> None:
    async with queue.turn(user, urgent=urgent):
        served.append(name)


async def test_free_places_go_round_robin_over_the_users_waiting() -> None:
    queue, served = ModelQueue(1), list[str]()
    release = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_until, queue, "storm", release)
        await anyio.wait_all_tasks_blocked()
        for user, name in [("storm", f"s{n}") for n in range(1, 5)] + [
            ("calm", "c1"),
            ("calm", "c2"),
        ]:
            tg.start_soon(take, queue, served, user, name)
            await anyio.wait_all_tasks_blocked()
        assert queue.waiting() == 6
        release.set()
    assert served == ["s1", "c1", "s2", "c2", "s3", "s4"]


async def test_an_urgent_call_has_places_of_its_own_and_never_waits_for_the_background() -> None:
    queue, served = ModelQueue(1), list[str]()
    release = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_until, queue, "storm", release)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(take, queue, served, "storm", "background")
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(1):
            await take(queue, served, "calm", "urgent", urgent=True)
        assert served == ["urgent"]
        release.set()
    assert served == ["urgent", "background"]


async def test_no_more_than_the_places_of_a_lane_are_held_at_once() -> None:
    queue = ModelQueue(2)
    holding = {False: 0, True: 0}
    most = {False: 0, True: 0}

    async def work(user: str, urgent: bool) -> None:
        async with queue.turn(user, urgent=urgent):
            holding[urgent] += 1
            most[urgent] = max(most[urgent], holding[urgent])
            await anyio.sleep(0.001)
            holding[urgent] -= 1

    async with anyio.create_task_group() as tg:
        for i in range(30):
            tg.start_soon(work, f"u{i % 4}", i % 3 == 0)
    assert most == {False: 2, True: 2}
    assert queue.waiting() == queue.waiting(urgent=True) == 0


async def test_a_user_with_too_many_calls_waiting_is_told_the_model_is_busy_others_are_not() -> (
    None
):
    queue = ModelQueue(1, waiting_per_user=2)
    release = anyio.Event()
    served: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_until, queue, "storm", release)
        await anyio.wait_all_tasks_blocked()
        for n in range(2):
            tg.start_soon(take, queue, served, "storm", f"s{n}")
            await anyio.wait_all_tasks_blocked()
        with pytest.raises(ModelBusy):
            await take(queue, served, "storm", "one too many")
        tg.start_soon(take, queue, served, "calm", "c")
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert served == ["s0", "c", "s1"]


async def test_a_waiter_cancelled_before_its_turn_leaves_the_places_to_the_others() -> None:
    queue, served = ModelQueue(1), list[str]()
    release = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_until, queue, "a", release)
        await anyio.wait_all_tasks_blocked()
        with anyio.move_on_after(0.01):
            await take(queue, served, "b", "gave up")
        tg.start_soon(take, queue, served, "b", "stayed")
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert served == ["stayed"]
    with anyio.fail_after(1):  # nothing leaked: the one place is free again
        async with queue.turn("a"):
            pass


async def test_a_waiter_cancelled_as_its_turn_comes_never_keeps_the_place() -> None:
    queue, served = ModelQueue(1), list[str]()
    release = anyio.Event()
    scope = anyio.CancelScope()

    async def holder() -> None:
        async with queue.turn("a"):
            await release.wait()
        scope.cancel()  # the place was just handed to the waiter, which has not run yet

    async with anyio.create_task_group() as tg:
        tg.start_soon(holder)
        await anyio.wait_all_tasks_blocked()
        with scope:
            tg.start_soon(set_soon, release)
            async with queue.turn("b"):
                served.append("granted first")
    assert served in ([], ["granted first"])  # whichever won, the place is free again
    assert queue.waiting() == 0
    with anyio.fail_after(1):
        async with queue.turn("c"):
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
        self,
        prompt: str,
        *,
        model: str,
        schema: dict[str, Any],
        system: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        if "category" in schema.get("properties", {}):
            self.asked.append("classify")
            return '{"category": "preference"}'
        await self.go.wait()
        self.asked.append("extract")
        return '{"facts": [], "memory_update": {}, "analysis": {}}'


async def test_classifying_a_fact_added_by_hand_does_not_wait_for_busy_extractions() -> None:
    llm = HeldLlm()
    extractor = Extractor(llm, Settings(extract_concurrency=1))
    exchange = [Exchange(turn=1, user="I like tea", assistant="Noted")]
    async with anyio.create_task_group() as tg:
        for _ in range(4):  # one runs, three queue
            tg.start_soon(extractor.extract, "storm", exchange)
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(1):
            assert await extractor.classify("calm", "I love green tea") == "preference"
        assert llm.asked == ["classify"]
        llm.go.set()
    assert llm.asked == ["classify", "extract", "extract", "extract", "extract"]
