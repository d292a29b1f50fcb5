"""``mnemo mcp``: MCP on stdin and stdout, for desktop clients that launch a command.

It never opens a second writer on a data directory a server owns. With ``--url`` (or
``MNEMO_URL``) it bridges stdio to that server's ``/mcp``, with ``--key`` (or
``MNEMO_API_KEY``) as the bearer key. Without one it takes the data directory's lock: if
a ``mnemo serve`` holds it, it bridges to that server at ``MNEMO_HOST:MNEMO_PORT``;
otherwise this process owns the directory and serves the tools itself, as the key's user
(no keys configured: the single local user). One line on stderr says which it did;
stdout carries MCP and nothing else. It runs until its client closes stdin; Ctrl-C
(SIGINT) and SIGTERM end it the same way, after what it does is done (a bridge ends
its session on the server, an owner writes what it holds and releases the directory).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import Any, Protocol

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from schemas.settings import Settings
from server.auth import user_for_token
from server.cli_errors import refused, unreachable
from server.config import CLIENT_KEY, CLIENT_URL, ConfigError, load_settings
from server.datadir import DataDirLock, DataDirLocked, local_dir
from server.logs import configure_logging
from server.mcp_calls import Caller
from server.mcp_tools import build_mcp

__all__ = ["add_commands", "mcp_command"]

_log = logging.getLogger("mnemo.mcp")


def add_commands(commands: Any) -> None:
    parser = commands.add_parser(
        "mcp",
        help="speak MCP on stdin/stdout (bridging to a running server, or owning the data)",
    )
    parser.add_argument("--url", help=f"bridge to the server at this URL (default {CLIENT_URL})")
    parser.add_argument("--key", help=f"API key: the user whose memory (default {CLIENT_KEY})")
    parser.add_argument("--data-dir", dest="data_dir", help="data directory (MNEMO_DATA_DIR)")


def _say(line: str) -> None:
    print(f"mnemo mcp: {line}", file=sys.stderr, flush=True)


def mcp_command(args: argparse.Namespace) -> int:
    key = args.key or os.environ.get(CLIENT_KEY) or None
    url = args.url or os.environ.get(CLIENT_URL)
    if url:
        return _bridge(url, key)
    try:
        settings = load_settings(os.environ, data_dir=args.data_dir)
    except ConfigError as exc:
        _say(str(exc))
        return 2
    lock = DataDirLock(local_dir(settings.data_dir, settings.local_dir))
    try:
        lock.acquire()
    except DataDirLocked as exc:
        holder = exc.args[0].split(";")[0]
        return _bridge(f"http://{settings.host}:{settings.port}", key, because=holder)
    try:
        return _own(settings, key)
    finally:
        lock.release()


def _endpoint(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/mcp") else f"{url}/mcp"


def _bridge(url: str, key: str | None, *, because: str | None = None) -> int:
    endpoint = _endpoint(url)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        answer = httpx2.post(
            endpoint,
            headers={**headers, "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 0, "method": "ping"},
            timeout=5.0,
        )
    except httpx2.HTTPError as exc:
        _say(unreachable(url, exc))
        return 1
    if answer.status_code in (401, 404):  # a wrong key, or no mnemo at that URL
        _say(refused(endpoint, answer.status_code, answer.content, keyed=bool(key)))
        return 1
    _say(f"{because}: " * (because is not None) + f"bridging stdio to the server at {endpoint}")
    anyio.run(_stdio, lambda stop: _relay(endpoint, headers, stop))
    return 0


async def _relay(endpoint: str, headers: dict[str, str], stop_stdin: Callable[[], None]) -> None:
    """Every message from stdin to the server and back, until either side ends."""
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as client,
        streamable_http_client(endpoint, http_client=client) as (remote_in, remote_out),
        stdio_server() as (local_in, local_out),
    ):
        async with anyio.create_task_group() as relays:

            async def pump(source: AsyncIterable[SessionMessage | Exception], sink: _Sink) -> None:
                async for message in source:
                    if isinstance(message, Exception):
                        _log.warning("dropped a message that could not be read: %s", message)
                        continue
                    await sink.send(message)
                relays.cancel_scope.cancel()

            relays.start_soon(pump, local_in, remote_out)
            relays.start_soon(pump, remote_in, local_out)
        # The SDK's stdio ends when both of its sides do: its reader at the end of input
        # (when the server went first, ours), its writer when nothing more is sent.
        stop_stdin()
        await local_out.aclose()


async def _stdio(body: Callable[[Callable[[], None]], Awaitable[None]]) -> None:
    """Run ``body`` (MCP on stdio, through the SDK) until the client closes stdin or a
    SIGINT or SIGTERM comes, which ends the input the same way; a second one cancels
    everything at once.

    The SDK reads stdin in a worker thread, and no cancellation stops a thread blocked in
    a read: fd 0 becomes a pipe this process feeds from the real stdin, with waits that can
    be cancelled, and closes as the input's end. ``body`` gets the function that closes it
    (to end the SDK's reader when the other side went first).
    """
    source = os.dup(0)
    inner, feeder = os.pipe()
    os.set_blocking(feeder, False)
    os.dup2(inner, 0)
    os.close(inner)
    feed = _Feed(source, feeder)
    try:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    await body(feed.close)
                    tg.cancel_scope.cancel()

                async def stop_on_signals() -> None:
                    async for number in signals:
                        _say(f"{signal.Signals(number).name}: stopping")
                        feed.close()
                        break
                    async for _ in signals:
                        tg.cancel_scope.cancel()

                tg.start_soon(feed.run)
                tg.start_soon(stop_on_signals)
                tg.start_soon(run)
    finally:
        os.dup2(source, 0)
        os.close(source)


class _Feed:
    """Copies the real stdin into the pipe the SDK reads, until either ends or ``close``."""

    def __init__(self, source: int, sink: int) -> None:
        self._source, self._sink = source, sink
        self._scope = anyio.CancelScope()

    def close(self) -> None:
        """End the SDK's input (the pipe closes as ``run`` ends)."""
        self._scope.cancel()

    async def run(self) -> None:
        pollable = True
        try:
            with self._scope:
                while True:
                    if pollable:
                        try:
                            await anyio.wait_readable(self._source)
                        except PermissionError:  # a file or /dev/null: a read never waits
                            pollable = False
                    data = os.read(self._source, 1 << 16)
                    if not data or not await self._write(data):
                        return
        finally:
            os.close(self._sink)

    async def _write(self, data: bytes) -> bool:
        """False when the SDK's reader is gone."""
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._sink, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._sink)
            except BrokenPipeError:
                return False
        return True


def _own(settings: Settings, key: str | None) -> int:
    if key and not settings.api_keys:
        _say(
            "a key was given but no MNEMO_API_KEYS is set, so it names no user: set the"
            " server's MNEMO_API_KEYS, or run without a key as the single local user"
        )
        return 2
    user_id = user_for_token(settings, key)
    if user_id is None:
        _say(f"MNEMO_API_KEYS is set: pass --key (or {CLIENT_KEY}) of a user")
        return 2
    from server.main import build_app

    configure_logging(level=logging.WARNING)
    _say(f"no server runs on {settings.data_dir}: serving it from this process as {user_id}")
    app = build_app(settings)

    async def run(_: Callable[[], None]) -> None:
        async with app.router.lifespan_context(app) as state:
            assert state is not None
            caller = Caller(state["deps"], user_id, state["metrics"])
            await build_mcp(_Owned(caller)).run_stdio_async()

    anyio.run(_stdio, run)
    return 0


class _Sink(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


class _Owned:
    """Every call of this process is its one user's."""

    def __init__(self, caller: Caller) -> None:
        self._caller = caller

    def caller(self, request: object | None) -> Caller:
        return self._caller
