"""``mnemo export`` and ``mnemo import``: a user's memory to and from a JSON-lines file,
over the REST API of a running server, with a progress bar on stderr."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx
import msgspec
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from schemas.transfer import ImportReply
from server.cli_errors import refused, unreachable
from server.cli_upload import Answer, Counted, Unreachable, UploadFailed, count_lines, upload
from server.config import CLIENT_KEY, CLIENT_URL

__all__ = ["add_commands", "export_command", "import_command"]

_CHUNK = 1 << 16
_SHOWN_ERRORS = 20
#: Per network operation: one batch of the import must not take longer.
_TIMEOUT = httpx.Timeout(300.0, connect=10.0)


def add_commands(commands: Any) -> None:
    """Add ``export`` and ``import`` to the ``mnemo`` subcommands."""
    export = commands.add_parser("export", help="download your memory as JSON lines")
    export.add_argument("--out", help="file to write (default: standard output)")
    _add_connection(export)
    upload = commands.add_parser("import", help="upload JSON lines of turns and facts")
    upload.add_argument("file", help="JSON-lines file (the format of `mnemo export`)")
    _add_connection(upload)


def _add_connection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help=f"server URL (default {CLIENT_URL} or http://127.0.0.1:8000)")
    parser.add_argument("--key", help=f"API key (default {CLIENT_KEY})")


def _url(args: argparse.Namespace) -> str:
    return str(args.url or os.environ.get(CLIENT_URL) or "http://127.0.0.1:8000")


def _client(args: argparse.Namespace) -> httpx.Client:
    key = args.key or os.environ.get(CLIENT_KEY)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=_url(args), headers=headers, timeout=_TIMEOUT)


def _failure(response: httpx.Response) -> str:
    keyed = "Authorization" in response.request.headers
    said = refused(str(response.url), response.status_code, response.content, keyed=keyed)
    return f"mnemo: {said}"


def _lost(args: argparse.Namespace, exc: httpx.HTTPError) -> str:
    """A request that failed: nothing answered, or the connection broke."""
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return f"mnemo: {unreachable(_url(args), exc)}"
    return f"mnemo: the connection to {_url(args)} failed: {exc or type(exc).__name__}"


def _say(console: Console, line: str) -> None:
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def export_command(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    progress = Progress(
        SpinnerColumn(),
        TextColumn("exporting: {task.completed} lines"),
        TimeElapsedColumn(),
        console=console,
    )
    try:
        with (
            _output(args.out) as out,
            _client(args) as client,
            progress,
            client.stream("GET", "/memory/export") as response,
        ):
            if response.status_code != 200:
                response.read()
                _say(console, _failure(response))
                return 2
            task = progress.add_task("export", total=None)
            for chunk in response.iter_bytes():
                # The bytes as they came: a text's U+2028 or U+0085 is no line break of
                # JSON lines, though httpx's iter_lines (str.splitlines) takes it as one.
                out.write(chunk)
                progress.advance(task, chunk.count(b"\n"))
            out.done = True
    except httpx.HTTPError as exc:
        _say(console, _lost(args, exc))
        return 2
    except OSError as exc:
        if not args.out:
            raise  # standard output closed early: ``mnemo``'s own handling ends it quietly
        _say(console, f"mnemo: cannot write {args.out}: {exc.strerror or exc}")
        return 2
    return 0


class _Output:
    """Where an export goes: a file that replaces ``--out`` only once ``done``."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file, self.done = file, False

    def write(self, data: bytes) -> None:
        self.file.write(data)


@contextmanager
def _output(path: str | None) -> Iterator[_Output]:
    """Standard output, or a temporary file beside ``path`` renamed to it when the export
    is ``done``: an export that fails (no server, a refused key, a broken connection)
    leaves what ``path`` held as it was."""
    if not path:
        out = _Output(sys.stdout.buffer)
        try:
            yield out
        finally:
            out.file.flush()
        return
    target = Path(path)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as file:
            out = _Output(file)
            yield out
        if out.done:
            os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)


class _Rate(ProgressColumn):
    """Lines imported a second, as the server counts them."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.0f} lines/s", style="progress.data.speed")


def _upload(args: argparse.Namespace, path: Path, progress: Progress) -> Answer:
    """Send the file, the bar following the server's own count of the lines it imported
    (its progress lines: a line is counted once its batch is written, not when it is
    sent). Raises ``UploadFailed``."""
    task = progress.add_task("import", total=count_lines(path))

    def counted(now: Counted) -> None:
        progress.update(task, completed=now.lines)

    return asyncio.run(
        upload(
            _url(args),
            args.key or os.environ.get(CLIENT_KEY),
            path,
            counted,
            size=path.stat().st_size,
            stall=_TIMEOUT.read or 300.0,
            connect_within=_TIMEOUT.connect or 10.0,
        )
    )


def _is_json_array(path: Path) -> bool:
    """Whether the file starts as a JSON array (a common mistake: JSON, not JSON lines)."""
    with path.open("rb") as file:
        start = file.read(_CHUNK).lstrip(b"\xef\xbb\xbf \t\r\n")
    return start.startswith(b"[")


def import_command(args: argparse.Namespace) -> int:
    """Exit status 0 when every line imported or was skipped, 1 when some failed, 2 when
    the import did not run (no file, no server, a refused key, a store failure)."""
    console = Console(stderr=True)
    path = Path(args.file)
    if not path.is_file():
        _say(console, f"mnemo: no such file: {path}")
        return 2
    if _is_json_array(path):
        _say(
            console,
            f"mnemo: {path} holds a JSON array, but import reads JSON lines: one object per"
            f" line, as `mnemo export` writes them (`jq -c '.[]' {path}` turns it into them).",
        )
        return 2
    progress = Progress(
        TextColumn("importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("lines"),
        _Rate(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
    )
    try:
        with progress:
            answered = _upload(args, path, progress)
    except Unreachable as exc:
        _say(console, f"mnemo: {unreachable(_url(args), exc)}")
        return 2
    except UploadFailed as exc:
        _say(console, f"mnemo: the connection to {_url(args)} failed: {exc}")
        return 2
    if answered.status != 200:
        target = _url(args).rstrip("/") + "/memory/import"
        keyed = bool(args.key or os.environ.get(CLIENT_KEY))
        _say(console, f"mnemo: {refused(target, answered.status, answered.body, keyed=keyed)}")
        return 2
    last = answered.body
    try:
        answer = msgspec.json.decode(last, type=dict[str, Any])
        if "error" in answer:  # the store failed midway: earlier batches are written
            console.print(f"mnemo: the import stopped: {answer['error']['message']}")
            return 2
        reply = msgspec.convert(answer, ImportReply)
    except (msgspec.DecodeError, KeyError, TypeError):
        console.print(f"mnemo: unexpected answer: {last.decode(errors='replace')[:300]}")
        return 2
    failed = len(reply.errors) + reply.errors_omitted
    console.print(f"imported {reply.imported}, skipped {reply.skipped}, failed {failed}")
    for item in reply.errors[:_SHOWN_ERRORS]:
        console.print(f"  line {item.line}: {item.message}", markup=False, highlight=False)
    if failed > _SHOWN_ERRORS:
        console.print(f"  ... and {failed - _SHOWN_ERRORS} more")
    return 1 if failed else 0
