"""Time to first token through mnemo's drop-in endpoints against calling the model
server directly (issue 46: mnemo adds at most 10 ms at p99), and what a user's 10,000
memories add to a request.

    python -m bench.dropin [--requests 300] [--facts 15000] [--embedder onnx-minilm]
                           [--pause 0.25] [--data DIR]

A fake Ollama in its own process streams a short reply at once (so the time to its first
token is the model server's floor, about a millisecond), and ``mnemo serve`` runs in
another, relaying to it (real LanceDB; ``--embedder``, the bundled MiniLM by default, as
a user runs it). One user is seeded with ``--facts`` facts through the server's store
adapter before start (two thirds active: 10,000 of the default 15,000; the rest
superseded, expired, retracted; ``bench.stats``), another has none. Then, one request at
a time over loopback HTTP, each a new question in the same session
(``X-Mnemo-Session``), round robin: ``POST /api/chat`` straight to the fake; through
mnemo for the user without memories and for the user with them (memory searched, the
block put in the prompt, the exchange archived and learned from); and
``POST /v1/chat/completions`` through mnemo for that user (translated to Ollama's API).
Each is timed from sending to the first line (or event) that carries text, and followed
by ``--pause`` seconds in which the learning it started settles, as it would between a
user's messages. Then each kind again, ``--requests`` in a row without pauses, for the
server's CPU per request (the learning included). ``--data DIR`` keeps the seeded data
directory for another run. Prints the setup and a table, writes
``bench/results/dropin.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import cpu_seconds, fake_model, machine, percentiles, served, write_result
from bench.stats import _seed

_MODEL = "llama3.2"
_TOPICS = "jazz records, trail running, sourdough bread, chess openings, green tea, old maps"


def _question(n: int) -> str:
    topic = _TOPICS.split(", ")[n % 6]
    return f"What do you remember about me and {topic}? (question {n})"


def _first_text_ms(client: httpx.Client, path: str, body: dict[str, Any], sse: bool) -> float:
    """Milliseconds from sending ``body`` to the first line of the answer with text."""
    started = time.perf_counter()
    took = None
    with client.stream("POST", path, json=body) as answer:
        answer.raise_for_status()
        for line in answer.iter_lines():  # read to the end: the exchange completes
            if took is not None or not line.strip() or (sse and not line.startswith("data: {")):
                continue
            if sse:
                event = json.loads(line[6:])
                text = "".join(c["delta"].get("content") or "" for c in event["choices"])
            else:
                text = json.loads(line).get("message", {}).get("content", "")
            if text:
                took = (time.perf_counter() - started) * 1000
    if took is not None:
        return took
    raise RuntimeError(f"{path}: no text in the answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--facts", type=int, default=15_000)
    parser.add_argument("--embedder", default="onnx-minilm")
    parser.add_argument(
        "--pause",
        type=float,
        default=0.25,
        help="seconds after each request: the learning it started settles, as between a"
        " user's messages",
    )
    parser.add_argument("--data", help="keep the seeded data directory here (reused if it exists)")
    parser.add_argument("--name", default="dropin", help="bench/results/<name>.json")
    args = parser.parse_args()
    env = {
        "MNEMO_EMBEDDER": args.embedder,
        "MNEMO_RATE_LIMIT": "1000000",
        "MNEMO_RATE_BURST": "1000000",
        "MNEMO_USER_RATE": "1000000",
        "MNEMO_USER_BURST": "1000000",
        "MNEMO_API_KEYS": "k0:u0,k1:u1",
        "MNEMO_CHAT_MODEL": _MODEL,
        "MNEMO_EXTRACT_MODEL": _MODEL,
        "MNEMO_MAX_FACTS": str(args.facts + 1000),  # the default cap keeps 500 active
    }
    series: dict[str, list[float]] = {
        "direct": [],
        "mnemo_relay_only": [],
        "mnemo_no_memories": [],
        "mnemo_with_memories": [],
        "mnemo_openai_with_memories": [],
    }
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as tmp:
        data_dir = args.data or tmp
        if not (Path(data_dir) / "lancedb" / "facts.lance").exists():
            started = time.perf_counter()
            seeding = {**env, "MNEMO_LLM_URL": "http://127.0.0.1:9"}
            asyncio.run(_seed(data_dir, seeding, args.facts, 0))
            result["seed_s"] = round(time.perf_counter() - started, 1)
        with (
            fake_model() as (url, _),
            served({**env, "MNEMO_LLM_URL": url}, data_dir=data_dir) as (address, process),
        ):
            direct = httpx.Client(base_url=url, timeout=60)
            clients = {
                key: httpx.Client(
                    base_url=f"http://{address}",
                    headers={"Authorization": f"Bearer {key}", "X-Mnemo-Session": f"bench-{key}"},
                    timeout=60,
                )
                for key in ("k0", "k1")
            }
            bare = httpx.Client(
                base_url=f"http://{address}",
                headers={"Authorization": "Bearer k0", "X-Mnemo-Opt-Out": "inject,learn"},
                timeout=60,
            )
            runs = [
                ("direct", direct, "/api/chat", False),
                ("mnemo_relay_only", bare, "/api/chat", False),
                ("mnemo_no_memories", clients["k1"], "/api/chat", False),
                ("mnemo_with_memories", clients["k0"], "/api/chat", False),
                ("mnemo_openai_with_memories", clients["k0"], "/v1/chat/completions", True),
            ]
            for n in range(-10, args.requests):  # ten rounds to warm up, not counted
                for name, client, path, sse in runs:
                    body = {
                        "model": _MODEL,
                        "messages": [{"role": "user", "content": _question(n)}],
                        "stream": True,
                    }
                    took = _first_text_ms(client, path, body, sse)
                    if n >= 0:
                        series[name].append(took)
                    time.sleep(args.pause)
            # The server's CPU per request of each kind (the load of the machine moves
            # latency; this moves less): a block of requests of one kind after another.
            cpu: dict[str, float] = {}
            for name, client, path, sse in runs[1:]:
                before = cpu_seconds(process.pid)
                for n in range(args.requests):
                    body = {
                        "model": _MODEL,
                        "messages": [{"role": "user", "content": _question(n)}],
                        "stream": True,
                    }
                    _first_text_ms(client, path, body, sse)
                time.sleep(0.5)  # the learning that follows the last answers
                cpu[name] = round((cpu_seconds(process.pid) - before) * 1000 / args.requests, 3)
            for client in (direct, bare, *clients.values()):
                client.close()
    rows = {name: percentiles(samples) for name, samples in series.items()}
    added = {
        point: round(rows["mnemo_with_memories"][point] - rows["direct"][point], 3)
        for point in ("p50", "p99")
    }
    memories = {
        point: round(rows["mnemo_with_memories"][point] - rows["mnemo_no_memories"][point], 3)
        for point in ("p50", "p99")
    }
    active = args.facts * 2 // 3
    result.update(
        {
            "requests": args.requests,
            "pause_s": args.pause,
            "facts": args.facts,
            "active_facts": active,
            "first_token_ms": rows,
            "server_cpu_ms_per_request": cpu,
            "added_by_mnemo_ms": added,
            "added_by_memories_ms": memories,
            "goal": "mnemo adds at most 10 ms at p99",
            "setup": {
                **machine(),
                "embedder": args.embedder,
                "store": "LanceDB",
                "load_average": os.getloadavg(),
            },
        }
    )
    written = write_result(args.name, result)
    setup = result["setup"]
    print(
        f"drop-in time to first token: {args.requests} requests per row, one at a time; "
        f"{setup['cores']} cores ({setup['cpu']}); embedder {args.embedder}; fake Ollama and "
        f"mnemo each in their own process; one user with {args.facts} facts ({active} active),"
        f" one with none; {args.pause} s after each request"
    )
    print(f"  {'':<44}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}  (ms)")
    labels = {
        "direct": "POST /api/chat straight to the model server",
        "mnemo_relay_only": "through mnemo, opted out of memory and learning",
        "mnemo_no_memories": "through mnemo, a user with no memories",
        "mnemo_with_memories": f"through mnemo, a user with {active} memories",
        "mnemo_openai_with_memories": "the same, /v1/chat/completions (translated)",
    }
    for name, label in labels.items():
        row = rows[name]
        print(f"  {label:<44}{row['p50']:9.3f}{row['p95']:9.3f}{row['p99']:9.3f}{row['max']:9.3f}")
    print(
        "  mnemo's CPU per request (ms): "
        + ", ".join(
            f"{labels[name].removeprefix('through mnemo, ')}: {ms}" for name, ms in cpu.items()
        )
    )
    print(f"  load average during the run: {setup['load_average']}")
    print(f"  mnemo adds: p50 {added['p50']:.3f} ms, p99 {added['p99']:.3f} ms (goal: <= 10 ms)")
    print(f"  the memories add: p50 {memories['p50']:.3f} ms, p99 {memories['p99']:.3f} ms")
    print(f"wrote {written}")


if __name__ == "__main__":
    main()
