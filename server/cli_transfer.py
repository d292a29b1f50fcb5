"""``mnemo export`` and ``mnemo import``: a user's memory to and from a JSON-lines file,
over the REST API of a running server, with a progress bar on stderr."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import msgspec
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

from schemas.transfer import ImportReply
from server.cli_errors import refused, unreachable
from server.config import CLIENT_KEY, CLIENT_URL

__all__ = ["add_commands", "export_command", "import_command"]

_CHUNK = 1 << 16
_NDJSON = "application/x-ndjson"
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
    out: IO[bytes] = open(args.out, "wb") if args.out else sys.stdout.buffer
    try:
        with _client(args) as client, progress, client.stream("GET", "/memory/export") as response:
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
    except httpx.HTTPError as exc:
        _say(console, _lost(args, exc))
        return 2
    finally:
        if args.out:
            out.close()
        else:
            out.flush()
    return 0


def _chunks(path: Path, progress: Progress) -> Iterator[bytes]:
    task = progress.add_task("import", total=path.stat().st_size)
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            yield chunk
            progress.advance(task, len(chunk))


def _upload(client: httpx.Client, path: Path, progress: Progress) -> bytes | str:
    """Send the file; the server's last line (the reply or an error), or a failure message.

    Progress lines keep the answer alive while the server writes the batches the
    connection still buffers after the last byte was sent.
    """
    headers = {"Content-Type": _NDJSON, "Accept": _NDJSON}
    body = _chunks(path, progress)
    with client.stream("POST", "/memory/import", content=body, headers=headers) as response:
        if response.status_code != 200:
            response.read()
            return _failure(response)
        last, pending = b"", b""
        for chunk in response.iter_bytes():  # split on b"\n" only, as the server writes
            *lines, pending = (pending + chunk).split(b"\n")
            last = next((line for line in reversed(lines) if line.strip()), last)
        return pending if pending.strip() else last


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
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    try:
        with _client(args) as client, progress:
            last = _upload(client, path, progress)
    except httpx.HTTPError as exc:
        _say(console, _lost(args, exc))
        return 2
    if isinstance(last, str):
        _say(console, last)
        return 2
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
