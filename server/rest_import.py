"""``POST /memory/import``: JSON lines of turns and facts, read as they stream in.

The body is never held whole: it is split into lines as it arrives (each at
most 1 MiB) and written in batches of 500 lines. Because the body is read only
as fast as batches are written, a client's upload progress is the import's.
With ``Accept: application/x-ndjson`` the answer streams one progress line per
batch, then the reply.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from actors.errors import MnemoError
from actors.importer import import_lines
from actors.mailbox import SessionDeps
from memory.transfer import LineSplitter, parse_line
from schemas.transfer import ImportLine, ImportReply, LineError
from server.http import authenticated, budgeted, error, json

__all__ = ["MAX_LINE_BYTES", "routes"]

MAX_LINE_BYTES = 1 << 20
_BATCH = 500
_MAX_ERRORS = 1000
_NDJSON = "application/x-ndjson"
_TYPES = (_NDJSON, "application/jsonl", "application/x-jsonlines", "application/json-lines")
_encoder = msgspec.json.Encoder()


class _Import:
    """One request's import: counts, errors, and the lines waiting for their batch."""

    def __init__(self, deps: SessionDeps, user_id: str) -> None:
        self._deps, self._user_id = deps, user_id
        self.reply = ImportReply()
        self.lines = 0
        self._pending: list[tuple[int, ImportLine]] = []
        #: Each session's last message so far: the next turn is indexed with it.
        self._previous: dict[str, str] = {}

    async def batches(self, body: AsyncIterator[bytes]) -> AsyncIterator[None]:
        """Read ``body`` to its end, yielding after each batch written (a last short one too).

        Raises ``MnemoError`` when the store fails (earlier batches stay written)
        and ``ClientDisconnect`` when the client goes away.
        """
        splitter = LineSplitter(MAX_LINE_BYTES)
        async for chunk in body:
            for number, raw in splitter.feed(chunk):
                self._take(number, raw)
                if len(self._pending) >= _BATCH:
                    await self._write()
                    yield
        for number, raw in splitter.finish():
            self._take(number, raw)
        self.lines = splitter.count
        if self._pending:
            await self._write()
            yield

    def _take(self, number: int, raw: bytes | None) -> None:
        self.lines = number
        if raw is None:
            self._fail(number, f"line longer than {MAX_LINE_BYTES} bytes")
            return
        try:
            self._pending.append((number, parse_line(raw, self._deps.settings.categories)))
        except ValueError as exc:
            self._fail(number, str(exc))

    def _fail(self, number: int, message: str) -> None:
        if len(self.reply.errors) < _MAX_ERRORS:
            self.reply.errors.append(LineError(number, message))
        else:
            self.reply.errors_omitted += 1

    async def _write(self) -> None:
        lines, self._pending = self._pending, []
        if lines:
            tally = await import_lines(self._deps, self._user_id, lines, self._previous)
            self.reply.imported += tally.imported
            self.reply.skipped += tally.skipped
            for refused in tally.errors:
                self._fail(refused.line, refused.message)

    def progress(self) -> bytes:
        counts = {"lines": self.lines, "imported": self.reply.imported}
        return _encoder.encode({"progress": {**counts, "skipped": self.reply.skipped}}) + b"\n"


class _ProgressResponse(StreamingResponse):
    """Streams while the request body is still being read, so it must not listen for a
    disconnect on ``receive`` as ``StreamingResponse`` does (that would eat body chunks):
    reading the body notices a disconnect instead."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.stream_response(send)


async def _progress_lines(job: _Import, body: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    try:
        async for _ in job.batches(body):
            yield job.progress()
    except ClientDisconnect:
        return
    except MnemoError as exc:
        yield _encoder.encode({"error": {"code": exc.code, "message": str(exc)}}) + b"\n"
        return
    yield _encoder.encode(job.reply) + b"\n"


async def import_memory(request: Request, user_id: str) -> Response:
    """Import the body's lines for the caller: ``{"imported", "skipped", "errors"}``."""
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type not in _TYPES:
        return error(415, "unsupported_media_type", f"send JSON lines as {_NDJSON}")
    job = _Import(request.state.deps, user_id)
    if _NDJSON in request.headers.get("accept", ""):
        return _ProgressResponse(_progress_lines(job, budgeted(request)), media_type=_NDJSON)
    try:
        async for _ in job.batches(budgeted(request)):
            pass
    except ClientDisconnect:
        return error(400, "client_disconnected", "the body ended early")
    return json(job.reply)


routes = [Route("/memory/import", authenticated(import_memory), methods=["POST"])]
