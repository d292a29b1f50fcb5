"""RSS per idle actor: sessions of new users take one turn each and leave; and (``--parts``)
the RSS of an idle server that has seen no user, by part.

    python -m bench.idle [--sessions 1000] [--turns 1] [--runs 1] [--env NAME=VALUE ...]
    python -m bench.idle --parts [--runs 3]

An idle actor is a session whose client took one ``turn`` (or ``--turns``) and left: its actor
lives on until its idle expiry (30 minutes), holding working memory, recent
history, and the user's in-memory search indexes (warmed when the session
opened). Starts ``mnemo serve`` against an instant fake Ollama exactly as
``bench.load`` does (``bench.common.load_server``) and runs only the idle-actor
measurement that ``bench.load`` starts with: about a minute per run instead
of ten. Prints and writes ``bench/results/idle.json``.

``--parts`` (issue 19) starts ``mnemo serve`` as it ships (the bundled ONNX embedder,
no Ollama) and reads its RSS once it has been idle for a few seconds, then times a new
user's first search (``GET /memory/search``) and its first ``context``, and reads the RSS
again. Then, in a child process, it imports and starts the same parts one by one
(``bench/idle_parts.py``) and reads the RSS after each. Writes ``parts`` into
``bench/results/idle.json``, beside the idle actors' runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from typing import Any

from websockets.asyncio.client import connect

from bench.common import RESULTS, cpu_seconds, load_server, machine, rss_kib, served, write_result

__all__ = ["idle_actors", "idle_server", "live_sessions"]


def live_sessions(address: str) -> int:
    """Live actors of the server (``/healthz``)."""
    with urllib.request.urlopen(f"http://{address}/healthz", timeout=10) as response:
        return int(json.loads(response.read())["live_sessions"])


async def _turns_and_leave(address: str, session: str, key: str, turns: int) -> None:
    auth = {"Authorization": f"Bearer {key}"}
    async with connect(
        f"ws://{address}/ws/{session}", open_timeout=60, additional_headers=auth
    ) as ws:
        await ws.recv()
        for n in range(turns):
            user = "Hello, I am new here." if not n else f"Tell me more, part {n}."
            turn = {"type": "turn", "id": f"t{n}", "user": user, "assistant": "Hi!"}
            await ws.send(json.dumps(turn))
            while json.loads(await ws.recv())["type"] != "ack":
                pass


async def _quiet(pid: int, *, timeout: float = 180.0) -> None:
    """Wait until the server has finished the work a batch left behind (loading users'
    indexes, extraction, snapshots): under a tenth of a core busy for two seconds running
    (one quiet second can be the machine's other work holding the server back)."""
    deadline = time.monotonic() + timeout
    busy, quiet = cpu_seconds(pid), 0
    while time.monotonic() < deadline and quiet < 2:
        await asyncio.sleep(1.0)
        now = cpu_seconds(pid)
        quiet = quiet + 1 if now - busy < 0.1 else 0
        busy = now


async def idle_actors(address: str, pid: int, count: int, turns: int = 1) -> dict[str, Any]:
    """RSS per idle actor: ``count`` sessions of new users (keys ``k0`` ...) each take
    ``turns`` turns and leave; their actors live on until idle expiry. Then ``count`` more,
    of other new users (the server needs ``2 * count`` users). RSS is read once the server
    has settled. The first batch's growth includes the allocator's and the libraries'
    one-time growth from serving that many connections and writes (and LanceDB's caches
    filling up to their bounds); the second batch's (the marginal cost, on a warmed-up
    process) is what each further idle actor costs."""
    gate = asyncio.Semaphore(50)

    async def visit(session: str, key: str) -> None:
        async with gate:
            await _turns_and_leave(address, session, key, turns)

    await asyncio.gather(*(visit(f"warm{i}", f"k{i}") for i in range(50)))
    await _quiet(pid)
    rss = [rss_kib(pid)]
    live = [live_sessions(address)]
    seconds, settled = [], []
    for batch in range(2):
        users = range(batch * count, (batch + 1) * count)
        started = time.perf_counter()
        await asyncio.gather(*(visit(f"idle{i}", f"k{i}") for i in users))
        seconds.append(time.perf_counter() - started)
        await _quiet(pid)
        settled.append(time.perf_counter() - started)
        rss.append(rss_kib(pid))
        live.append(live_sessions(address))
    first, second = live[1] - live[0], live[2] - live[1]
    return {
        "actors": first,
        "rss_kib_before": rss[0],
        "rss_kib_after": rss[1],
        "rss_per_actor_kib": (rss[1] - rss[0]) / max(first, 1),
        "second_batch_actors": second,
        "rss_kib_after_second": rss[2],
        "rss_per_actor_kib_marginal": (rss[2] - rss[1]) / max(second, 1),
        "batch_seconds": seconds,
        "settled_seconds": settled,
    }


def _one_run(sessions: int, turns: int, env: dict[str, str]) -> dict[str, Any]:
    with load_server(2 * sessions, env) as (address, pid, _):
        rss_empty = rss_kib(pid)
        result = asyncio.run(idle_actors(address, pid, sessions, turns))
    return {"rss_kib_empty": rss_empty, "turns": turns, **result}


def _timed_get(url: str, key: str) -> float:
    """Milliseconds to a whole answer of ``GET url``."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()
    return (time.perf_counter() - started) * 1000


async def _first_context(address: str, key: str) -> float:
    """Milliseconds to a new user's first ``context`` answer, sent as soon as the session
    is ``ready`` (the session's opening starts the embedder's load)."""
    auth = {"Authorization": f"Bearer {key}"}
    async with connect(f"ws://{address}/ws/first", open_timeout=60, additional_headers=auth) as ws:
        await ws.recv()
        started = time.perf_counter()
        await ws.send(json.dumps({"type": "context", "id": "c", "query": "my holiday plans"}))
        while json.loads(await ws.recv())["type"] != "context":
            pass
        return (time.perf_counter() - started) * 1000


def idle_server(extra: dict[str, str], idle_seconds: float = 5.0) -> dict[str, Any]:
    """``mnemo serve`` as it ships (bundled ONNX embedder, Ollama not running): RSS once
    it has been idle ``idle_seconds`` after its start, a new user's first and second
    search (ms), the RSS after them; on a second server, idle as long, a new user's
    first ``context`` sent as soon as its session is ready (ms); then the same parts one
    by one in a child process (``bench.idle_parts``). ``extra`` adds server variables."""
    env = {"MNEMO_LLM_URL": "http://127.0.0.1:9", "MNEMO_API_KEYS": "k0:u0", **extra}
    started = time.perf_counter()
    with served(env) as (address, process):
        ready_ms = (time.perf_counter() - started) * 1000
        time.sleep(idle_seconds)
        idle = rss_kib(process.pid)
        search = f"http://{address}/memory/search?q=where+did+I+go+on+holiday"
        first = _timed_get(search, "k0")
        second = _timed_get(search, "k0")
        time.sleep(1.0)
        after = rss_kib(process.pid)
    with served(env) as (address, _):
        time.sleep(idle_seconds)
        first_context = asyncio.run(_first_context(address, "k0"))
    child = subprocess.run(
        [sys.executable, "-m", "bench.idle_parts"], capture_output=True, check=True, text=True
    )
    return {
        "rss_kib_idle": idle,
        "first_search_ms": round(first, 1),
        "second_search_ms": round(second, 1),
        "rss_kib_after_first_search": after,
        "first_context_ms": round(first_context, 1),
        "ready_ms": round(ready_ms),
        "parts_rss_kib": json.loads(child.stdout),
    }


def _write_parts(label: str, runs: list[dict[str, Any]], env: dict[str, str]) -> None:
    """Add the runs to ``bench/results/idle.json`` under ``parts.<label>``."""
    path = RESULTS / "idle.json"
    result = json.loads(path.read_text()) if path.exists() else {}
    result.setdefault("parts", {})[label] = {"runs": runs, "setup": {**machine(), "env": env}}
    write_result("idle", result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000, help="sessions per batch")
    parser.add_argument("--turns", type=int, default=1, help="turns each session takes")
    parser.add_argument("--runs", type=int, default=1, help="fresh servers, one after another")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    parser.add_argument("--parts", metavar="LABEL", help="an idle server's RSS by part instead")
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    if args.parts:
        runs = [idle_server(env) for _ in range(args.runs)]
        for run in runs:
            print(json.dumps(run))
        _write_parts(args.parts, runs, env)
        return
    runs = []
    for _ in range(args.runs):
        run = _one_run(args.sessions, args.turns, env)
        print(
            f"RSS per idle actor {run['rss_per_actor_kib']:.1f} KiB for the first"
            f" {run['actors']}, {run['rss_per_actor_kib_marginal']:.1f} KiB for the next"
            f" {run['second_batch_actors']} (RSS KiB: empty {run['rss_kib_empty']}, before"
            f" {run['rss_kib_before']}, after {run['rss_kib_after']},"
            f" {run['rss_kib_after_second']}; batches took"
            f" {', '.join(f'{s:.0f}' for s in run['batch_seconds'])} s, the server settled"
            f" after {', '.join(f'{s:.0f}' for s in run['settled_seconds'])} s)"
        )
        runs.append(run)
    setup = {**machine(), "embedder": "hash", "fake_ollama": "instant", "env": env}
    path = RESULTS / "idle.json"
    kept = (
        {k: v for k, v in json.loads(path.read_text()).items() if k == "parts"}
        if path.exists()
        else {}
    )
    print(f"wrote {write_result('idle', {'runs': runs, 'setup': setup, **kept})}")


if __name__ == "__main__":
    main()
