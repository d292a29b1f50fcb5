"""Consolidation (seed 002's batch path, issue 20): episodes consolidated per second.

    python -m bench.consolidation [--users 20] [--episodes 2000] [--scopes 4]
                                  [--concurrency 4] [--model-ms 0]

Starts ``mnemo serve`` in its own process (real LanceDB in a temp dir, hash embedder)
against a fake Ollama in another (``bench.common.load_server``) whose model
(``Model``) answers a consolidation call (system prompt ``SYSTEM``) with two new facts
(subject, predicate, content: read from the group's first and last episode, so they
differ) and one new rule, after ``--model-ms`` (the model's own time per call, 0 by
default: then only the server is timed); anything else as ``bench.load``'s fake. Stores
``--episodes`` episodes over ``--users`` users and ``--scopes`` scopes through ``POST
/memory/episodes``, then runs ``POST /memory/consolidation`` for the first half of the
users one at a time and for the second half ``--concurrency`` at a time. Reports
episodes/s, groups/s, facts and rules added, per-run latency, the server's event-loop
lag while it consolidated; writes ``bench/results/consolidation.json``.

``Churn`` is what ``python -m bench.load --consolidate-every SECONDS`` runs beside its
load, in a process of its own: every so often a user stores some episodes and
consolidates them.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
import urllib.request
from dataclasses import dataclass
from typing import Any

import httpx

from bench.common import (
    ADMIN_KEY,
    load_answer,
    load_server,
    machine,
    percentiles,
    write_result,
)
from memory.consolidation.prompt import SYSTEM

__all__ = ["ENV", "Model", "churn", "episode_text", "prestore"]

_WHO = "Ana Bruno Chen Dara Emil Fatima Goran Hana Ivo Jia Kofi Lena Mira Nils Omar Pia".split()
_VERB = "likes visited plans bought reads cooks collects studies avoids recommends".split()
_WHAT = (
    "jazz records|mountain trails|sourdough bread|vintage cameras|chess openings|"
    "ceramic bowls|sci-fi novels|trail running|board games|green tea|orchids|old maps"
).split("|")
_WHERE = "Lisbon Porto Madrid Paris Berlin Rome Vienna Prague Oslo Dublin Boston Tokyo".split()
_EPISODE = re.compile(r"<episode_content>(\w+) (\w+) (.+?) in (\w+) \(#\d+\)</episode_content>")
#: Server variables: no per-user budget (the default would time it, not consolidation).
ENV = {"MNEMO_USER_RATE": "1000000", "MNEMO_USER_BURST": "1000000"}


def episode_text(n: int) -> str:
    """The ``n``-th episode: who did what where, numbered (all differ)."""
    who, verb = _WHO[n % len(_WHO)], _VERB[(n // 3) % len(_VERB)]
    what, where = _WHAT[(n // 7) % len(_WHAT)], _WHERE[(n // 11) % len(_WHERE)]
    return f"{who} {verb} {what} in {where} (#{n})"


@dataclass(frozen=True)
class Model:
    """The fake's model (picklable, for its own process): consolidation answers two new
    facts and a rule from the group's episodes, after ``model_ms``; the rest as
    ``load_answer``."""

    model_ms: float = 0.0

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        messages = body.get("messages") or [{}]
        if "format" not in body or messages[0].get("content") != SYSTEM:
            return load_answer(path, body)
        if self.model_ms:
            time.sleep(self.model_ms / 1000)  # the fake runs a responder in a thread
        found = _EPISODE.findall(messages[-1]["content"])
        facts = (
            [
                {
                    "subject": who,
                    "predicate": verb,
                    "content": f"{who} {verb} {what} in {where}",
                    "importance": 6,
                    "permanence": "stable",
                    "tags": [where.lower()],
                }
                for who, verb, what, where in {found[0], found[-1]}
            ]
            if found
            else []
        )
        rules = (
            [{"content": f"When {found[0][0]} asks about {found[0][2]}, mention {found[0][3]}"}]
            if found
            else []
        )
        return {"new_facts": facts, "updated_facts": [], "new_rules": rules, "confirmations": []}


async def _store(http: httpx.AsyncClient, key: str, n: int, scope: str) -> None:
    response = await http.post(
        "/memory/episodes",
        json={"content": episode_text(n), "scope": scope},
        headers={"Authorization": f"Bearer {key}"},
    )
    response.raise_for_status()


async def _consolidate(http: httpx.AsyncClient, key: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    response = await http.post("/memory/consolidation", headers={"Authorization": f"Bearer {key}"})
    took = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    report: dict[str, Any] = response.json()
    return took, report


def _lag_buckets(address: str) -> list[tuple[float, float]]:
    request = urllib.request.Request(
        f"http://{address}/metrics", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    series = "mnemo_event_loop_lag_ms_bucket{"
    return [
        (float(line.split('le="', 1)[1].split('"', 1)[0]), float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith(series)
    ]


def _lag_between(before: list[tuple[float, float]], after: list[tuple[float, float]]) -> Any:
    """The event-loop lag samples between two scrapes: their count, and the smallest bucket
    bounds under which 50 % / 99 % of them fall, and the largest's."""
    diff = [(bound, n - m) for (bound, n), (_, m) in zip(after, before, strict=True)]
    total = diff[-1][1] if diff else 0.0
    out: dict[str, float] = {"samples": total}
    for name, share in (("p50_le_ms", 0.5), ("p99_le_ms", 0.99), ("max_le_ms", 1.0)):
        out[name] = next((b for b, n in diff if n >= share * total), float("nan"))
    return out


