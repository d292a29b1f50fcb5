"""Sending into an anyio memory stream without a needless turn of the event loop."""

from __future__ import annotations

from typing import TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream

__all__ = ["send"]

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
    except anyio.WouldBlock:
        await stream.send(item)
