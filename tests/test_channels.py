"""Sends and receives on memory streams that do not give the event loop away needlessly."""

from __future__ import annotations

import gc

import anyio
import pytest

from actors.channels import receive, send

pytestmark = pytest.mark.anyio


async def test_a_send_with_room_delivers_before_any_other_task_runs() -> None:
    sender, receiver = anyio.create_memory_object_stream[int](1)
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    with sender, receiver:
        async with anyio.create_task_group() as tg:
            tg.start_soon(other)
            await send(sender, 1)
            assert ran == []  # no turn of the loop yet: anyio's own send would run "other"
            assert receiver.receive_nowait() == 1


async def test_a_send_into_a_full_stream_waits_for_room() -> None:
    sender, receiver = anyio.create_memory_object_stream[int](1)
    with sender, receiver:
        sender.send_nowait(1)
        async with anyio.create_task_group() as tg:
            tg.start_soon(send, sender, 2)
            await anyio.wait_all_tasks_blocked()
            assert receiver.statistics().tasks_waiting_send == 1
            assert receiver.receive_nowait() == 1
        assert receiver.receive_nowait() == 2


async def test_a_send_into_a_closed_stream_raises_as_anyio_does() -> None:
    sender, receiver = anyio.create_memory_object_stream[int](1)
    receiver.close()
    with sender, pytest.raises(anyio.BrokenResourceError):
        await send(sender, 1)


async def test_a_receive_with_an_item_waiting_returns_it_before_any_other_task_runs() -> None:
    sender, receiver = anyio.create_memory_object_stream[int](1)
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    with sender, receiver:
        sender.send_nowait(7)
        async with anyio.create_task_group() as tg:
            tg.start_soon(other)
            assert await receive(receiver) == 7
            assert ran == []  # anyio's own receive would have let "other" run first


async def test_a_receive_from_an_empty_stream_waits_for_the_next_item() -> None:
    sender, receiver = anyio.create_memory_object_stream[int](1)
    with sender, receiver:
        async with anyio.create_task_group() as tg:
            tg.start_soon(send, sender, 3)
            assert await receive(receiver) == 3


async def test_a_receive_from_a_drained_stream_whose_senders_closed_ends_as_anyio_does() -> None:
    sender, receiver = anyio.create_memory_object_stream[int](1)
    with receiver:
        sender.send_nowait(1)
        sender.close()
        assert await receive(receiver) == 1
        with pytest.raises(anyio.EndOfStream):
            await receive(receiver)


async def test_a_waiting_receive_keeps_no_exception_of_its_own_alive() -> None:
    sender, receiver = anyio.create_memory_object_stream[int](1)

    def blocking() -> list[object]:
        gc.collect()
        return [o for o in gc.get_objects() if isinstance(o, anyio.WouldBlock)]

    earlier = blocking()  # held, so none of them can go or lend its id meanwhile

    def alive() -> int:
        return sum(not any(o is e for e in earlier) for o in blocking())

    with sender, receiver:
        async with anyio.create_task_group() as tg:
            tg.start_soon(receiver.receive)  # anyio's own wait holds one WouldBlock
            await anyio.wait_all_tasks_blocked()
            anyios = alive()
            tg.start_soon(receive, receiver)
            await anyio.wait_all_tasks_blocked()
            assert alive() == 2 * anyios  # one more for the anyio wait inside, none of ours
            sender.send_nowait(1)
            sender.send_nowait(2)
