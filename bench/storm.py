"""One user's storm of model work, and what another user's chat and fact writes feel of it.

    python -m bench.hostile --storm [--seconds S] [--workers N]

Starts ``mnemo serve`` (real LanceDB, hash embedder) against a fake Ollama in its own
process that behaves like a model server: ``PARALLEL`` requests at once, the rest
queued in arrival order; a structured answer (extraction, classification,
consolidation) takes ``JSON_SECONDS``, a chat reply ``FIRST_SECONDS`` to its first
token and then streams. A bystander (user ``u1``) chats (one ``chat`` every 0.5 s,
timed to its first ``delta``) and adds facts by hand over REST (timed to the answer):
one every 0.5 s that the model classifies, one every 0.5 s that names its category.
First a quiet phase, then the storm: user ``u0`` runs ``--workers`` consolidation
loops at once, each storing an episode in a scope of its own and consolidating, for
``--seconds``. Goal (issue 42): the bystander's first-``delta`` p99 and fact-write p99s
within 1.5x of the quiet phase.
Writes ``bench/results/hostile_storm.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from websockets.asyncio.client import connect

from bench.common import REPLY, cpu_seconds, load_server, machine, percentiles, write_result

__all__ = ["ModelServer", "run_storm"]

PARALLEL = 4  # Ollama's OLLAMA_NUM_PARALLEL where memory allows
JSON_SECONDS = 0.3
FIRST_SECONDS = 0.1
CHUNK_SECONDS = 0.01
_CONSOLIDATE = "You consolidate an assistant's episodic memory"
#: What is timed for the bystander: first deltas, facts added by hand that the model
#: classifies, facts added by hand with their category.
_MEASURES = ("first_delta_ms", "fact_write_ms", "fact_write_categorized_ms")
_CLASSIFY = "You sort a user's memory."


class ModelServer:
    """The fake Ollama's answers, timed like a model server (see the module); picklable:
    its semaphore is made in the fake's own process."""

    def __init__(self) -> None:
        self._slots: threading.Semaphore | None = None
        self._made = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        from testing.fake_ollama import Reply

        with self._made:
            if self._slots is None:
                self._slots = threading.Semaphore(PARALLEL)
        structured = "format" in body
        with self._slots:  # the caller's thread waits its turn, as Ollama's queue does
            time.sleep(JSON_SECONDS if structured else FIRST_SECONDS)
        if not structured:
            return Reply(content=REPLY, chunk_delay=CHUNK_SECONDS)
        system = body["messages"][0]["content"]
        if system.startswith(_CLASSIFY):
            return {"category": "preference"}
        if system.startswith(_CONSOLIDATE):
            prompt = body["messages"][-1]["content"]
            scope = prompt.removeprefix("Episodes of ").split(maxsplit=1)[0].rstrip(":")
            rules = [{"content": f"In {scope}, offer choice {k}."} for k in range(3)]
            return {"new_facts": [], "updated_facts": [], "new_rules": rules, "confirmations": []}
        return {"facts": [], "memory_update": {}, "analysis": {}}


