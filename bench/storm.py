"""One user's storm of model work, and what another user's chat and fact writes feel of it.

    python -m bench.hostile --storm [--seconds S] [--workers N]

Starts ``mnemo serve`` (real LanceDB, hash embedder) against a fake Ollama in its own
process that behaves like a model server: ``PARALLEL`` requests at once, the rest
queued in arrival order; a structured answer (extraction, classification,
consolidation) takes ``JSON_SECONDS``, a chat reply ``FIRST_SECONDS`` to its first
token and then streams. A bystander (user ``u1``) chats (one ``chat`` every 0.5 s,
timed to its first ``delta``) and adds facts by hand over REST (one every 0.25 s,
timed to the answer; each is classified by the model). First a quiet phase, then the
storm: user ``u0`` runs ``--workers`` consolidation loops at once, each storing an
episode in a scope of its own and consolidating, for ``--seconds``. Goal (issue 42):
the bystander's first-``delta`` p99 and fact-write p99 within 1.5x of the quiet phase.
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
        from tests.fake_ollama import Reply

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
    errors: list[str] = field(default_factory=list)

    def window(self, start: float, end: float) -> dict[str, Any]:
        deltas = [ms for at, ms in self.first_delta if start <= at < end]
        writes = [ms for at, ms in self.fact_write if start <= at < end]
        return {
            "first_delta_ms": {**percentiles(deltas), "n": len(deltas)},
            "fact_write_ms": {**percentiles(writes), "n": len(writes)},
        }


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


async def _facts(address: str, seen: _Bystander) -> None:
    headers = {"Authorization": "Bearer k1"}
    async with httpx.AsyncClient(base_url=f"http://{address}", headers=headers, timeout=60) as c:
        n = 0
        while True:
            n += 1
            started = time.perf_counter()
            answer = await c.post("/memory/long-term", json={"content": f"I like dish {n}"})
            done = time.perf_counter()
            seen.fact_write.append((done, (done - started) * 1000))
            if answer.status_code not in (200, 201):
                seen.errors.append(f"fact write {answer.status_code}: {answer.text[:200]}")
            await asyncio.sleep(max(0.0, 0.25 - (done - started)))


async def _storm(address: str, worker: int, tally: dict[str, int]) -> None:
    headers = {"Authorization": "Bearer k0"}
    async with httpx.AsyncClient(base_url=f"http://{address}", headers=headers, timeout=300) as c:
        n = 0
        while True:
            n += 1
            body = {"content": f"The user tried recipe {worker}-{n}", "scope": f"storm{worker}"}
            await c.post("/memory/episodes", json=body)
            report = (await c.post("/memory/consolidation")).json()
            tally["runs"] += 1
            tally["consolidated"] += report.get("consolidated", 0)
            tally["rules_added"] += report.get("rules_added", 0)


async def run_storm(address: str, server_pid: int, seconds: float, workers: int) -> dict[str, Any]:
    seen = _Bystander()
    watchers = [
        asyncio.create_task(_chats(address, seen)),
        asyncio.create_task(_facts(address, seen)),
    ]
    phases: dict[str, Any] = {}
    try:
        await asyncio.sleep(2.0)  # warm up
        for phase in ("quiet", "storm"):
            tally = {"runs": 0, "consolidated": 0, "rules_added": 0}
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
                "storm": tally,
                "server_cpu_s": round(cpu_seconds(server_pid) - cpu, 2),
            }
            row = phases[phase]
            print(
                f"{phase:6} first delta p50 {row['first_delta_ms']['p50']:7.1f}"
                f" p99 {row['first_delta_ms']['p99']:7.1f} (n {row['first_delta_ms']['n']})"
                f" | fact write p50 {row['fact_write_ms']['p50']:7.1f}"
                f" p99 {row['fact_write_ms']['p99']:7.1f} (n {row['fact_write_ms']['n']})"
                f" | cpu {row['server_cpu_s']:5.2f} s | {tally}",
                flush=True,
            )
    finally:
        for task in watchers:
            task.cancel()
    quiet, storm = phases["quiet"], phases["storm"]
    ratios = {
        name: round(storm[name]["p99"] / quiet[name]["p99"], 2)
        for name in ("first_delta_ms", "fact_write_ms")
    }
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
        "bystander": "user u1: a chat every 0.5 s, a fact added by hand every 0.25 s",
        "storm": "user u0: each worker stores an episode in its own scope, then consolidates",
    }
    print(write_result("hostile_storm", result))
