"""Sending into and receiving from anyio memory streams without a needless turn of the
event loop."""

from __future__ import annotations

from typing import TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["receive", "send"]

T = TypeVar("T")


async def send(stream: MemoryObjectSendStream[T], item: T) -> None:
    """``stream.send(item)``, but at once when the buffer has room.

    ``MemoryObjectSendStream.send`` first yields to the event loop (a checkpoint),
    so the receiver learns of the item one turn of the loop later; under load a
    turn is everything else that is ready to run, a millisecond or more. Only a
    full buffer makes the sender wait. Raises what ``send`` raises.
    """
    try:
        stream.send_nowait(item)
        return
    except anyio.WouldBlock:
        pass  # waiting here would keep the exception and its traceback alive
    await stream.send(item)


async def receive(stream: MemoryObjectReceiveStream[T]) -> T:
    """``stream.receive()``, but at once when an item is waiting.

    ``MemoryObjectReceiveStream.receive`` also starts with a checkpoint: a loop that
    handles items as they come pays one extra turn of the event loop per item. Here
    only an empty stream makes the receiver wait. A loop over a stream that is never
    empty still yields wherever its handling awaits, and the senders can queue no more
    than the buffer holds. Raises what ``receive`` raises (``EndOfStream`` once the
    stream is empty and every sender closed).
    """
    try:
        return stream.receive_nowait()
    except anyio.WouldBlock:
        pass  # waiting here would keep the exception and its traceback alive
    return await stream.receive()
