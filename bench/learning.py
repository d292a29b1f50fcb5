"""Memory work off the critical path: extraction throughput and chat's wait before its first delta.

    python -m bench.learning [--sessions 100] [--turns 10] [--chats 200] [--embedder hash]

Starts ``mnemo serve`` in its own process (real LanceDB in a temp dir) against
a fake Ollama (``testing/fake_ollama.py``) that answers instantly: chat replies
stream at once, every extraction call returns one fact about the last turn it
saw. Phase 1: ``--sessions`` sessions each send ``--turns`` turns (waiting for
each ack) and the fake counts how many turns reached extraction and when.
Each session belongs to its own user (API keys ``k<i>``). Phase 2: chats
(user 0) alone, then chats while phase-1-style turn load runs, timing
``chat`` → first ``delta`` and reading the server's split of it from ``done.usage``:
``queued_ms`` (waiting for the session actor, which memory work would show up in)
and ``context_ms`` (retrieval, deliberately on the path). Writes
``bench/results/learning.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import threading
import time
from typing import Any

from websockets.asyncio.client import connect

from bench.common import machine, percentiles, server_process, write_result
from testing.fake_ollama import FakeOllama

_TURN = re.compile(r"Turn (\d+) user: <episode_content>session (\S+) turn")


class _Recorder:
    """Answers the fake's requests and records which turns reached extraction, and when."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.extracted: set[tuple[str, int]] = set()
        self.calls = 0
        self.last_at = 0.0

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        if "format" not in body:
            return "Sure, here is a short answer."
        prompt = body["messages"][-1]["content"]
        if "extract durable facts" not in body["messages"][0]["content"]:
            return {"content": "A short note.", "work": "", "personal": ""}  # note / profile
        seen = [(s, int(t)) for t, s in _TURN.findall(prompt)]
        with self.lock:
            self.calls += 1
            self.extracted.update(seen)
            self.last_at = time.perf_counter()
        if not seen:
            return {"facts": [], "memory_update": {}, "analysis": {}}
        session, turn = seen[-1]
        fact = {
            "content": f"User mentioned item {turn} in {session}",
            "category": "knowledge",
            "confidence": 0.9,
        }
        return {"facts": [fact], "memory_update": {"should_store": True}, "analysis": {}}


def _url(address: str, session: str, user: int) -> str:
    return f"ws://{address}/ws/{session}"


def _auth(user: int) -> dict[str, str]:
    return {"Authorization": f"Bearer k{user}"}


async def _turns(address: str, session: str, count: int, user: int) -> None:
    async with connect(
        _url(address, session, user), max_queue=None, additional_headers=_auth(user)
    ) as ws:
        await ws.recv()
        for i in range(1, count + 1):
            await ws.send(
                json.dumps(
                    {
                        "type": "turn",
                        "id": f"t{i}",
                        "user": f"session {session} turn {i}: I like item {i}",
                        "assistant": "Noted.",
                    }
                )
            )
            while json.loads(await ws.recv())["type"] != "ack":
                pass


class _Chats:
    """Per chat: ``chat`` -> first ``delta`` as the client saw it, and the server's own
    split from ``done.usage``: mailbox wait (``queued_ms``) and context build."""

    def __init__(self) -> None:
        self.first_delta: list[float] = []
        self.queued: list[float] = []
        self.context: list[float] = []

    def summary(self) -> dict[str, Any]:
        return {
            "first_delta_ms": percentiles(self.first_delta),
            "queued_ms": percentiles(self.queued),
            "context_ms": percentiles(self.context),
        }


async def _chats(address: str, session: str, count: int, into: _Chats, user: int) -> None:
    async with connect(
        _url(address, session, user), max_queue=None, additional_headers=_auth(user)
    ) as ws:
        await ws.recv()
        for i in range(count):
            started = time.perf_counter()
            await ws.send(json.dumps({"type": "chat", "id": f"c{i}", "content": f"question {i}"}))
            first = None
            while True:
                frame = json.loads(await ws.recv())
                if frame["type"] == "delta" and first is None:
                    first = time.perf_counter()
                if frame["type"] in ("done", "error"):
                    break
            if first is not None and frame["type"] == "done":
                into.first_delta.append((first - started) * 1000)
                into.queued.append(frame["usage"]["queued_ms"])
                into.context.append(frame["usage"]["context_ms"])


async def _run(address: str, recorder: _Recorder, args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    await asyncio.gather(*(_turns(address, f"s{i}", args.turns, i) for i in range(args.sessions)))
    acked = time.perf_counter() - started
    total = args.sessions * args.turns
    deadline = time.perf_counter() + 300
    while len(recorder.extracted) < total and time.perf_counter() < deadline:
        await asyncio.sleep(0.05)
    extraction_seconds = recorder.last_at - started
    with recorder.lock:
        extracted, calls = len(recorder.extracted), recorder.calls

    quiet = _Chats()
    await _chats(address, "quiet", args.chats, quiet, 0)
    loaded = _Chats()
    await asyncio.gather(
        _chats(address, "loaded", args.chats, loaded, 0),
        *(_turns(address, f"l{i}", args.turns, i) for i in range(args.sessions)),
    )
    return {
        "extraction": {
            "sessions": args.sessions,
            "turns": total,
            "turns_extracted": extracted,
            "extraction_calls": calls,
            "turns_per_call": extracted / max(calls, 1),
            "seconds": extraction_seconds,
            "turns_per_s": extracted / extraction_seconds,
            "acks_seconds": acked,
        },
        "chat": {"quiet": quiet.summary(), "under_turn_and_extraction_load": loaded.summary()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--embedder", default="hash")
    args = parser.parse_args()
    recorder = _Recorder()
    fake = FakeOllama(models=["llama3.2"], responder=recorder).start_in_thread()
    try:
        env = {
            "MNEMO_EMBEDDER": args.embedder,
            "MNEMO_LLM_URL": fake.url,
            "MNEMO_RATE_LIMIT": "100000",
            "MNEMO_RATE_BURST": "100000",
            "MNEMO_EXTRACT_CONCURRENCY": "4",
            "MNEMO_API_KEYS": ",".join(f"k{i}:u{i}" for i in range(args.sessions)),
        }
        with server_process(env) as address:
            result = asyncio.run(_run(address, recorder, args))
    finally:
        fake.stop_thread()
    result["setup"] = {**machine(), "embedder": args.embedder, "fake_ollama": "instant"}
    path = write_result("learning", result)
    ex = result["extraction"]
    print(
        f"extraction through the coalescing extractor, {args.sessions} sessions x "
        f"{args.turns} turns, embedder {args.embedder}, {result['setup']['cores']} cores"
    )
    print(
        f"  {ex['turns_extracted']}/{ex['turns']} turns extracted in {ex['seconds']:.2f} s "
        f"= {ex['turns_per_s']:.0f} turns/s, {ex['extraction_calls']} calls "
        f"({ex['turns_per_call']:.1f} turns per call)"
    )
    print(f"chat (fake Ollama answers at once), ms, {args.chats} chats per row")
    print(f"  {'':<32} {'first delta p50/p99':>20} {'queued p50/p99':>16} {'context p50/p99':>17}")
    for name, row in result["chat"].items():
        cells = [row[k] for k in ("first_delta_ms", "queued_ms", "context_ms")]
        text = "".join(f"{c['p50']:>10.2f}/{c['p99']:<8.2f}" for c in cells)
        print(f"  {name:<32} {text}")
    print("  queued = waiting for the session actor, i.e. on memory work; context = retrieval")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
