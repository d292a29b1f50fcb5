"""``mnemo cluster map``: the proxy's map file, from the API keys the server is configured
with (``MNEMO_API_KEYS`` or ``MNEMO_CONFIG``, read as ``mnemo serve`` reads them).

One line per key: the SHA-256 of the key (lowercase hex) and the shard of the key's user.
HAProxy hashes the key a request carries the same way and looks the shard up, so a user's
requests, whichever key they use, land on one node (docs/scaling.md). The file holds no
secret: only hashes of the keys.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from server.config import ConfigError, load_settings

__all__ = ["add_commands", "cluster_command", "shard_map"]


def add_commands(commands: Any) -> None:
    cluster = commands.add_parser("cluster", help="helpers for running several nodes")
    actions = cluster.add_subparsers(
        dest="cluster_command", required=True, help="what to do (map: the proxy's shard map)"
    )
    map_parser = actions.add_parser(
        "map",
        help="write the proxy's map: SHA-256 of each API key and its user's shard",
    )
    map_parser.add_argument("-o", "--output", help="file to write (default: stdout)")


def cluster_command(args: argparse.Namespace) -> int:
    if args.cluster_command == "map":
        return map_command(args)
    return 2  # pragma: no cover - argparse rejects unknown commands


def shard_map(api_keys: Mapping[str, str]) -> str:
    """The map file's text for ``api_keys`` (key -> user), sorted by the key's hash."""
    from server.cluster.shards import shard_of

    lines = sorted(
        f"{hashlib.sha256(key.encode()).hexdigest()} {shard_of(user)}\n"
        for key, user in api_keys.items()
    )
    return "".join(lines)


def map_command(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(os.environ)
    except ConfigError as exc:
        print(f"mnemo: {exc}", file=sys.stderr)
        return 2
    if not settings.api_keys:
        print(
            "mnemo: no API keys configured (MNEMO_API_KEYS=key:user,... or api_keys in "
            "MNEMO_CONFIG): the map would send every request to an arbitrary node",
            file=sys.stderr,
        )
        return 2
    text = shard_map(settings.api_keys)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        _write_atomically(Path(args.output), text)
    except OSError as exc:
        print(f"mnemo: cannot write {args.output}: {exc}", file=sys.stderr)
        return 1
    return 0


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``: a
    proxy reading the map sees the old file or the new one, never half of one."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o644)  # readable by the proxy's user: it holds no secret
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
