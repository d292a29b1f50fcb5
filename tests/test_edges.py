"""The edges of the server process: request heads that never arrive are timed out, a
refused handshake is no error, and a data directory has one server at a time."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from server.datadir import DataDirLock, DataDirLocked
from testing.fake_ollama import FakeOllama
from tests.harness import Client, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

TIMEOUT = 0.3


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    settings = settings_for(tmp_path, fake.url, api_keys={"key": "alice"})
    async with serve(make_app(settings), handshake_timeout=TIMEOUT) as address:
        yield address


async def closed_after(address: str, *parts: bytes, pause: float = 0.0) -> float:
    """Open a connection, send ``parts`` (``pause`` apart), and return how long the server
    took to close it (from the connection)."""
    host, port = address.split(":")
    stream = await anyio.connect_tcp(host, int(port))
    started = anyio.current_time()
    async with stream:
        with anyio.fail_after(TIMEOUT * 20):
            try:
                for part in parts:
                    await stream.send(part)
                    await anyio.sleep(pause)
                while await stream.receive():
                    pass
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                pass  # closed by the server
    return anyio.current_time() - started


async def test_a_connection_that_sends_nothing_is_closed(server: str) -> None:
    assert await closed_after(server) >= TIMEOUT


async def test_a_request_head_sent_a_byte_at_a_time_is_closed(server: str) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    chunks = [head[i : i + 1] for i in range(len(head))]
    took = await closed_after(server, *chunks, pause=TIMEOUT / 10)
    assert took < len(chunks) * TIMEOUT / 10  # closed before the head could ever end


async def test_a_kept_alive_connection_gets_a_deadline_for_its_next_head(server: str) -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    assert await closed_after(server, request, b"GET /h", pause=0.0) >= TIMEOUT


async def test_a_live_websocket_outlives_the_head_deadline(server: str) -> None:
    async with Client.connect(server, "s1", token="key") as client:
        await client.receive()
        await anyio.sleep(TIMEOUT * 3)
        await client.send(type="ping")
        pong = await client.receive()
    assert pong == {"type": "pong"}


async def test_a_refused_handshake_is_logged_below_error(
    server: str, caplog: pytest.LogCaptureFixture
) -> None:
    for path in ("/ws/s1?token=wrong", "/ws/bad%0A?token=key"):
        with pytest.raises(InvalidStatus):
            async with connect(f"ws://{server}{path}"):
                pass
    await anyio.sleep(0.1)
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []


def test_a_data_directory_lock_names_its_holder_and_is_released(tmp_path: Path) -> None:
    with DataDirLock(tmp_path):
        with pytest.raises(DataDirLocked, match=rf"pid \d+ on {socket.gethostname()}"):
            DataDirLock(tmp_path).acquire()
    with DataDirLock(tmp_path):  # free again
        pass
