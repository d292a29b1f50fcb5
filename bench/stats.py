"""``memory_stats`` of one user with many facts and rules (issue 20: p95 <= 10 ms at 100,000).

    python -m bench.stats [--facts 90000] [--rules 10000] [--requests 500] [--data DIR]

One user gets ``--facts`` facts (two thirds active, a tenth of those fading; the rest
superseded, expired and retracted) and ``--rules`` rules (every maturity, a twentieth
forgotten), in the scopes ``global``, ``work`` and ``home``. They are written through
the server's own store adapter (``server.main.build_store``, ``add_facts`` and
``put_rules`` in batches) into the data directory before ``mnemo serve`` starts on it
(real LanceDB, hash embedder, no Ollama needed): through the REST API this many take
far too long (``POST /memory/import`` slowed to ~36 facts/s at 12,000 facts of one
user, each fact checked against all of the user's; ``POST /memory/rules`` read all of
the user's rules with their vectors for each new one, ~23/s at 200). ``--data DIR``
keeps the data directory; a run on a directory that holds the user skips seeding (so
another build of the server can be measured on the same data). Then ``GET
/memory/stats`` ``--requests`` times, without and with ``?scope=``, one request at a
time, over loopback HTTP, timed from sending to having read the answer; and the same
right after a write (a rule created, then deleted after the stats: the first stats
after a change). Prints the setup and a table, writes ``bench/results/stats.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import msgspec

from bench.common import machine, percentiles, served, write_result
from memory.facts import Stored
from memory.rules import MATURITIES, StoredRule, new_rule
from schemas.records import Fact, Validity
from server.config import load_settings
from server.main import build_embedder, build_store

_KEY = "k0"
_USER = "u0"
_BATCH = 5000
_T0 = datetime(2025, 1, 1, tzinfo=UTC)
_WHO = "Ana Bruno Chen Dara Emil Fatima Goran Hana Ivo Jia Kofi Lena Mira Nils Omar Pia".split()
_VERB = "likes visited plans bought reads cooks collects studies avoids recommends".split()
_WHAT = (
    "jazz records mountain trails sourdough bread vintage cameras chess openings "
    "ceramic bowls sci-fi novels trail running board games green tea orchids "
    "watercolor paints espresso machines old maps vinyl players kayaks"
).split()
_WHERE = "Lisbon Porto Madrid Paris Berlin Rome Vienna Prague Oslo Dublin Boston Tokyo".split()
_SCOPES = ("global", "work", "home")


def _text(rng: random.Random, n: int) -> str:
    words = [rng.choice(_WHO), rng.choice(_VERB), *rng.sample(_WHAT, 3), "in"]
    return " ".join([*words, rng.choice(_WHERE), str(1990 + n % 35), f"(#{n})"])


def _fact(rng: random.Random, n: int, total: int) -> Fact:
    """Two thirds active (a tenth of those fading), then superseded, expired, retracted."""
    share = n / total
    validity: Validity = (
        "active"
        if share < 2 / 3
        else "superseded"
        if share < 5 / 6
        else "expired"
        if share < 8 / 9
        else "retracted"
    )
    at = _T0 + timedelta(minutes=n)
    return Fact(
        id=f"fact_{n:08x}",
        user_id=_USER,
        content=_text(rng, n),
        category=rng.choice(["preference", "knowledge", "event"]),
        confidence=0.9,
        created_at=at,
        updated_at=at,
        last_seen=at,
        last_confirmed_at=at,
        scope=rng.choice(_SCOPES),
        validity=validity,
        status="fading" if validity == "active" and n % 10 == 0 else None,
        extractor="import",
    )


async def _seed(data_dir: str, env: dict[str, str], facts: int, rules: int) -> dict[str, Any]:
    settings = load_settings({**env, "MNEMO_DATA_DIR": data_dir})
    embedder = build_embedder(settings)
    store = build_store(settings, embedder)
    await store.open()
    rng = random.Random(20)
    try:
        started = time.perf_counter()
        for first in range(0, facts, _BATCH):
            made = [_fact(rng, n, facts) for n in range(first, min(facts, first + _BATCH))]
            vectors = await embedder.embed([f.content for f in made])
            await store.facts.add_facts([Stored(f, v) for f, v in zip(made, vectors, strict=True)])
        facts_s = time.perf_counter() - started
        started = time.perf_counter()
        for first in range(0, rules, _BATCH):
            batch = []
            for n in range(first, min(rules, first + _BATCH)):
                text = f"When {_WHO[n % 16]} asks about {rng.choice(_WHAT)}, answer briefly ({n})"
                rule = new_rule(f"rule_{n:08x}", _USER, text, _T0, scope=_SCOPES[n % 3])
                meta = {"forgotten": True} if n % 20 == 0 else {}
                rule = msgspec.structs.replace(rule, maturity=MATURITIES[n % 4], meta=meta)
                batch.append(rule)
            vectors = await embedder.embed([r.content for r in batch])
            await store.rules.put_rules(
                [StoredRule(r, v) for r, v in zip(batch, vectors, strict=True)]
            )
        rules_s = time.perf_counter() - started
        await store.optimize(cleanup_older_than=0)
    finally:
        await store.aclose()
    return {"facts_s": facts_s, "rules_s": rules_s}


def _timed(http: httpx.Client, params: dict[str, str]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    response = http.get("/memory/stats", params=params)
    took = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    stats: dict[str, Any] = response.json()
    return took, stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=90_000)
    parser.add_argument("--rules", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--data", help="keep the data directory here (reused if it exists)")
    parser.add_argument("--name", default="stats", help="bench/results/<name>.json")
    args = parser.parse_args()
    env = {
        "MNEMO_EMBEDDER": "hash",
        "MNEMO_LLM_URL": "http://127.0.0.1:9",
        "MNEMO_RATE_LIMIT": "1000000",
        "MNEMO_RATE_BURST": "1000000",
        "MNEMO_USER_RATE": "1000000",  # the default, 100 units/s, would time the budget
        "MNEMO_USER_BURST": "1000000",
        "MNEMO_API_KEYS": f"{_KEY}:{_USER}",
        "MNEMO_MAX_FACTS": str(args.facts + 1000),  # the default cap keeps 500 active
    }
    result: dict[str, Any] = {}
    headers = {"Authorization": f"Bearer {_KEY}"}
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as tmp:
        data_dir = args.data or tmp
        if not (Path(data_dir) / "lancedb" / "facts.lance").exists():
            result["seed"] = asyncio.run(_seed(data_dir, env, args.facts, args.rules))
        with (
            served(env, data_dir=data_dir) as (address, _),
            httpx.Client(base_url=f"http://{address}", headers=headers, timeout=600) as http,
        ):
            first, stats = _timed(http, {})
            result["first_ms"] = first
            result["counts"] = stats
            plain = [_timed(http, {})[0] for _ in range(args.requests)]
            scoped = [_timed(http, {"scope": "work"})[0] for _ in range(args.requests)]
            after: list[float] = []
            for n in range(min(args.requests, 100)):
                made = http.post("/memory/rules", json={"content": f"Bench probe rule {n}"})
                made.raise_for_status()
                after.append(_timed(http, {})[0])
                http.delete(f"/memory/rules/{made.json()['id']}").raise_for_status()
    facts = sum(stats["facts"].values())
    rules = sum(stats["rules"].values())
    result.update(
        {
            "facts": facts,
            "rules": rules,
            "requests": args.requests,
            "stats_ms": percentiles(plain),
            "stats_scope_ms": percentiles(scoped),
            "stats_after_write_ms": percentiles(after),
            "setup": {**machine(), "embedder": "hash", "store": "LanceDB"},
        }
    )
    path = write_result(args.name, result)
    setup = result["setup"]
    print(
        f"memory_stats: one user with {facts} facts and {rules} rules ({facts + rules} in "
        f"all), {setup['cores']} cores ({setup['cpu']}), server in its own process"
    )
    print(f"  facts {stats['facts']}")
    print(f"  rules {stats['rules']}")
    if "seed" in result:
        seed = result["seed"]
        print(
            f"  seeded through the store adapter before start: facts {seed['facts_s']:.1f} s, "
            f"rules {seed['rules_s']:.1f} s"
        )
    print(f"  first GET /memory/stats after start: {first:.1f} ms")
    print(f"  {'':<36}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}  (ms)")
    rows = {
        "GET /memory/stats": result["stats_ms"],
        "GET /memory/stats?scope=work": result["stats_scope_ms"],
        "the same, right after a rule is made": result["stats_after_write_ms"],
    }
    for name, row in rows.items():
        print(f"  {name:<36}{row['p50']:9.3f}{row['p95']:9.3f}{row['p99']:9.3f}{row['max']:9.3f}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
