"""Resident memory per stored message of a user mapped from their saved index.

    python -m bench.resident [--messages 60000] [--searches 100]

Builds one user of ``--messages`` messages (texts of 150-260 made-up words, about
1.5 KB each, like LongMemEval's; the hash embedder at 384 dimensions, MiniLM's size)
in a temporary LanceDB directory and saves their index. Then, in a fresh process each
time, maps it and runs ``--searches`` searches, reading the process's ``RssAnon`` and
``RssFile`` (``/proc/self/status``) before the load, after it, and after the searches:
once with the file in the kernel's page cache (as right after a save or a fetch), and,
as root, once after emptying it (``/proc/sys/vm/drop_caches``). Per message, in bytes.
Writes ``bench/results/resident.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import machine, write_result
from memory.hashing import HashEmbedder
from schemas.records import ArchivedMessage
from server.adapters.lance_store import LanceStore

_USER = "big"


def _store(root: Path) -> LanceStore:
    return LanceStore(
        root / "lancedb",
        embedder=HashEmbedder(dim=384),
        indexes=root / "indexes",
        save_index_after=3600.0,
    )


async def _build(root: Path, messages: int) -> None:
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(30000)]
    store = _store(root)
    await store.open()
    embedder = HashEmbedder(dim=384)
    base = datetime(2024, 1, 1, tzinfo=UTC)
    for start in range(0, messages, 2000):
        rows = [
            ArchivedMessage(
                id=f"m{n}",
                user_id=_USER,
                session_id=f"s{n // 20}",
                scope="global",
                turn=n % 20,
                role="user" if n % 2 == 0 else "assistant",
                speaker="user" if n % 2 == 0 else "assistant",
                text=" ".join(rng.choice(words) for _ in range(rng.randint(150, 260))),
                at=base + timedelta(minutes=n),
            )
            for n in range(start, min(messages, start + 2000))
        ]
        await store.append_messages(rows, await embedder.embed([r.text for r in rows]))
    await store.message_index(_USER)
    await store.aclose()  # saves the index


def _rss() -> dict[str, int]:
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(("RssAnon", "RssFile")):
                name, value = line.split(":")
                found[name] = int(value.split()[0]) * 1024
    return found


async def _measure(root: Path, searches: int) -> dict[str, Any]:
    store = _store(root)
    await store.open()
    embedder = HashEmbedder(dim=384)
    before = _rss()
    size = (await store.message_index(_USER)).size
    loaded = _rss()
    rng = random.Random(1)
    topics = ["apple", "river", "music", "travel", "doctor", "garden", "ticket", "winter"]
    for _ in range(searches):
        text = " ".join(rng.choice(topics) for _ in range(4))
        await store.search_messages(_USER, text, (await embedder.embed([text]))[0], k=10)
    searched = _rss()
    await store.aclose()
    return {
        "messages": size,
        "after_load_bytes_per_message": {k: round((loaded[k] - before[k]) / size) for k in before},
        "after_searches_bytes_per_message": {
            k: round((searched[k] - before[k]) / size) for k in before
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=60_000)
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # the fresh process's part
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(asyncio.run(_measure(Path(args.measure), args.searches))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        asyncio.run(_build(root, args.messages))
        file_mb = sum(p.stat().st_size for p in (root / "indexes").glob("*.idx")) / (1 << 20)
        runs: dict[str, Any] = {}
        for cache in ("warm", "cold"):
            if cache == "cold":
                if os.geteuid() != 0:
                    break
                subprocess.run(["sync"], check=True)
                Path("/proc/sys/vm/drop_caches").write_text("3\n")
            command = [sys.executable, "-m", "bench.resident", "--measure", str(root)]
            command += ["--searches", str(args.searches)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            runs[cache] = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"page cache {cache}: {runs[cache]}")
    result = {"machine": machine(), "index_file_mb": round(file_mb, 1), "runs": runs}
    print(f"index file {file_mb:.1f} MB; wrote {write_result('resident', result)}")


if __name__ == "__main__":
    main()
