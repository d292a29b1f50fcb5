"""``mnemo tail`` and ``mnemo actors``: watching a running server from a terminal.

``tail`` follows ``/ws/tail`` and prints one coloured line per event (or JSON
lines with ``--json``, for piping); when the connection drops (the server
restarts) it reconnects with backoff. ``actors`` prints the live actors as a
table. Both take ``--url`` (default ``MNEMO_URL`` or ``http://127.0.0.1:8000``)
and ``--key`` (default ``MNEMO_API_KEY``; an admin key sees every user).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from typing import Any, TextIO
from urllib.parse import urlencode, urlsplit, urlunsplit

import anyio
import httpx
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from server.cli_errors import refused, unreachable
from server.config import CLIENT_KEY, CLIENT_URL

__all__ = ["actors", "add_commands", "format_event", "tail"]

_COLOURS = {
    "actor": "cyan",
    "turn": "green",
    "chat": "green",
    "context": "blue",
    "extraction": "magenta",
    "facts": "yellow",
    "note": "yellow",
    "store": "bright_black",
    "llm": "red",
    "tail": "red",
}
_RETRY_MAX = 5.0


def add_commands(commands: Any) -> None:
    """Add ``tail`` and ``actors`` to the ``mnemo`` subcommand parser."""
    follow = commands.add_parser("tail", help="follow a running server's events")
    follow.add_argument("--session", help="only this session")
    follow.add_argument("--user", help="only this user (admin key)")
    follow.add_argument(
        "--kind", action="append", default=[], help="event kind or family (repeatable)"
    )
    follow.add_argument("--json", action="store_true", help="JSON lines instead of text")
    follow.add_argument("--count", type=int, help="exit after this many events")
    table = commands.add_parser("actors", help="list a running server's live actors")
    table.add_argument("--user", help="only this user's actors (admin key)")
    table.add_argument("--json", action="store_true", help="the JSON answer as it is")
    for command in (follow, table):
        command.add_argument(
            "--url",
            default=os.environ.get(CLIENT_URL, "http://127.0.0.1:8000"),
            help=f"server URL (default {CLIENT_URL} or http://127.0.0.1:8000)",
        )
        command.add_argument(
            "--key",
            default=os.environ.get(CLIENT_KEY),
            help=f"API key (default {CLIENT_KEY}; an admin key sees every user)",
        )


def format_event(event: dict[str, Any]) -> Text:
    """One readable line: time, kind (coloured by family), session, user, details."""
    at = datetime.fromisoformat(str(event.get("at", "")).replace("Z", "+00:00"))
    kind = str(event.get("kind", "?"))
    line = Text(at.strftime("%H:%M:%S.%f")[:-3] + " ", style="dim")
    line.append(f"{kind:<20}", style=_COLOURS.get(kind.split(".", 1)[0], "white"))
    who = f"{event.get('session_id') or '-'} {event.get('user_id') or '-'}"
    line.append(f" {who:<24}", style="bold")
    details = " ".join(f"{k}={_short(v)}" for k, v in (event.get("data") or {}).items())
    if details:
        line.append(" " + details)
    return line


def _short(value: Any) -> str:
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return "[" + "; ".join(str(v.get("content", v.get("id", v))) for v in value) + "]"
    text: str = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:79] + "…"


def _tail_url(args: argparse.Namespace) -> str:
    parts = urlsplit(str(args.url))
    scheme = "wss" if parts.scheme == "https" else "ws"
    query = [(name, v) for name in ("session", "user") if (v := getattr(args, name))]
    query += [("kind", kind) for kind in args.kind]
    return str(urlunsplit((scheme, parts.netloc, "/ws/tail", urlencode(query), "")))


async def _follow(args: argparse.Namespace, out: TextIO, err: Console) -> int:
    console = Console(file=out, highlight=False, soft_wrap=True)
    seen, delay = 0, 0.5
    while True:
        try:
            headers = {"Authorization": f"Bearer {args.key}"} if args.key else {}
            async with connect(_tail_url(args), additional_headers=headers) as connection:
                delay = 0.5
                async for raw in connection:
                    event = json.loads(raw)
                    if args.json:
                        out.write(json.dumps(event, ensure_ascii=False) + "\n")
                        out.flush()
                    else:
                        console.print(format_event(event))
                    seen += 1
                    if args.count is not None and seen >= args.count:
                        return 0
        except InvalidStatus as exc:
            answer = exc.response
            said = refused(
                f"{args.url}/ws/tail",
                answer.status_code,
                bytes(answer.body or b""),
                keyed=bool(args.key),
            )
            err.print(f"mnemo tail: {said}", markup=False, highlight=False, soft_wrap=True)
            return 1
        except OSError as exc:
            lost = f"mnemo tail: {unreachable(str(args.url), exc)} Retrying in {delay:.1f} s."
            err.print(lost, markup=False, highlight=False, style="dim", soft_wrap=True)
        except ConnectionClosed:
            err.print(f"[dim]mnemo tail: disconnected; reconnecting in {delay:.1f} s[/dim]")
        await anyio.sleep(delay)
        delay = min(delay * 2, _RETRY_MAX)


def tail(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    err = Console(file=sys.stderr)
    try:
        return anyio.run(_follow, args, out, err)
    except KeyboardInterrupt:
        return 0


def actors(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    headers = {"Authorization": f"Bearer {args.key}"} if args.key else {}
    params = {"user": args.user} if args.user else {}
    try:
        response = httpx.get(f"{args.url}/actors", headers=headers, params=params, timeout=10)
    except httpx.HTTPError as exc:
        print(f"mnemo actors: {unreachable(str(args.url), exc)}", file=sys.stderr)
        return 1
    if response.status_code != 200:
        said = refused(
            str(response.url), response.status_code, response.content, keyed=bool(args.key)
        )
        print(f"mnemo actors: {said}", file=sys.stderr)
        return 1
    body = response.json()
    if args.json:
        out.write(json.dumps(body) + "\n")
        return 0
    table = Table(title=f"{body['total']} live actors")
    columns = ["session_id", "user_id", "scope", "turn_count", "state", "idle_seconds"]
    columns += ["expires_in", "mailbox_depth"]
    for column in columns:
        table.add_column(column.replace("_", " "))
    for item in body["items"]:
        table.add_row(*(str(item[c]) for c in columns))
    console = Console(file=out)
    wanted = Measurement.get(console, console.options.update_width(1 << 16), table).maximum
    if wanted > console.width:  # ids are never cut: a wider table wraps in the terminal
        console = Console(file=out, width=wanted)
    console.print(table)
    return 0
