"""``mnemo reembed``: move a data directory to the configured embedder (server stopped)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from server.config import ConfigError, load_settings
from server.datadir import DataDirLock, DataDirLocked, is_uri

__all__ = ["add_commands", "reembed_command"]


def add_commands(commands: Any) -> None:
    reembed = commands.add_parser(
        "reembed",
        help="make every stored vector again with the configured embedder (server stopped)",
    )
    reembed.add_argument("--data-dir", dest="data_dir", help="data directory (MNEMO_DATA_DIR)")


def reembed_command(args: argparse.Namespace) -> int:
    """Take the data directory's lock (no server may run on it), then re-embed every
    table whose vectors another embedder made, with a progress bar on stderr."""
    try:
        settings = load_settings(os.environ, data_dir=args.data_dir)
    except ConfigError as exc:
        print(f"mnemo: {exc}", file=sys.stderr)
        return 2
    if is_uri(settings.data_dir):
        print(
            f"mnemo: reembed runs on a local data directory, not {settings.data_dir}",
            file=sys.stderr,
        )
        return 2
    from server.main import build_embedder
    from server.reembed import ReembedError, reembed

    lock = DataDirLock(settings.data_dir)
    try:
        lock.acquire()
    except DataDirLocked as exc:
        print(f"mnemo: {exc}", file=sys.stderr)
        return 2
    embedder = build_embedder(settings)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    try:
        with Progress(*columns, transient=True) as bar:
            tasks: dict[str, Any] = {}

            def advance(table: str, done: int, total: int) -> None:
                if table not in tasks:
                    tasks[table] = bar.add_task(table, total=total)
                bar.update(tasks[table], completed=done)

            counts = anyio.run(reembed, Path(settings.data_dir), embedder, advance)
    except ReembedError as exc:
        print(f"mnemo: {exc}", file=sys.stderr)
        return 1
    finally:
        lock.release()
    made = ", ".join(f"{table} {n}" for table, n in counts.items())
    print(f"re-embedded with {embedder.name}: {made}", file=sys.stderr)
    return 0
