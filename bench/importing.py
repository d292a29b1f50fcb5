"""``POST /memory/import`` throughput: a JSON-lines file of turns, imported, then again.

    python -m bench.importing [--turns N] [--embedder NAME]

Starts ``mnemo serve`` in its own process on a temp data directory (real
LanceDB, the chosen embedder, default ``hash``; no Ollama needed), streams the
lines in 64 KiB chunks with ``httpx`` as ``mnemo import`` does, imports the
same body a second time (every line skipped), prints a table and writes
``bench/results/importing.json`` (``importing-<embedder>.json`` for another embedder).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from bench.common import machine, server_process, write_result

_CHUNK = 1 << 16
_TEXTS = (
    "I moved to Lisbon last spring and I am learning Portuguese at a school near Alfama.",
    "That sounds exciting! How are the lessons going so far?",
    "We booked a week in the Azores for October; whale watching is the plan.",
    "Remember to renew the passport before the trip, it expires in November.",
)


def _body(turns: int) -> bytes:
    lines = []
    for n in range(turns):
        line = {
            "kind": "turn",
            "id": f"conv{n // 100}-{n % 100}",
            "session_id": f"conv{n // 100}",
            "speaker": "Ann" if n % 2 == 0 else "Bot",
            "role": "user" if n % 2 == 0 else "assistant",
            "text": f"{_TEXTS[n % len(_TEXTS)]} ({n})",
            "at": f"2024-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
            "turn": n % 100 // 2 + 1,
            "meta": {"line": n},
        }
        lines.append(json.dumps(line))
    return ("\n".join(lines) + "\n").encode()


def _chunks(body: bytes) -> Iterator[bytes]:
    for start in range(0, len(body), _CHUNK):
        yield body[start : start + _CHUNK]


def _import(client: httpx.Client, body: bytes) -> dict[str, Any]:
    started = time.perf_counter()
    response = client.post(
        "/memory/import",
        content=_chunks(body),
        headers={"Content-Type": "application/x-ndjson"},
    )
    seconds = time.perf_counter() - started
    response.raise_for_status()
    reply: dict[str, Any] = response.json()
    lines = reply["imported"] + reply["skipped"] + len(reply["errors"])
    return {
        "lines": lines,
        "imported": reply["imported"],
        "skipped": reply["skipped"],
        "errors": len(reply["errors"]),
        "seconds": seconds,
        "lines_per_s": lines / seconds,
        "mib_per_s": len(body) / seconds / (1 << 20),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--embedder", default="hash")
    args = parser.parse_args()
    body = _body(args.turns)
    env = {"MNEMO_EMBEDDER": args.embedder, "MNEMO_LLM_URL": "http://127.0.0.1:9"}
    with (
        server_process(env) as address,
        httpx.Client(base_url=f"http://{address}", timeout=600) as client,
    ):
        first = _import(client, body)
        again = _import(client, body)
    result: dict[str, Any] = {
        "first_import": first,
        "re_import": again,
        "body_bytes": len(body),
        "setup": {**machine(), "embedder": args.embedder, "store": "LanceDB (temp dir)"},
    }
    path = write_result(
        "importing" if args.embedder == "hash" else f"importing-{args.embedder}", result
    )
    setup = result["setup"]
    print(
        f"POST /memory/import, {args.turns} turns ({len(body) / (1 << 20):.1f} MiB), embedder "
        f"{args.embedder}, {setup['cores']} cores ({setup['cpu']}), server in its own process"
    )
    header = ("run", "lines", "imported", "skipped", "seconds", "lines/s", "MiB/s")
    print(f"{header[0]:<22}" + "".join(f"{h:>10}" for h in header[1:]))
    for name, row in (("first import", first), ("same file again", again)):
        print(
            f"{name:<22}{row['lines']:>10}{row['imported']:>10}{row['skipped']:>10}"
            f"{row['seconds']:>10.2f}{row['lines_per_s']:>10.0f}{row['mib_per_s']:>10.2f}"
        )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
