"""The Node process that runs the model (``worker.mjs``), seen from Python.

Requests go to its stdin as JSON lines, each with an id; its events come back on stdout
tagged with that id and are routed to the request's own stream. The worker runs one
request at a time, in order, so callers serialize generations themselves (``Worker``
does not queue). If the process dies, every open request gets an error event.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectSendStream

__all__ = ["Event", "Worker", "WorkerFailed"]

Event = dict[str, Any]
_MAX_LINE = 64 << 20


class WorkerFailed(RuntimeError):
    """The worker answered a request with an error, or is gone."""


class Worker:
    """One ``node worker.mjs`` process. Use ``async with Worker.running(...)``."""

    def __init__(self, process: Process) -> None:
        self._process = process
        self._ids = itertools.count(1)
        self._open: dict[int, MemoryObjectSendStream[Event]] = {}
        self._gone: str | None = None

    @classmethod
    @asynccontextmanager
    async def running(cls, script: Path, node_modules: Path) -> AsyncIterator[Worker]:
        """Start the worker, route its events while in the block, then stop it."""
        process = await anyio.open_process(["node", str(script), str(node_modules)], stderr=None)
        worker = cls(process)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(worker._route)
                yield worker
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await worker._stop()

    async def call(self, op: str, **fields: Any) -> Event:
        """Send one request and return its single answer; raises ``WorkerFailed``."""
        async with self.stream(op, **fields) as events:
            async for event in events:
                return event
        raise WorkerFailed(f"the worker ended {op} without an answer")

    @asynccontextmanager
    async def stream(self, op: str, **fields: Any) -> AsyncIterator[AsyncIterator[Event]]:
        """Send one request; yield its events. An ``error`` event raises ``WorkerFailed``.

        Leaving the block before the last event cancels the request in the worker.
        """
        request_id = next(self._ids)
        send, receive = anyio.create_memory_object_stream[Event](math.inf)
        self._open[request_id] = send
        finished = False

        async def events() -> AsyncIterator[Event]:
            nonlocal finished
            async for event in receive:
                if "error" in event:
                    finished = True
                    raise WorkerFailed(str(event["error"]))
                finished = bool(event.get("done") or event.get("canceled")) or "text" not in event
                yield event
                if finished:
                    return

        try:
            await self._send({"op": op, "id": request_id, **fields})
            yield events()
        finally:
            with anyio.CancelScope(shield=True):
                self._open.pop(request_id, None)
                send.close()
                receive.close()
                if not finished and self._gone is None:
                    await self._send({"op": "cancel", "id": request_id})

    async def _send(self, request: Mapping[str, Any]) -> None:
        if self._gone is not None:
            raise WorkerFailed(self._gone)
        assert self._process.stdin is not None
        try:
            await self._process.stdin.send(json.dumps(request).encode() + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise WorkerFailed(f"the model worker is gone: {exc!r}") from exc

    async def _route(self) -> None:
        assert self._process.stdout is not None
        lines = BufferedByteReceiveStream(self._process.stdout)
        try:
            while True:
                event: Event = json.loads(await lines.receive_until(b"\n", _MAX_LINE))
                stream = self._open.get(event.get("id", -1))
                if stream is not None:
                    stream.send_nowait(event)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
            pass
        self._gone = f"the model worker exited (code {await self._process.wait()})"
        for stream in self._open.values():
            stream.send_nowait({"error": self._gone})

    async def _stop(self) -> None:
        if self._process.stdin is not None:
            await self._process.stdin.aclose()
        with anyio.move_on_after(10):
            await self._process.wait()
            return
        self._process.kill()
        await self._process.wait()
