"""Entity resolution with many entities for one user (issue 20: p95 <= 5 ms at 10,000).

    python -m bench.entities [--entities 10000] [--queries 2000] [--concurrency 8]
                             [--data DIR]

Starts ``mnemo serve`` in its own process (real LanceDB, hash embedder, no Ollama
needed). One user gets ``--entities`` people, organizations and places with aliases,
created through ``POST /memory/entities``, ``--concurrency`` requests at a time
(creation throughput is reported). ``--data DIR`` keeps the data directory, and a run
on a directory whose user already has entities skips creating them (so another build
of the server can be measured on the same data). Then ``POST /memory/entities/resolve``
with every tier on (``enable_fuzzy: true``) for a mix of names made to hit each tier:
exact, alias, prefix (part of a name), fuzzy (a misspelt name) and misses; one request
at a time, over loopback HTTP, timed from sending to having read the answer. Also the
resolution alone in this process (``memory.entities.resolve`` over the same entities,
as the server lists them). Prints the setup and a table, writes
``bench/results/entities.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from contextlib import ExitStack
from typing import Any

import httpx
import msgspec

from bench.common import machine, percentiles, served, write_result
from memory import entities as resolution
from schemas.records import Entity

_KEY = "k0"
_USER = "u0"
_FIRST = (
    "Ana Maria John Wei Fatima Olga Pedro Sofia Liam Noah Emma Ava Lucas Mateo Chen Yuki "
    "Hiroshi Aisha Omar Leila Ivan Nadia Diego Lucia Pablo Elena Marco Giulia Hans Greta "
    "Pierre Camille Sean Siobhan Raj Priya Kofi Amara Tomas Zofia Mikhail Anya Jonas Freya "
    "Kenji Mei Arjun Divya Samuel Ruth David Sarah Daniel Leah Carlos Ines Joao Beatriz "
    "Andrei Ioana Mehmet Elif Nikos Eleni"
).split()
_LAST = (
    "Souza Silva Smith Johnson Garcia Martinez Li Wang Zhang Khan Ali Ivanova Petrov Rossi "
    "Bianchi Muller Schmidt Dubois Martin Murphy Kelly Patel Sharma Mensah Okafor Novak "
    "Kowalski Nielsen Larsen Tanaka Suzuki Sato Kim Park Nguyen Tran Cohen Levi Haddad "
    "Costa Pereira Santos Oliveira Popescu Yilmaz Papadopoulos Andersson Berg Fischer "
    "Weber Moreau Laurent Fernandes Rocha Almeida Ferreira Carvalho Gomes Ribeiro"
).split()
_NICK = {"Ana": "Aninha", "John": "Johnny", "Daniel": "Dani", "Samuel": "Sam", "David": "Dave"}
_ORG_HEAD = (
    "Acme Blue Northwind Contoso Globex Initech Umbrella Stark Wayne Tyrell Cyberdyne "
    "Aperture Black Mesa Vandelay Hooli Pied Piper Soylent Oscorp Wonka Gringotts Monarch "
    "Nakatomi Zenith Apex Summit Harbor River Granite Silver Golden Crimson Emerald"
).split()
_ORG_TAIL = (
    "Labs Systems Foods Bank Capital Logistics Media Health Energy Motors Books Studios "
    "Pharma Robotics Airlines Insurance Analytics Textiles Coffee Brewing"
).split()
_PLACES = (
    "Lisbon Porto Madrid Paris Berlin Munich Rome Milan Vienna Prague Warsaw Krakow Oslo "
    "Bergen Stockholm Helsinki Dublin Cork London Leeds Boston Denver Austin Seattle Quebec "
    "Toronto Lima Quito Bogota Santiago Tokyo Osaka Kyoto Seoul Busan Hanoi Delhi Mumbai "
    "Lagos Accra Nairobi Cairo Tunis Athens Sofia Istanbul Tbilisi"
).split()
_SIDES = "North South East West Upper Lower Old New".split()
_PLACE_KIND = "Park Street Avenue Square Station Harbour Market Bridge Hill Library".split()


def _initials(words: list[str]) -> str:
    return "".join(w[0] for w in words).upper()


def make_entities(count: int, seed: int = 20) -> list[dict[str, Any]]:
    """``count`` distinct entity bodies for ``POST /memory/entities``: about half people,
    a quarter organizations, a quarter places; most with two or three aliases."""
    rng = random.Random(seed)
    people = [(f, last) for f in _FIRST for last in _LAST]
    orgs = [(h, t) for h in _ORG_HEAD for t in _ORG_TAIL]
    places = [(k, p) for p in _PLACES for k in _PLACE_KIND]
    for pool in (people, orgs, places):
        rng.shuffle(pool)
    bodies: list[dict[str, Any]] = []
    for n in range(count):
        lap, kind = divmod(n, 4)
        if kind < 2:
            wrap, at = divmod(lap * 2 + kind, len(people))
            first, last = people[at]
            middle = f" {chr(ord('A') + (wrap - 1) % 26)}." if wrap else ""
            name = f"{first}{middle} {last}" + (f" {wrap // 26 + 1}" if wrap > 26 else "")
            aliases = [first, f"{first[0]}. {last}"]
            if first in _NICK:
                aliases.append(_NICK[first])
            bodies.append({"canonical_name": name, "entity_type": "person", "aliases": aliases})
        elif kind == 2:
            wrap, at = divmod(lap, len(orgs))
            head, tail = orgs[at]
            name = f"{head} {tail}" + (f" {_PLACES[(wrap - 1) % len(_PLACES)]}" if wrap else "")
            name += f" {wrap // len(_PLACES) + 1}" if wrap > len(_PLACES) else ""
            aliases = [head, _initials(name.split())]
            bodies.append(
                {"canonical_name": name, "entity_type": "organization", "aliases": aliases}
            )
        else:
            wrap, at = divmod(lap, len(places))
            place_kind, city = places[at]
            side = f"{_SIDES[(wrap - 1) % len(_SIDES)]} " if wrap else ""
            name = f"{city} {side}{place_kind}" + (f" {wrap}" if wrap > len(_SIDES) else "")
            alias = f"the {side.lower()}{place_kind.lower()} in {city}"
            bodies.append({"canonical_name": name, "entity_type": "place", "aliases": [alias]})
    return bodies


def _misspelt(rng: random.Random, name: str) -> str:
    chars = list(name)
    i = rng.randrange(1, len(chars) - 1)
    if rng.random() < 0.5:
        chars[i], chars[i + 1] = chars[i + 1], chars[i]
    else:
        del chars[i]
    return "".join(chars)


def make_queries(bodies: list[dict[str, Any]], count: int, seed: int = 21) -> list[tuple[str, str]]:
    """(tier aimed at, name): equal shares of exact, alias, prefix, fuzzy and miss."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for n in range(count):
        body = rng.choice(bodies)
        name = body["canonical_name"]
        tier = ("exact", "alias", "prefix", "fuzzy", "miss")[n % 5]
        if tier == "exact":
            query = name
        elif tier == "alias":
            query = rng.choice(body["aliases"])
        elif tier == "prefix":
            query = name[: max(4, len(name) * 2 // 3)]
        elif tier == "fuzzy":
            query = _misspelt(rng, name)
        else:
            query = "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(8)).title()
        out.append((tier, query))
    return out


async def _create(address: str, bodies: list[dict[str, Any]], concurrency: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {_KEY}"}
    gate = asyncio.Semaphore(concurrency)
    took: list[float] = []
    async with httpx.AsyncClient(
        base_url=f"http://{address}", headers=headers, timeout=120
    ) as http:

        async def one(body: dict[str, Any]) -> None:
            async with gate:
                started = time.perf_counter()
                response = await http.post("/memory/entities", json=body)
                took.append((time.perf_counter() - started) * 1000)
                if response.status_code != 201:
                    raise RuntimeError(f"{body}: {response.status_code} {response.text}")

        started = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        seconds = time.perf_counter() - started
    return {
        "entities": len(bodies),
        "concurrency": concurrency,
        "seconds": seconds,
        "per_s": len(bodies) / seconds,
        "request_ms": percentiles(took),
    }


def _listed(http: httpx.Client) -> list[Entity]:
    response = http.get("/memory/entities")
    response.raise_for_status()
    found = []
    for view in response.json()["entities"]:
        record = {**view, "user_id": _USER, "meta": view.pop("metadata")}
        found.append(msgspec.convert(record, Entity, strict=False))
    return found


def _table(rows: dict[str, dict[str, float]]) -> None:
    print(f"  {'':<28}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}  (ms)")
    for name, row in rows.items():
        print(f"  {name:<28}{row['p50']:9.3f}{row['p95']:9.3f}{row['p99']:9.3f}{row['max']:9.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--concurrency", type=int, default=8, help="creating entities")
    parser.add_argument("--data", help="keep the data directory here (reused if it exists)")
    parser.add_argument("--name", default="entities", help="bench/results/<name>.json")
    args = parser.parse_args()
    bodies = make_entities(args.entities)
    queries = make_queries(bodies, args.queries)
    env = {
        "MNEMO_EMBEDDER": "hash",
        "MNEMO_LLM_URL": "http://127.0.0.1:9",
        "MNEMO_RATE_LIMIT": "1000000",
        "MNEMO_RATE_BURST": "1000000",
        "MNEMO_USER_RATE": "1000000",  # the default, 100 units/s, would time the budget
        "MNEMO_USER_BURST": "1000000",
        "MNEMO_API_KEYS": f"{_KEY}:{_USER}",
    }
    result: dict[str, Any] = {}
    with ExitStack() as stack:
        address, _ = stack.enter_context(served(env, data_dir=args.data))
        headers = {"Authorization": f"Bearer {_KEY}"}
        http = stack.enter_context(
            httpx.Client(base_url=f"http://{address}", headers=headers, timeout=600)
        )
        if not _listed(http):
            result["create"] = asyncio.run(_create(address, bodies, args.concurrency))
        entities = _listed(http)
        started = time.perf_counter()
        first = http.post("/memory/entities/resolve", json={"name": "Ana", "enable_fuzzy": True})
        first.raise_for_status()
        result["first_resolve_ms"] = (time.perf_counter() - started) * 1000
        by_tier: dict[str, list[float]] = {}
        candidates: list[int] = []
        for tier, name in queries:
            body = {"name": name, "enable_fuzzy": True}
            started = time.perf_counter()
            response = http.post("/memory/entities/resolve", json=body)
            took = (time.perf_counter() - started) * 1000
            response.raise_for_status()
            candidates.append(len(response.json()["candidates"]))
            by_tier.setdefault(tier, []).append(took)
    index_build = time.perf_counter()
    index = resolution.EntityIndex(entities) if hasattr(resolution, "EntityIndex") else entities
    index_ms = (time.perf_counter() - index_build) * 1000
    local: list[float] = []
    for _, name in queries:
        started = time.perf_counter()
        resolution.resolve(index, name, enable_fuzzy=True)
        local.append((time.perf_counter() - started) * 1000)
    http_all = [t for times in by_tier.values() for t in times]
    result.update(
        {
            "entities": len(entities),
            "queries": len(queries),
            "candidates": percentiles(candidates),
            "http_ms": percentiles(http_all),
            "http_ms_by_tier": {t: percentiles(v) for t, v in by_tier.items()},
            "in_process_ms": percentiles(local),
            "in_process_index_build_ms": index_ms,
            "setup": {**machine(), "embedder": "hash", "store": "LanceDB", "fuzzy": True},
        }
    )
    path = write_result(args.name, result)
    setup = result["setup"]
    print(
        f"entity resolution: {len(entities)} entities of one user, {len(queries)} queries "
        f"(exact, alias, prefix, fuzzy, miss in equal shares, enable_fuzzy on), "
        f"{setup['cores']} cores ({setup['cpu']}), server in its own process"
    )
    if "create" in result:
        made = result["create"]
        print(
            f"  created {made['entities']} through POST /memory/entities, {made['concurrency']} "
            f"at a time: {made['seconds']:.1f} s, {made['per_s']:.0f}/s"
        )
    print(
        f"  first resolve after start {result['first_resolve_ms']:.1f} ms; candidates per "
        f"query p50 {result['candidates']['p50']:.0f}, max {result['candidates']['max']:.0f}"
    )
    rows = {"HTTP, all": result["http_ms"]}
    rows |= {f"HTTP, {t}": v for t, v in result["http_ms_by_tier"].items()}
    rows["in process (resolve)"] = result["in_process_ms"]
    _table(rows)
    print(f"  in-process index build: {index_ms:.1f} ms")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