@dataclass
class _Bystander:
    """Times of the bystander's first deltas and fact writes (ms), with their wall time."""

    first_delta: list[tuple[float, float]] = field(default_factory=list)
    fact_write: list[tuple[float, float]] = field(default_factory=list)
    fact_write_categorized: list[tuple[float, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def window(self, start: float, end: float) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in _MEASURES:
            times = [ms for at, ms in getattr(self, name.removesuffix("_ms")) if start <= at < end]
            out[name] = {**percentiles(times), "n": len(times)}
        return out


async def _chats(address: str, seen: _Bystander) -> None:
    headers = {"Authorization": "Bearer k1"}
    async with connect(f"ws://{address}/ws/bystander", additional_headers=headers) as ws:
        await ws.recv()
        n = 0
        while True:
            n += 1
            started = time.perf_counter()
            await ws.send(json.dumps({"type": "chat", "id": f"c{n}", "content": f"Hi {n}"}))
            first: float | None = None
            while True:
                answer = json.loads(await ws.recv())
                if answer.get("id") != f"c{n}":
                    continue
                if answer["type"] == "delta" and first is None:
                    first = time.perf_counter()
                    seen.first_delta.append((first, (first - started) * 1000))
                if answer["type"] in ("done", "error"):
                    if answer["type"] == "error":
                        seen.errors.append(str(answer))
                    break
            await asyncio.sleep(max(0.0, 0.5 - (time.perf_counter() - started)))


async def _facts(address: str, seen: _Bystander, classified: bool) -> None:
    """Facts added by hand, one every 0.5 s: ``classified`` ones name no category (the
    model classifies each), the others name theirs (no model call)."""
    headers = {"Authorization": "Bearer k1"}
    times = seen.fact_write if classified else seen.fact_write_categorized
    async with httpx.AsyncClient(base_url=f"http://{address}", headers=headers, timeout=60) as c:
        n = 0
        while True:
            n += 1
            started = time.perf_counter()
            body: dict[str, Any] = {"content": f"I like dish {n}"}
            if not classified:
                body = {"content": f"I like drink {n}", "category": "preference"}
            answer = await c.post("/memory/long-term", json=body)
            done = time.perf_counter()
            times.append((done, (done - started) * 1000))
            if answer.status_code not in (200, 201):
                seen.errors.append(f"fact write {answer.status_code}: {answer.text[:200]}")
            await asyncio.sleep(max(0.0, 0.5 - (done - started)))


async def _storm(address: str, worker: int, tally: dict[str, int]) -> None:
    headers = {"Authorization": "Bearer k0"}
    async with httpx.AsyncClient(base_url=f"http://{address}", headers=headers, timeout=300) as c:
        n = 0
        while True:
            n += 1
            body = {"content": f"The user tried recipe {worker}-{n}", "scope": f"storm{worker}"}
            await c.post("/memory/episodes", json=body)
            tally["episodes"] += 1
            await c.post("/memory/consolidation")
            tally["consolidations"] += 1


async def _storm_memory(address: str) -> dict[str, Any]:
    """What the storm left: the storming user's episodes still pending, and rules."""
    headers = {"Authorization": "Bearer k0"}
    async with httpx.AsyncClient(base_url=f"http://{address}", headers=headers, timeout=60) as c:
        stats = (await c.get("/memory/stats")).json()
        rules = (await c.get("/memory/rules")).json()["rules"]
    return {"unconsolidated": stats["episodes"]["unconsolidated"], "rules": len(rules)}


async def run_storm(address: str, server_pid: int, seconds: float, workers: int) -> dict[str, Any]:
    seen = _Bystander()
    watchers = [
        asyncio.create_task(_chats(address, seen)),
        asyncio.create_task(_facts(address, seen, classified=True)),
        asyncio.create_task(_facts(address, seen, classified=False)),
    ]
    phases: dict[str, Any] = {}
    try:
        await asyncio.sleep(2.0)  # warm up
        for phase in ("quiet", "storm"):
            tally = {"episodes": 0, "consolidations": 0}
            stormers = (
                [asyncio.create_task(_storm(address, i, tally)) for i in range(workers)]
                if phase == "storm"
                else []
            )
            start, cpu = time.perf_counter(), cpu_seconds(server_pid)
            await asyncio.sleep(seconds)
            end = time.perf_counter()
            for task in stormers:
                task.cancel()
            phases[phase] = {
                **seen.window(start, end),
                "storm": {**tally, **(await _storm_memory(address) if stormers else {})},
                "server_cpu_s": round(cpu_seconds(server_pid) - cpu, 2),
            }
            row = phases[phase]
            shown = " | ".join(
                f"{name.removesuffix('_ms').replace('_', ' ')} p50 {row[name]['p50']:6.1f}"
                f" p99 {row[name]['p99']:6.1f} (n {row[name]['n']})"
                for name in _MEASURES
            )
            print(
                f"{phase:6} {shown} | cpu {row['server_cpu_s']:5.2f} s | {row['storm']}", flush=True
            )
    finally:
        for task in watchers:
            task.cancel()
    quiet, storm = phases["quiet"], phases["storm"]
    ratios = {name: round(storm[name]["p99"] / quiet[name]["p99"], 2) for name in _MEASURES}
    print(f"p99 storm / quiet: {ratios} (goal: each at most 1.5)", flush=True)
    return {"phases": phases, "p99_ratio": ratios, "bystander_errors": seen.errors[:20]}


def storm_main(args: argparse.Namespace) -> None:
    with load_server(2, {"MNEMO_EMBEDDER": "hash"}, responder=ModelServer()) as (
        address,
        server_pid,
        _,
    ):
        result = asyncio.run(run_storm(address, server_pid, args.seconds, args.workers))
    result["setup"] = {
        **machine(),
        "seconds_per_phase": args.seconds,
        "storm_workers": args.workers,
        "model": {
            "parallel": PARALLEL,
            "structured_answer_s": JSON_SECONDS,
            "first_token_s": FIRST_SECONDS,
            "chunk_s": CHUNK_SECONDS,
        },
        "bystander": (
            "user u1: a chat every 0.5 s; a fact added by hand every 0.5 s, classified by"
            " the model, and one every 0.5 s with its category"
        ),
        "storm": "user u0: each worker stores an episode in its own scope, then consolidates",
    }
    print(write_result("hostile_storm", result))
