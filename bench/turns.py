"""``turn`` → ``ack`` round trip: one connection in sequence, then many sessions at once.

    python -m bench.turns [--turns N] [--sessions N] [--per-session N] [--embedder NAME]

Starts ``mnemo serve`` in its own process on a temp data directory (real
LanceDB, the chosen embedder; no Ollama needed: ``turn`` never calls it),
drives it with the ``websockets`` client, prints a table and writes
``bench/results/turns.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from websockets.asyncio.client import connect

from bench.common import machine, percentiles, server_process, write_result

_USER = "I moved to Lisbon last spring and I am learning Portuguese at a school near Alfama."
_ASSISTANT = "That sounds exciting! How are the lessons going so far?"


async def _session(address: str, session_id: str, turns: int, samples: list[float]) -> int:
    """Send ``turns`` turns one after another; returns the number of error frames."""
    errors = 0
    async with connect(f"ws://{address}/ws/{session_id}", max_queue=None) as ws:
        json.loads(await ws.recv())  # ready
        for i in range(turns):
            frame = json.dumps(
                {"type": "turn", "id": f"t{i}", "user": f"{_USER} ({i})", "assistant": _ASSISTANT}
            )
            started = time.perf_counter()
            await ws.send(frame)
            while True:  # skip pushed `memory` frames: the answer carries this turn's id
                answer = json.loads(await ws.recv())
                if answer.get("id") == f"t{i}":
                    break
            samples.append((time.perf_counter() - started) * 1000)
            if answer["type"] != "ack":
                errors += 1
    return errors


async def _run(address: str, args: argparse.Namespace) -> dict[str, Any]:
    single: list[float] = []
    await _session(address, "warmup", 20, [])
    started = time.perf_counter()
    single_errors = await _session(address, "single", args.turns, single)
    single_seconds = time.perf_counter() - started

    many: list[float] = []
    started = time.perf_counter()
    errors = await asyncio.gather(
        *(_session(address, f"c{i}", args.per_session, many) for i in range(args.sessions))
    )
    many_seconds = time.perf_counter() - started
    return {
        "one_connection": {
            "turns": args.turns,
            "errors": single_errors,
            "turns_per_s": args.turns / single_seconds,
            "ack_ms": percentiles(single),
        },
        "concurrent": {
            "sessions": args.sessions,
            "turns": args.sessions * args.per_session,
            "errors": sum(errors),
            "turns_per_s": args.sessions * args.per_session / many_seconds,
            "ack_ms": percentiles(many),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--per-session", type=int, default=20)
    parser.add_argument("--embedder", default="onnx-minilm")
    args = parser.parse_args()
    env = {
        "MNEMO_EMBEDDER": args.embedder,
        "MNEMO_LLM_URL": "http://127.0.0.1:9",
        "MNEMO_RATE_LIMIT": "100000",
        "MNEMO_RATE_BURST": "100000",
    }
    with server_process(env) as address:
        result = asyncio.run(_run(address, args))
    result["setup"] = {**machine(), "embedder": args.embedder, "store": "LanceDB (temp dir)"}
    path = write_result(f"turns-{args.embedder}", result)
    print(
        f"turn -> ack, embedder {args.embedder}, {result['setup']['cores']} cores "
        f"({result['setup']['cpu']}), server in its own process"
    )
    header = ("scenario", "turns", "turns/s", "p50 ms", "p95 ms", "p99 ms", "errors")
    print(f"{header[0]:<28}" + "".join(f"{h:>9}" for h in header[1:]))
    for name, key in (
        ("1 connection, sequential", "one_connection"),
        (f"{args.sessions} sessions, concurrent", "concurrent"),
    ):
        row = result[key]
        ms = row["ack_ms"]
        print(
            f"{name:<28}{row['turns']:>9}{row['turns_per_s']:>9.0f}{ms['p50']:>9.2f}"
            f"{ms['p95']:>9.2f}{ms['p99']:>9.2f}{row['errors']:>9}"
        )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
