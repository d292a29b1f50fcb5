"""What the worst legal input of each kind costs, and what another user sees meanwhile.

    python -m bench.hostile [--seconds S] [--connections N] [--embedder NAME] [--only KIND]
    python -m bench.hostile --storm [--seconds S] [--workers N]

(``--storm``: one user's storm of model work against another user's chat and fact
writes, ``bench.storm``.)

Starts ``mnemo serve`` in its own process (real LanceDB; a fake Ollama in another
process) with its default rate limits. A bystander (another user) sends a ``turn`` every
50 ms and measures ``turn`` → ``ack``; a poller asks ``/healthz`` every 100 ms. First a
quiet phase, then, for ``--seconds`` each, an attacker sends the most expensive legal
request of one kind as fast as the server allows (WebSocket frames at the per-connection
rate limit on ``--connections`` connections, HTTP requests back to back on as many). For
each phase: the bystander's ack p50/p99/max, ``/healthz`` p99/max, the attacker's own
answer times, and the server's CPU. Goals (issue 16): ack p99 <= 50 ms, ``/healthz``
<= 100 ms. Writes ``bench/results/hostile.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from bench.common import cpu_seconds, load_server, machine, percentiles, write_result
from bench.storm import storm_main

_FRAME = 65536
_RATE = 50.0  # MNEMO_RATE_LIMIT's default: frames a second per connection
_LINE = (1 << 20) - 100_000  # an import line's meta: the line is at most 1 MiB in all
_TEXT = 65536  # the longest legal text of a message
_CJK = "我喜欢用户机器学习模型今天天气很好"
_ID = re.compile(r'\{"type": "\w+", "id": "([^"]+)"')


def _fit(prefix: str, filler: str, suffix: str, limit: int = _FRAME - 64) -> str:
    """``prefix + filler * n + suffix`` as long as fits in ``limit`` UTF-8 bytes."""
    room = limit - len((prefix + suffix).encode())
    unit = len(filler.encode())
    return prefix + filler * (room // unit) + suffix


def _words(n: int) -> str:
    """Distinct words (each a new term for the indexes)."""
    return " ".join(f"w{i:x}q" for i in range(n))


def _frames() -> dict[str, Callable[[int], str]]:
    """Kind -> the n-th frame of that attack (each at most 64 KiB)."""
    letters = "a" * (_FRAME - 200)
    cjk = _fit("", _CJK, "", _FRAME - 200)
    words = _fit("", "w9aq ", "", _FRAME - 400)
    deep: Any = 1
    for _ in range(30):  # the frame 1, meta 2, then 30 lists: 32 levels, each one wide
        deep = [deep, *range(1000, 1280)]
    deep_meta = json.dumps({"x": deep})
    wide = json.dumps({f"k{i}": [i, i * 2] for i in range(2800)})
    too_deep = "[" * 30000 + "]" * 30000
    head = '{"type": "turn", "id":'

    def turn(n: int) -> str:
        half = (_FRAME - 300) // 2
        user = _fit(f"u{n} ", "word ", "", half)
        return json.dumps({"type": "turn", "id": f"t{n}", "user": user, "assistant": user})

    return {
        "context-letters": lambda n: json.dumps(
            {"type": "context", "id": f"q{n}", "query": letters, "format": "conversation"}
        ),
        "context-cjk": lambda n: json.dumps(
            {"type": "context", "id": f"q{n}", "query": cjk}, ensure_ascii=False
        ),
        "context-words": lambda n: json.dumps(
            {"type": "context", "id": f"q{n}", "query": words, "budget": 100000}
        ),
        "set-topic": lambda n: json.dumps(
            {"type": "set", "topic": letters}
            if n % 2
            else {"type": "context", "id": f"q{n}", "query": cjk},
            ensure_ascii=False,
        ),
        "turn-biggest": turn,
        "turn-distinct-words": lambda n: json.dumps(
            {
                "type": "turn",
                "id": f"t{n}",
                "user": _words(4300) + f" n{n}",
                "assistant": _words(4300),
            }
        ),
        "chat-biggest": lambda n: json.dumps(
            {"type": "chat", "id": f"c{n}", "content": cjk}, ensure_ascii=False
        ),
        "remember-biggest": lambda n: json.dumps(
            {"type": "remember", "id": f"r{n}", "content": f"I like {n} " + words[:60000]}
        ),
        "deepest-json": lambda n: (
            f'{head} "d{n}", "user": "u", "assistant": "a", "meta": {deep_meta}}}'
        ),
        "widest-json": lambda n: f'{head} "w{n}", "user": "u", "assistant": "a", "meta": {wide}}}',
        "refused-deep": lambda n: f'{head} "x{n}", "meta": {too_deep}}}',
        "refused-big-int": lambda n: json.dumps(
            {"type": "turn", "id": f"x{n}", "user": "u", "assistant": "a", "meta": {"n": 2**70}}
        ),
    }


def _http() -> dict[str, Callable[[httpx.AsyncClient, int], Awaitable[httpx.Response]]]:
    q = "a" * 15000  # under uvicorn's 16 KiB limit for a request head

    text = ("w9aq " * (_TEXT // 5 + 1))[:_TEXT]
    meta = {f"k{i}": "v" * 100 for i in range(_LINE // 110)}

    def line(n: int) -> bytes:
        row = {
            "kind": "turn",
            "id": f"imp{n}",
            "session_id": "imported",
            "speaker": "Ann",
            "role": "user",
            "text": text,
            "at": "2024-03-01T09:30:00Z",
            "meta": meta,
        }
        return json.dumps(row).encode() + b"\n"

    async def search(client: httpx.AsyncClient, n: int) -> httpx.Response:
        return await client.get("/memory/search", params={"q": q, "limit": 100})

    async def import_line(client: httpx.AsyncClient, n: int) -> httpx.Response:
        return await client.post(
            "/memory/import", content=line(n), headers={"content-type": "application/x-ndjson"}
        )

    async def delete_all(client: httpx.AsyncClient, n: int) -> httpx.Response:
        return await client.delete("/memory/long-term")

    async def export(client: httpx.AsyncClient, n: int) -> httpx.Response:
        return await client.get("/memory/export")

    return {
        "rest-search-q": search,
        "import-biggest-line": import_line,
        "delete-all": delete_all,
        "export": export,
    }


@dataclass
class Probe:
    """The bystander's ack times and /healthz times, each with its wall time."""

    acks: list[tuple[float, float]] = field(default_factory=list)
    health: list[tuple[float, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def window(self, start: float, end: float) -> dict[str, Any]:
        acks = [ms for at, ms in self.acks if start <= at < end]
        health = [ms for at, ms in self.health if start <= at < end]
        return {
            "ack_ms": {**percentiles(acks), "n": len(acks)},
            "healthz_ms": {**percentiles(health), "n": len(health)},
        }


async def _bystander(address: str, probe: Probe) -> None:
    headers = {"Authorization": "Bearer k1"}
    async with connect(
        f"ws://{address}/ws/bystander", additional_headers=headers, max_queue=None
    ) as ws:
        await ws.recv()
        n = 0
        while True:
            n += 1
            started = time.perf_counter()
            await ws.send(
                json.dumps({"type": "turn", "id": f"b{n}", "user": "hi", "assistant": "yo"})
            )
            while True:
                answer = json.loads(await ws.recv())
                if answer.get("id") == f"b{n}":
                    break
            done = time.perf_counter()
            probe.acks.append((done, (done - started) * 1000))
            if answer["type"] != "ack":
                probe.errors.append(str(answer))
            await asyncio.sleep(max(0.0, 0.05 - (done - started)))


async def _poller(address: str, probe: Probe) -> None:
    async with httpx.AsyncClient(base_url=f"http://{address}", timeout=30) as client:
        while True:
            started = time.perf_counter()
            response = await client.get("/healthz")
            done = time.perf_counter()
            probe.health.append((done, (done - started) * 1000))
            if response.status_code != 200:
                probe.errors.append(f"healthz {response.status_code}")
            await asyncio.sleep(max(0.0, 0.1 - (done - started)))


async def _ws_attack(
    address: str, make: Callable[[int], str], seconds: float, index: int, tally: Counter[str]
) -> list[float]:
    """Frames at the rate limit for ``seconds``; the answer times of those with an id."""
    sent: dict[str, float] = {}
    times: list[float] = []
    url, headers = f"ws://{address}/ws/attack{index}", {"Authorization": "Bearer k0"}
    async with connect(url, additional_headers=headers, max_queue=None, max_size=None) as ws:
        await ws.recv()

        async def read(ws: ClientConnection) -> None:
            async for raw in ws:
                answer = json.loads(raw)
                key = answer["type"] + (f":{answer['code']}" if answer["type"] == "error" else "")
                if tally[key] == 0 and answer["type"] == "error":
                    print(f"  first {key}: {answer['message'][:120]}", flush=True)
                tally[key] += 1
                started = sent.pop(answer.get("id") or "", None)
                if started is not None and answer["type"] != "delta":
                    times.append((time.perf_counter() - started) * 1000)

        reader = asyncio.create_task(read(ws))
        began = time.perf_counter()
        n = 0
        while time.perf_counter() - began < seconds:
            n += 1
            frame = make(n * 100 + index)
            found = _ID.match(frame)
            if found:
                sent[found.group(1)] = time.perf_counter()
            await ws.send(frame)
            tally["sent"] += 1
            await asyncio.sleep(max(0.0, began + n / _RATE - time.perf_counter()))
        await asyncio.sleep(1.0)  # the last answers
        reader.cancel()
    return times


async def _http_attack(
    address: str,
    call: Callable[[httpx.AsyncClient, int], Awaitable[httpx.Response]],
    seconds: float,
    index: int,
    tally: Counter[str],
) -> list[float]:
    times: list[float] = []
    headers = {"Authorization": "Bearer k0"}
    async with httpx.AsyncClient(
        base_url=f"http://{address}", headers=headers, timeout=120
    ) as client:
        began = time.perf_counter()
        n = 0
        while time.perf_counter() - began < seconds:
            n += 1
            started = time.perf_counter()
            response = await call(client, n * 100 + index)
            times.append((time.perf_counter() - started) * 1000)
            tally[str(response.status_code)] += 1
    return times


async def _run(address: str, server_pid: int, args: argparse.Namespace) -> dict[str, Any]:
    probe = Probe()
    frames, http = _frames(), _http()
    kinds = [k for k in [*frames, *http] if not args.only or k in args.only]
    background = [
        asyncio.create_task(_bystander(address, probe)),
        asyncio.create_task(_poller(address, probe)),
    ]
    phases: dict[str, Any] = {}
    try:
        await asyncio.sleep(1.0)  # warm up
        for kind in ["quiet", *kinds]:
            tally: Counter[str] = Counter()
            start, cpu = time.perf_counter(), cpu_seconds(server_pid)
            if kind == "quiet":
                await asyncio.sleep(args.seconds)
                answers: list[list[float]] = []
            elif kind in frames:
                answers = await asyncio.gather(
                    *(
                        _ws_attack(address, frames[kind], args.seconds, i, tally)
                        for i in range(args.connections)
                    )
                )
            else:
                answers = await asyncio.gather(
                    *(
                        _http_attack(address, http[kind], args.seconds, i, tally)
                        for i in range(args.connections)
                    )
                )
            end = time.perf_counter()
            phases[kind] = {
                **probe.window(start, end),
                "attack_answer_ms": percentiles([t for part in answers for t in part]),
                "attack_answers": dict(tally),
                "server_cpu_s": round(cpu_seconds(server_pid) - cpu, 2),
                "seconds": round(end - start, 1),
            }
            row = phases[kind]
            print(
                f"{kind:22} ack p50 {row['ack_ms']['p50']:7.1f} p99 {row['ack_ms']['p99']:7.1f}"
                f" max {row['ack_ms']['max']:7.1f} | healthz p99 {row['healthz_ms']['p99']:7.1f}"
                f" max {row['healthz_ms']['max']:7.1f} | attack p50"
                f" {row['attack_answer_ms']['p50']:8.1f} p99 {row['attack_answer_ms']['p99']:8.1f}"
                f" | cpu {row['server_cpu_s']:5.2f} s | {dict(tally)}",
                flush=True,
            )
            await asyncio.sleep(1.0)  # let queued work settle between phases
    finally:
        for task in background:
            task.cancel()
    return {"phases": phases, "bystander_errors": probe.errors[:20]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--embedder", default="hash")
    parser.add_argument("--only", nargs="*", help="attack kinds to run (default: all)")
    parser.add_argument("--storm", action="store_true", help="the model-work storm instead")
    parser.add_argument("--workers", type=int, default=16, help="--storm: consolidation loops")
    args = parser.parse_args()
    if args.storm:
        storm_main(args)
        return
    env = {
        "MNEMO_EMBEDDER": args.embedder,
        "MNEMO_RATE_LIMIT": str(_RATE),  # the defaults, not load_server's "no limit"
        "MNEMO_RATE_BURST": "100",
    }
    with load_server(2, env) as (address, server_pid, _):
        result = asyncio.run(_run(address, server_pid, args))
    result["setup"] = {
        **machine(),
        "embedder": args.embedder,
        "seconds_per_phase": args.seconds,
        "attacker_connections": args.connections,
        "frames_per_second_per_connection": _RATE,
        "bystander": "one turn every 50 ms, user u1",
    }
    print(write_result("hostile", result))


if __name__ == "__main__":
    main()