def _totals(runs: list[tuple[float, dict[str, Any]]], seconds: float) -> dict[str, Any]:
    def total(name: str) -> int:
        return sum(int(report[name]) for _, report in runs)

    return {
        "users": len(runs),
        "seconds": seconds,
        "episodes": total("consolidated"),
        "groups": total("groups"),
        "episodes_per_s": total("consolidated") / seconds,
        "groups_per_s": total("groups") / seconds,
        "facts_added": total("facts_added"),
        "rules_added": total("rules_added"),
        "errors": sum(len(report["errors"]) for _, report in runs),
        "run_ms": percentiles([ms for ms, _ in runs]),
    }


async def _bench(address: str, args: argparse.Namespace) -> dict[str, Any]:
    scopes = [f"scope{s}" for s in range(args.scopes)]
    keys = [f"k{u}" for u in range(args.users)]
    async with httpx.AsyncClient(base_url=f"http://{address}", timeout=600) as http:
        gate = asyncio.Semaphore(8)

        async def store(n: int) -> None:
            async with gate:
                await _store(http, keys[n % args.users], n, scopes[(n // args.users) % args.scopes])

        started = time.perf_counter()
        await asyncio.gather(*(store(n) for n in range(args.episodes)))
        stored_s = time.perf_counter() - started
        half = args.users // 2
        lag = _lag_buckets(address)
        started = time.perf_counter()
        one = [await _consolidate(http, key) for key in keys[:half]]
        one_s = time.perf_counter() - started
        one_lag = _lag_between(lag, lag := _lag_buckets(address))
        pool = asyncio.Semaphore(args.concurrency)

        async def together(key: str) -> tuple[float, dict[str, Any]]:
            async with pool:
                return await _consolidate(http, key)

        started = time.perf_counter()
        many = await asyncio.gather(*(together(key) for key in keys[half:]))
        many_s = time.perf_counter() - started
        many_lag = _lag_between(lag, _lag_buckets(address))
    return {
        "store": {
            "episodes": args.episodes,
            "seconds": stored_s,
            "per_s": args.episodes / stored_s,
        },
        "sequential": {**_totals(one, one_s), "event_loop_lag": one_lag},
        "concurrent": {
            **_totals(list(many), many_s),
            "concurrency": args.concurrency,
            "event_loop_lag": many_lag,
        },
    }


async def _prestore(address: str, users: int, episodes: int) -> float:
    async with httpx.AsyncClient(base_url=f"http://{address}", timeout=600) as http:
        started = time.perf_counter()
        for u in range(users):
            for i in range(episodes):
                await _store(http, f"k{u}", u * episodes + i, f"scope{i % 4}")
        return time.perf_counter() - started


def prestore(address: str, users: int, episodes: int) -> float:
    """Users ``u0`` ... each store ``episodes`` episodes over 4 scopes; seconds taken."""
    return asyncio.run(_prestore(address, users, episodes))


async def _churn(
    address: str, users: int, every: float, episodes: int, seconds: float, live: bool
) -> Any:
    runs: list[tuple[float, dict[str, Any]]] = []
    store_ms: list[float] = []
    n = users * episodes
    async with httpx.AsyncClient(base_url=f"http://{address}", timeout=600) as http:
        next_at = time.perf_counter()
        deadline = next_at + seconds
        while next_at < deadline:
            key = f"k{len(runs) % users}"
            started = time.perf_counter()
            for i in range(episodes if live else 0):
                await _store(http, key, n, f"scope{i % 4}")
                n += 1
            store_ms.append((time.perf_counter() - started) * 1000)
            runs.append(await _consolidate(http, key))
            next_at += every
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
    return {
        **_totals(runs, seconds),
        "runs": len(runs),
        "every_s": every,
        "episodes_per_run": episodes,
        "stored_during_the_load": live,
        "store_ms_per_run": percentiles(store_ms),
    }


def churn(address: str, users: int, every: float, episodes: int, seconds: float, live: bool) -> Any:
    """For ``seconds``: every ``every`` s (or back to back, if a run takes longer) the
    next of the users ``u0`` ... (round robin) consolidates its pending episodes, first
    storing ``episodes`` more over 4 scopes if ``live`` (else ``prestore`` stored them
    before); what the runs did. For a process of its own."""
    return asyncio.run(_churn(address, users, every, episodes, seconds, live))


def _print(r: dict[str, Any]) -> None:
    s = r["setup"]
    print(
        f"consolidation: {s['users']} users, {s['episodes']} episodes over {s['scopes']} scopes,"
        f" fake model {s['model_ms']:g} ms per call; {s['cores']} cores ({s['cpu']})"
    )
    st = r["store"]
    print(f"  stored {st['episodes']} episodes in {st['seconds']:.1f} s ({st['per_s']:.0f}/s)")
    for name in ("sequential", "concurrent"):
        p = r[name]
        lag = p["event_loop_lag"]
        how = f"{p['concurrency']} at a time" if name == "concurrent" else "one at a time"
        print(
            f"  {p['users']} users {how}: {p['episodes']} episodes, {p['groups']} groups in"
            f" {p['seconds']:.2f} s: {p['episodes_per_s']:.0f} episodes/s,"
            f" {p['groups_per_s']:.1f} groups/s; +{p['facts_added']} facts,"
            f" +{p['rules_added']} rules, {p['errors']} errors"
        )
        ms = p["run_ms"]
        print(
            f"    per run (one user) ms p50 {ms['p50']:.0f} p95 {ms['p95']:.0f}"
            f" max {ms['max']:.0f}; server event-loop lag p50 ≤ {lag['p50_le_ms']} ms,"
            f" p99 ≤ {lag['p99_le_ms']} ms, max ≤ {lag['max_le_ms']} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--scopes", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--model-ms", type=float, default=0.0, help="the model's time per call")
    parser.add_argument("--name", default="consolidation", help="bench/results/<name>.json")
    args = parser.parse_args()
    with load_server(args.users, ENV, Model(args.model_ms)) as (address, _, _):
        result = asyncio.run(_bench(address, args))
    result["setup"] = {
        "users": args.users,
        "episodes": args.episodes,
        "scopes": args.scopes,
        "model_ms": args.model_ms,
        "answer": "2 new facts and 1 new rule per group",
        **machine(),
        "embedder": "hash",
        "store": "LanceDB",
    }
    _print(result)
    print(f"wrote {write_result(args.name, result)}")


if __name__ == "__main__":
    main()
