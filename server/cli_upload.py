"""``mnemo import``'s upload: a file sent to ``POST /memory/import`` while the server's own
count of the lines it imported is read from the answer.

The server reads an import's body only as fast as it writes it, and streams a progress
line after each batch (with ``Accept: application/x-ndjson``). An HTTP client that sends
the whole body before it reads the answer (httpx does) sees none of them while it
uploads, and a file smaller than the connection's buffers is "sent" at once. So this
speaks HTTP/1.1 itself (h11, over one asyncio connection): one task sends the file,
the other reads the answer as it comes.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import h11
import msgspec

__all__ = ["Answer", "Counted", "Unreachable", "UploadFailed", "count_lines", "upload"]

_CHUNK = 1 << 16
_NDJSON = "application/x-ndjson"


class UploadFailed(Exception):
    """The connection broke or stalled; its cause is the error that ended it."""


class Unreachable(UploadFailed):
    """Nothing answered at the URL; its cause says why."""


class Counted(msgspec.Struct, frozen=True):
    """A progress line's counts: ``lines`` read so far (blank ones too), of which
    ``imported`` and ``skipped``."""

    lines: int
    imported: int
    skipped: int


class _ProgressLine(msgspec.Struct, frozen=True):
    progress: Counted


_progress = msgspec.json.Decoder(_ProgressLine)


@dataclass(frozen=True, slots=True)
class Answer:
    """The server's answer: its status, and for a 200 its last line (the reply, or the
    error that stopped the import), else its whole body."""

    status: int
    body: bytes


def count_lines(path: Path) -> int:
    """How many lines the server will count in the file: blank ones too, and a last one
    without its newline."""
    count, last = 0, b"\n"
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


async def upload(
    url: str,
    key: str | None,
    path: Path,
    counted: Callable[[Counted], None],
    *,
    size: int,
    stall: float,
    connect_within: float,
) -> Answer:
    """Send ``path`` (of ``size`` bytes) to ``url`` (the server's base URL) as an import,
    calling ``counted`` with each progress line. ``stall``: the longest the server may
    say nothing (it reads the body as fast as it imports, and says how far it got after
    each batch). Raises ``UploadFailed``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UploadFailed(f"{url} is no http:// or https:// URL")
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(
                parts.hostname,
                port,
                ssl=ssl.create_default_context() if secure else None,
                server_hostname=parts.hostname if secure else None,
            ),
            connect_within,
        )
    except (OSError, TimeoutError) as exc:
        raise Unreachable(f"cannot reach {url}: {exc or 'no answer in time'}") from exc
    connection = h11.Connection(h11.CLIENT)
    headers = [
        ("Host", parts.netloc),
        ("Content-Type", _NDJSON),
        ("Accept", _NDJSON),
        ("Content-Length", str(size)),
        ("User-Agent", "mnemo-import"),
    ]
    if key:
        headers.append(("Authorization", f"Bearer {key}"))
    target = parts.path.rstrip("/") + "/memory/import"
    sending: asyncio.Task[None] | None = None
    try:
        writer.write(connection.send(h11.Request(method="POST", target=target, headers=headers)))
        sending = asyncio.create_task(_send(connection, writer, path))
        return await _receive(connection, reader, counted, stall)
    except (OSError, TimeoutError, h11.ProtocolError) as exc:
        reason = "no answer in time" if isinstance(exc, TimeoutError) else str(exc)
        raise UploadFailed(reason or type(exc).__name__) from exc
    finally:
        if sending is not None:
            sending.cancel()  # an early answer (a refusal): the rest is not sent
            await asyncio.gather(sending, return_exceptions=True)
        writer.close()


async def _send(connection: h11.Connection, writer: asyncio.StreamWriter, path: Path) -> None:
    """The body, as fast as the server takes it (``_receive`` waits no longer than
    ``stall`` for it to say more); a server that stopped reading it (it answered early)
    ends it."""
    try:
        with path.open("rb") as file:
            while chunk := file.read(_CHUNK):
                writer.write(connection.send(h11.Data(data=chunk)))
                await writer.drain()
        writer.write(connection.send(h11.EndOfMessage()))
        await writer.drain()
    except (ConnectionError, h11.LocalProtocolError):
        return


async def _receive(
    connection: h11.Connection,
    reader: asyncio.StreamReader,
    counted: Callable[[Counted], None],
    stall: float,
) -> Answer:
    status, body, last, pending = 0, bytearray(), b"", b""
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            async with asyncio.timeout(stall):
                connection.receive_data(await reader.read(_CHUNK))
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            if status != 200:
                body += event.data
                continue
            # Split on b"\n" only, as the server writes: a text's U+2028 is no line break.
            *lines, pending = (pending + bytes(event.data)).split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                last = line
                try:
                    counted(_progress.decode(line).progress)
                except msgspec.DecodeError:
                    pass  # the reply, or an error line: the last one is returned
        elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
            if not status:
                raise ConnectionError("the server closed the connection without an answer")
            if status != 200:
                return Answer(status, bytes(body))
            return Answer(status, pending if pending.strip() else last)
