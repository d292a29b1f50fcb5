"""Seed 003's per-app notes at scale: creation time, retrieval time, 100+ notes across apps.

    python -m bench.notes [--apps 120] [--conversations 2] [--concurrency 8]

Starts ``mnemo serve`` in its own process (real LanceDB in a temp dir, hash
embedder) against a fake Ollama (``testing/fake_ollama.py``) that answers at
once. One user holds ``--apps`` apps; each app gets ``--conversations``
conversations (a turn, then ``end``), ``--concurrency`` at a time. Creation
time is ``end`` → the note listed by ``GET /apps/{app}/memories`` (polled
every 5 ms). Then, per app: the ``app-memories`` context block over the
WebSocket and the REST list, timed. Seed 003 asks for creation < 5 s and
retrieval < 100 ms. Writes ``bench/results/notes.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import httpx
from websockets.asyncio.client import connect

from bench.common import machine, percentiles, server_process, write_result
from testing.fake_ollama import FakeOllama

_KEY = "k0"


def _answer(path: str, body: dict[str, Any]) -> Any:
    if "format" not in body:
        return "Sure."
    system = body["messages"][0]["content"]
    if "extract durable facts" in system:
        return {"facts": [], "memory_update": {}, "analysis": {}}
    if "memory creation assistant" in system:
        prompt = body["messages"][-1]["content"]
        return {"content": f"The user planned: {prompt[-60:]}", "importance": 5, "tags": ["plan"]}
    return {"recent": "talked about plans"}  # profile; compaction decisions fall back to FIFO


async def _listed(http: httpx.AsyncClient, app: str) -> list[dict[str, Any]]:
    response = await http.get(f"/apps/{app}/memories")
    response.raise_for_status()
    notes: list[dict[str, Any]] = response.json()["memories"]
    return notes


async def _conversation(address: str, http: httpx.AsyncClient, app: str, session: str) -> float:
    """One conversation in ``app``; seconds from ``end`` to its note being listed."""
    url = f"ws://{address}/ws/{session}?app={app}"
    async with connect(url, additional_headers={"Authorization": f"Bearer {_KEY}"}) as ws:
        await ws.recv()
        turn = {"type": "turn", "id": "t1", "user": f"plans for {session}", "assistant": "ok"}
        await ws.send(json.dumps(turn))
        while json.loads(await ws.recv())["type"] != "ack":
            pass
        await ws.send(json.dumps({"type": "end"}))
        ended = time.perf_counter()
        await ws.wait_closed()
    deadline = ended + 30
    while time.perf_counter() < deadline:
        if any(n["sourceConversationId"] == session for n in await _listed(http, app)):
            return time.perf_counter() - ended
        await asyncio.sleep(0.005)
    raise RuntimeError(f"no note for {session} within 30 s")


async def _retrieve(address: str, http: httpx.AsyncClient, app: str) -> tuple[float, float, int]:
    url = f"ws://{address}/ws/read-{app}?app={app}"
    async with connect(url, additional_headers={"Authorization": f"Bearer {_KEY}"}) as ws:
        await ws.recv()
        started = time.perf_counter()
        ask = {"type": "context", "id": "q", "query": "plans", "format": "app-memories"}
        await ws.send(json.dumps(ask))
        while (frame := json.loads(await ws.recv()))["type"] != "context":
            pass
        block = time.perf_counter() - started
    started = time.perf_counter()
    count = len(await _listed(http, app))
    listed = time.perf_counter() - started
    assert count == len(frame["memory_ids"]), (count, frame["memory_ids"])
    return block, listed, count


async def _run(address: str, args: argparse.Namespace) -> dict[str, Any]:
    apps = [f"app{i}" for i in range(args.apps)]
    gate = asyncio.Semaphore(args.concurrency)
    headers = {"Authorization": f"Bearer {_KEY}"}
    async with httpx.AsyncClient(base_url=f"http://{address}", headers=headers) as http:

        async def one(app: str, n: int) -> float:
            async with gate:
                return await _conversation(address, http, app, f"{app}-c{n}")

        started = time.perf_counter()
        jobs = [one(app, n) for n in range(args.conversations) for app in apps]
        created = await asyncio.gather(*jobs)
        seconds = time.perf_counter() - started
        reads = [await _retrieve(address, http, app) for app in apps]
    notes = sum(count for _, _, count in reads)
    return {
        "apps": args.apps,
        "conversations": len(created),
        "notes_kept": notes,
        "seconds": seconds,
        "creation_s": percentiles(created),
        "context_block_ms": percentiles([r[0] * 1000 for r in reads]),
        "rest_list_ms": percentiles([r[1] * 1000 for r in reads]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=120)
    parser.add_argument("--conversations", type=int, default=2, help="per app")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    fake = FakeOllama(models=["llama3.2"], responder=_answer).start_in_thread()
    try:
        env = {
            "MNEMO_EMBEDDER": "hash",
            "MNEMO_LLM_URL": fake.url,
            "MNEMO_RATE_LIMIT": "100000",
            "MNEMO_RATE_BURST": "100000",
            "MNEMO_API_KEYS": f"{_KEY}:u0",
        }
        with server_process(env) as address:
            result = asyncio.run(_run(address, args))
    finally:
        fake.stop_thread()
    result["setup"] = {**machine(), "embedder": "hash", "fake_ollama": "instant"}
    path = write_result("notes", result)
    print(
        f"seed 003 notes: {result['conversations']} conversations over {args.apps} apps "
        f"({args.concurrency} at a time), {result['notes_kept']} notes kept, "
        f"{result['setup']['cores']} cores, fake Ollama answering at once"
    )
    rows = [
        ("end -> note listed (s)", result["creation_s"]),
        ("app-memories context block (ms)", result["context_block_ms"]),
        ("GET /apps/{app}/memories (ms)", result["rest_list_ms"]),
    ]
    for name, row in rows:
        print(f"  {name:<34} p50 {row['p50']:8.3f}  p99 {row['p99']:8.3f}  max {row['max']:8.3f}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
