"""The shared writer serves users in turn: one user's storm of writes queues one call at a
time, so another user's write waits for at most one of them (``ArchiveWriter.call``)."""

from __future__ import annotations

import anyio
import pytest

from actors.audit import ACTING_FOR
from actors.writer import ArchiveWriter
from memory.hashing import HashEmbedder
from tests.fakes import MemoryStore

pytestmark = pytest.mark.anyio


async def test_another_users_write_waits_for_at_most_one_call_of_a_storm() -> None:
    writer = ArchiveWriter(MemoryStore(), HashEmbedder(), linger=0)
    done: list[str] = []

    async def write(user: str, name: str) -> None:
        ACTING_FOR.set(user)  # this task acts for ``user``, as a request or session does

        async def slow() -> None:
            await anyio.sleep(0.01)
            done.append(name)

        await writer.call(slow)

    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as users:
                for n in range(20):
                    users.start_soon(write, "storm", f"s{n}")
                await anyio.sleep(0.025)  # the storm's first calls ran, the rest wait
                users.start_soon(write, "calm", "calm")
        tg.cancel_scope.cancel()
    assert len(done) == 21
    started = done.index("calm")
    assert started <= 4, done  # behind the call running and at most one queued
    assert done[-1] == "s19"  # the storm's own calls keep their order


async def test_one_users_calls_run_in_the_order_they_were_made() -> None:
    writer = ArchiveWriter(MemoryStore(), HashEmbedder(), linger=0)
    done: list[int] = []
    ACTING_FOR.set("one")

    async def write(n: int) -> None:
        async def note() -> None:
            done.append(n)

        await writer.call(note)

    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        async with anyio.create_task_group() as calls:
            for n in range(10):
                calls.start_soon(write, n)
                await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    assert done == list(range(10))
