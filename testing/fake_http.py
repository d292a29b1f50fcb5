"""The HTTP/1.1 plumbing of the fake model servers (stdlib, asyncio): a keep-alive
connection loop, JSON answers, chunked streams, and the same life cycle for both fakes
(``testing.fake_ollama``, ``testing.fake_openai``).

A subclass answers each request in ``_handle(method, path, body, headers, writer)``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Drop", "FakeHttpServer", "Json"]

Json = dict[str, Any]


class Drop(Exception):
    """Raised by a handler that aborted its connection on purpose (an injected fault)."""


@dataclass
class FakeHttpServer:
    """A loopback HTTP server; use as ``async with`` or ``start_in_thread()``/``stop_thread()``."""

    host: str = "127.0.0.1"
    port: int = 0  # 0 = pick a free port
    requests: list[tuple[str, str, Json]] = field(default_factory=list)  # (method, path, body)
    #: Keep every request in ``requests``. The load bench turns this off: a list that
    #: grows by hundreds of bodies a second makes the fake's own collector pause it.
    record: bool = True
    #: The headers of each recorded request, in the order of ``requests``.
    headers_seen: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._conns: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.client_disconnects = 0  # streams the client abandoned (cancellation tests)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # ---- lifecycle (asyncio) --------------------------------------------
    async def start(self) -> Any:
        self._server = await asyncio.start_server(self._conn, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server:
            self._server.close()
            for t in list(self._conns):  # idle keep-alive connections too
                t.cancel()
            await asyncio.gather(*self._conns, return_exceptions=True)
            await self._server.wait_closed()

    async def __aenter__(self) -> Any:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ---- lifecycle (background thread, for sync tests) ------------------
    def start_in_thread(self) -> Any:
        loop = self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(self.start())
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(5)
        return self

    def stop_thread(self) -> None:
        if self._loop is None or self._thread is None:
            raise RuntimeError("not started with start_in_thread()")
        asyncio.run_coroutine_threadsafe(self.stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    # ---- HTTP plumbing ---------------------------------------------------
    async def _conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._conns.add(task)
        try:
            while True:  # HTTP/1.1 keep-alive loop
                line = await reader.readline()
                if not line:
                    break
                method, target, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while (h := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                raw = await reader.readexactly(int(headers.get("content-length", 0) or 0))
                await self._handle(method, target.split("?")[0], raw, headers, writer)
        except ConnectionError:
            self.client_disconnects += 1
        except (Drop, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            if task is not None:
                self._conns.discard(task)
            writer.close()

    async def _handle(
        self,
        method: str,
        path: str,
        raw: bytes,
        headers: dict[str, str],
        w: asyncio.StreamWriter,
    ) -> None:
        raise NotImplementedError  # each fake answers its own API

    def _record(self, method: str, path: str, body: Json, headers: dict[str, str]) -> None:
        if self.record:
            self.requests.append((method, path, body))
            self.headers_seen.append(headers)

    @staticmethod
    async def _send_json(w: asyncio.StreamWriter, status: int, obj: Any) -> None:
        body = json.dumps(obj).encode()
        w.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await w.drain()

    @staticmethod
    def _start_chunked(w: asyncio.StreamWriter, content_type: str) -> None:
        w.write(
            f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )

    @staticmethod
    async def _send_chunk(w: asyncio.StreamWriter, data: bytes) -> None:
        w.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await w.drain()

    @staticmethod
    async def _end_chunked(w: asyncio.StreamWriter) -> None:
        w.write(b"0\r\n\r\n")
        await w.drain()
