"""Memory state after scripted dialogues: what is active, what is history, duplicates, context.

    python -m bench.memstate --mode rules|model|real [--model NAME] [--data FILE ...]
        [--only ID,ID...] [--json-out FILE]

Starts ``mnemo serve`` in its own process (real LanceDB in a temp dir, the
default embedder), one API user per dialogue, and feeds each dialogue's
sessions as ``turn`` frames, ending each session with ``end``. Once the
user's facts stop changing it checks the memory state a person would expect:

- ``active``: each group of keywords must all appear in one active fact
  (``a|b`` matches either spelling; casefolded),
- ``not_active``: no active fact may match (hedges, questions, other people's
  facts, superseded or retracted statements),
- ``history``: a superseded fact must still be readable (``validity=any``),
- ``dupes`` (``max_active_matching``): at most N active facts match a group,
- ``probes``: the ``context`` block for a question contains the answer.

A dialogue with ``pin`` pins the first active fact matching it after its
first session. ``--mode rules``: Ollama is unreachable, so the server's
rule-based fallback extractor runs. ``--mode model``: a fake Ollama
(``testing/fake_ollama.py``) answers each extraction call with the facts a
careful model would return for the turns in the prompt (``--gold``, by user
text), so wrong memory there is mnemo's own merge, pin and context logic; a
user turn without gold is an error. Also times the fallback extractor
in-process on every user turn of the data. The data files (default
``bench/data/memstate/dev.json`` and ``extra.json`` when it exists) are
scored one by one (split = file stem) and together; ``overall`` is the mean
of the five check rates. Writes ``bench/results/memstate-<mode>.json``
(``memstate-real-<model>.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from bench.common import machine, percentiles, server_process, write_result
from memory.rules_extractor import extract_facts
from testing.downloads import MODELS
from testing.fake_ollama import FakeOllama
from testing.real_model import serve_models

__all__ = [
    "CHECKS",
    "DATA",
    "GoldModel",
    "Tally",
    "default_data",
    "extractor_cost",
    "has",
    "histogram_quantiles",
    "load_gold",
    "main",
    "missing_gold",
    "score",
    "user_turns",
]

DATA = Path(__file__).resolve().parent / "data" / "memstate"
#: The checks, in the order they are reported; ``overall`` is the mean of their rates.
CHECKS = ("active", "not_active", "history", "dupes", "probes")
_CLOSED_PORT = "http://127.0.0.1:9"  # nothing listens there
_ADMIN = "bench-admin"
_TURN = re.compile(r"Turn \d+ user: <episode_content>(.*?)</episode_content>", re.DOTALL)
_NOTE_ID = re.compile(r"^(\S+): <episode_content>", re.MULTILINE)

Dialogue = dict[str, Any]
Json = dict[str, Any]


def has(text: str, group: Sequence[str]) -> bool:
    """Every keyword of ``group`` is in ``text`` (casefolded); ``a|b`` is either spelling."""
    folded = text.casefold()
    return all(any(alt.casefold() in folded for alt in kw.split("|")) for kw in group)


def score(
    dialogue: Dialogue, active: Sequence[str], history: Sequence[str], probes: Sequence[str]
) -> dict[str, list[bool]]:
    """Each check's outcomes for one dialogue, given the contents of its user's active and
    superseded facts and the context text each probe got (in the dialogue's order)."""
    expect = dialogue["expect"]
    return {
        "active": [any(has(a, g) for a in active) for g in expect.get("active", [])],
        "not_active": [not any(has(a, g) for a in active) for g in expect.get("not_active", [])],
        "history": [any(has(h, g) for h in history) for g in expect.get("history", [])],
        "dupes": [
            sum(has(a, g) for a in active) <= n for g, n in expect.get("max_active_matching", [])
        ],
        "probes": [
            has(text, p["expect"])
            for p, text in zip(dialogue.get("probes", []), probes, strict=True)
        ],
    }


@dataclass
class Tally:
    """Passed and total checks, per check and per phenomenon."""

    checks: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k in CHECKS})
    phenomena: dict[str, list[int]] = field(default_factory=dict)

    def add(self, dialogue: Dialogue, result: Mapping[str, Sequence[bool]]) -> None:
        for check, outcomes in result.items():
            self.checks[check][0] += sum(outcomes)
            self.checks[check][1] += len(outcomes)
            for name in dialogue.get("phenomena", ["other"]):
                counts = self.phenomena.setdefault(name, [0, 0])
                counts[0] += sum(outcomes)
                counts[1] += len(outcomes)

    def rates(self) -> dict[str, float]:
        """Each check's pass rate; a check nothing asked for counts as 1.0."""
        return {k: (a / n if n else 1.0) for k, (a, n) in self.checks.items()}

    def overall(self) -> float:
        rates = self.rates()
        return sum(rates.values()) / len(rates)

    def summary(self) -> Json:
        return {
            "overall": self.overall(),
            "rates": self.rates(),
            "by_check": {k: _counts(a, n) for k, (a, n) in self.checks.items()},
            "by_phenomenon": {k: _counts(a, n) for k, (a, n) in sorted(self.phenomena.items())},
        }

    def report(self, split: str, mode: str) -> None:
        for name, (a, n) in sorted(self.phenomena.items()):
            print(f"phenomenon {name:14} {a}/{n} = {a / n if n else 1.0:.3f}")
        for check, rate in self.rates().items():
            print(f"rate {check:11} {rate:.3f}")
        print(f"memstate {split} {mode} overall {self.overall():.3f}", flush=True)


def _counts(passed: int, total: int) -> Json:
    return {"passed": passed, "total": total, "rate": passed / total if total else 1.0}


def user_turns(dialogues: Sequence[Dialogue]) -> list[tuple[str, str]]:
    """(where, text) of every user turn; ``where`` is ``<id> session <n> turn <m>``."""
    return [
        (f"{d['id']} session {n} turn {m}", turn["user"])
        for d in dialogues
        for n, session in enumerate(d["sessions"])
        for m, turn in enumerate(session)
    ]


def load_gold(path: Path) -> dict[str, list[Json]]:
    gold: dict[str, list[Json]] = json.loads(path.read_text())
    return gold


def missing_gold(dialogues: Sequence[Dialogue], gold: Mapping[str, object]) -> list[str]:
    """The user turns with no gold entry, as ``<where>: <text>``."""
    return [f"{where}: {text!r}" for where, text in user_turns(dialogues) if text not in gold]


class GoldModel:
    """The fake Ollama's responder in model mode: each extraction call gets the gold facts
    of every user turn in its prompt, in order; notes, note decisions and profiles get a
    minimal valid answer for their schema. Called from the fake's worker threads."""

    def __init__(self, gold: Mapping[str, Sequence[Json]]) -> None:
        self._gold = gold
        self._lock = threading.Lock()
        self.calls: dict[str, int] = {}
        #: User turn texts that reached an extraction call.
        self.seen: set[str] = set()
        #: User turn texts an extraction call asked about that have no gold.
        self.missing: list[str] = []

    def forget_seen(self) -> None:
        with self._lock:
            self.seen.clear()

    def __call__(self, path: str, body: Json) -> Any:
        schema = body.get("format")
        name = str(schema.get("title", "")) if isinstance(schema, dict) else "chat"
        with self._lock:
            self.calls[name] = self.calls.get(name, 0) + 1
        prompt = body["messages"][-1]["content"] if body.get("messages") else ""
        if name == "Extraction":
            return self._extraction(prompt)
        if name == "NoteText":
            return {"content": "The user talked about themselves.", "importance": 5, "tags": []}
        if name == "NoteDecision":
            ids = _NOTE_ID.findall(prompt)
            return {"action": "delete", "target_id": ids[0] if ids else "", "reason": "oldest"}
        if name == "chat":
            return "OK."
        return {}  # ProfileSummary: every field has a default

    def _extraction(self, prompt: str) -> Json:
        facts: list[Json] = []
        for raw in _TURN.findall(prompt):
            text = raw.replace("<episode_content\u200b>", "<episode_content>").replace(
                "</episode_content\u200b>", "</episode_content>"
            )
            with self._lock:
                self.seen.add(text)
                if text not in self._gold:
                    self.missing.append(text)
                    continue
            facts.extend(self._gold[text])
        return {
            "facts": facts,
            "memory_update": {"should_store": bool(facts)},
            "analysis": {},
        }


def extractor_cost(texts: Sequence[str], repeat: int = 20) -> Json:
    """Microseconds per call of the rule-based extractor over ``texts``, ``repeat`` times
    (after one warm-up pass), in this process."""
    for text in texts:
        extract_facts(text)
    samples: list[float] = []
    for _ in range(repeat):
        for text in texts:
            started = time.perf_counter_ns()
            extract_facts(text)
            samples.append((time.perf_counter_ns() - started) / 1000)
    return {"turns": len(texts), "repeat": repeat, "us_per_turn": percentiles(samples, (50, 95))}


async def _until(ws: ClientConnection, types: set[str], timeout: float, msg_id: str) -> Json:
    """The next frame of one of ``types`` answering ``msg_id`` (pushed frames are skipped)."""
    async with asyncio.timeout(timeout):
        while True:
            frame: Json = json.loads(await ws.recv())
            if frame.get("type") in types and frame.get("id") in (msg_id, None):
                return frame


class _Run:
    """One server, its users, and (model mode) the fake's responder."""

    def __init__(
        self, address: str, http: httpx.AsyncClient, model: GoldModel | None, *, slow: bool
    ) -> None:
        self.address, self.http, self.model = address, http, model
        #: A real model: extraction takes seconds, so wait longer for it.
        self.wait = 600.0 if slow else 10.0
        self.quiet = 5.0 if slow else 2.0

    async def facts(self, key: str, validity: str) -> list[Json]:
        response = await self.http.get(
            "/memory/long-term",
            params={"kind": "facts", "validity": validity, "limit": 200},
            headers={"Authorization": f"Bearer {key}"},
        )
        response.raise_for_status()
        items: list[Json] = response.json()["items"]
        return items

    async def settle(self, key: str, limit: float = 20.0) -> None:
        """Wait until the user's facts have not changed for ``quiet`` s (at most ``limit`` s)."""
        last, still, started = "", time.monotonic(), time.monotonic()
        if self.quiet > 2.0:  # a real model: first wait for the ended sessions to finish
            while time.monotonic() - started < self.wait:
                live = await self.http.get("/actors", headers={"Authorization": f"Bearer {key}"})
                live.raise_for_status()
                if all(a["session_id"].endswith("-probe") for a in live.json()["items"]):
                    break
                await asyncio.sleep(1.0)
        while time.monotonic() - started < limit:
            state = json.dumps(
                [
                    (f["id"], f["validity"], f.get("mention_count"))
                    for f in await self.facts(key, "any")
                ]
            )
            if state != last:
                last, still = state, time.monotonic()
            elif time.monotonic() - still >= self.quiet:
                return
            await asyncio.sleep(0.4)

    async def pin(self, key: str, group: Sequence[str]) -> str | None:
        for fact in await self.facts(key, "active"):
            if has(fact["content"], group):
                response = await self.http.patch(
                    f"/memory/long-term/{fact['id']}",
                    json={"pinned": True},
                    headers={"Authorization": f"Bearer {key}"},
                )
                response.raise_for_status()
                content: str = fact["content"]
                return content
        return None

    def _url(self, session: str, key: str) -> str:
        return f"ws://{self.address}/ws/{session}"

    async def dialogue(self, split: str, index: int, d: Dialogue) -> Json:
        key = f"k{index}"
        errors: list[Json] = []
        pinned: str | None = None
        if self.model is not None:
            self.model.forget_seen()
        for n, session in enumerate(d["sessions"]):
            async with connect(
                self._url(f"{split}-{d['id']}-s{n}", key),
                max_queue=None,
                additional_headers={"Authorization": f"Bearer {key}"},
            ) as ws:
                await ws.recv()  # ready
                for m, turn in enumerate(session):
                    message = {
                        "type": "turn",
                        "id": f"t{m}",
                        "user": turn["user"],
                        "assistant": turn.get("assistant", "OK."),
                    }
                    await ws.send(json.dumps(message))
                    answer = await _until(ws, {"ack", "error"}, 20, f"t{m}")
                    if answer["type"] == "error":
                        errors.append({"session": n, "turn": m, **answer})
                await ws.send(json.dumps({"type": "end"}))
                with suppress(ConnectionClosed, TimeoutError):
                    async with asyncio.timeout(self.wait):
                        while True:  # the server closes once the session is archived
                            await ws.recv()
            await self.settle(key)
            if n == 0 and d.get("pin"):
                pinned = await self.pin(key, d["pin"])
        everything = await self.facts(key, "any")
        active = [f for f in everything if f["validity"] == "active"]
        history = [f for f in everything if f["validity"] != "active"]
        probes: list[Json] = []
        async with connect(
            self._url(f"{split}-{d['id']}-probe", key),
            max_queue=None,
            additional_headers={"Authorization": f"Bearer {key}"},
        ) as ws:
            await ws.recv()
            for k, probe in enumerate(d.get("probes", [])):
                request = {"type": "context", "id": f"p{k}", "query": probe["query"], "budget": 300}
                await ws.send(json.dumps(request))
                answer = await _until(ws, {"context", "error"}, 20, f"p{k}")
                probes.append({**probe, "text": answer.get("text", "")})
        result = score(
            d,
            [f["content"] for f in active],
            [f["content"] for f in history],
            [p["text"] for p in probes],
        )
        out: Json = {
            "id": d["id"],
            "split": split,
            "phenomena": d.get("phenomena", ["other"]),
            "result": result,
            "active": [_fact_view(f) for f in active],
            "history": [_fact_view(f) for f in history],
            "probes": probes,
            "pinned": pinned,
            "errors": errors,
        }
        if self.model is not None:
            if self.model.missing:
                raise SystemExit(f"model mode: no gold for user turn(s) {self.model.missing!r}")
            unseen = [t for _, t in user_turns([d]) if t not in self.model.seen]
            out["turns_not_extracted"] = unseen
        return out


def _fact_view(fact: Json) -> Json:
    keep = ("content", "subject", "predicate", "value", "validity", "extractor", "pinned")
    return {k: fact.get(k) for k in (*keep, "mention_count")}


def default_data() -> list[Path]:
    """Every dialogue file of ``bench/data/memstate``: ``dev.json`` first, then the others
    by name (``gold.json`` holds the model's answers, not dialogues)."""
    files = sorted(p for p in DATA.glob("*.json") if p.name != "gold.json")
    return sorted(files, key=lambda p: p.name != "dev.json")


async def _run(
    address: str, splits: Mapping[str, list[Dialogue]], mode: str, model: GoldModel | None
) -> Json:
    slow = mode.startswith("real")
    total = Tally()
    out: Json = {"splits": {}}
    index = 0
    async with httpx.AsyncClient(base_url=f"http://{address}", timeout=30) as http:
        run = _Run(address, http, model, slow=slow)
        for split, dialogues in splits.items():
            tally = Tally()
            rows = []
            for d in dialogues:
                row = await run.dialogue(split, index, d)
                index += 1
                rows.append(row)
                tally.add(d, row["result"])
                total.add(d, row["result"])
                cells = " ".join(f"{k}={sum(v)}/{len(v)}" for k, v in row["result"].items() if v)
                print(f"{d['id']:6} {cells}", flush=True)
                if row["errors"]:
                    print(f"       {len(row['errors'])} error frame(s): {row['errors'][0]}")
                if row.get("turns_not_extracted"):
                    print(f"       never extracted: {row['turns_not_extracted']}")
            tally.report(split, mode)
            out["splits"][split] = {**tally.summary(), "dialogues": rows}
        if len(splits) > 1:
            total.report("all", mode)
        out["all"] = total.summary()
        health = await http.get("/healthz")
        health.raise_for_status()
        out["extraction_stats"] = health.json().get("extraction", {})
        metrics = await http.get("/metrics", headers={"Authorization": f"Bearer {_ADMIN}"})
        metrics.raise_for_status()
        out["extraction_ms"] = histogram_quantiles(metrics.text, "mnemo_extraction_ms")
    return out


def histogram_quantiles(text: str, name: str, quantiles: Sequence[float] = (0.5, 0.95)) -> Json:
    """Count and quantiles of a Prometheus histogram in ``text`` (the exposition format),
    each as the upper bound of the bucket it falls in."""
    buckets: list[tuple[float, float]] = []
    for line in text.splitlines():
        if line.startswith(name + "_bucket{"):
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((float(bound), float(line.rsplit(" ", 1)[1])))
    total = buckets[-1][1] if buckets else 0.0
    out: Json = {"count": int(total)}
    for q in quantiles:
        out[f"p{round(q * 100)}_at_most"] = next(
            (bound for bound, seen in buckets if total and seen >= q * total), None
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("rules", "model", "real"), required=True)
    parser.add_argument("--model", choices=list(MODELS), default="smollm2:135m")
    parser.add_argument("--data", type=Path, nargs="+", action="extend")
    parser.add_argument("--gold", type=Path, default=DATA / "gold.json")
    parser.add_argument(
        "--only", help="comma-separated dialogue ids: run these alone (a slow real model)"
    )
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--repeat", type=int, default=20, help="extractor timing passes")
    args = parser.parse_args()
    paths: list[Path] = args.data or default_data()
    splits = {p.stem: json.loads(p.read_text()) for p in paths}
    if args.only:
        wanted = set(args.only.split(","))
        splits = {k: [d for d in v if d["id"] in wanted] for k, v in splits.items()}
    dialogues = [d for ds in splits.values() for d in ds]

    cost = extractor_cost([text for _, text in user_turns(dialogues)], args.repeat)
    us = cost["us_per_turn"]
    print(
        f"rules extractor: {cost['turns']} user turns x {cost['repeat']}: mean {us['mean']:.1f}"
        f" p50 {us['p50']:.1f} p95 {us['p95']:.1f} max {us['max']:.1f} us per turn",
        flush=True,
    )

    model: GoldModel | None = None
    fake: FakeOllama | None = None
    if args.mode == "model":
        gold = load_gold(args.gold)
        missing = missing_gold(dialogues, gold)
        if missing:
            raise SystemExit(f"no gold in {args.gold} for:\n  " + "\n  ".join(missing))
        model = GoldModel(gold)
        fake = FakeOllama(models=["llama3.2"], responder=model).start_in_thread()
    env = {
        "MNEMO_API_KEYS": ",".join(f"k{i}:u{i}" for i in range(len(dialogues))),
        "MNEMO_ADMIN_KEYS": _ADMIN,
        "MNEMO_LLM_URL": fake.url if fake is not None else _CLOSED_PORT,
    }
    mode = args.mode if args.mode != "real" else f"real-{args.model}"
    started = time.perf_counter()
    try:
        if args.mode == "real":
            with serve_models(MODELS[args.model]) as url:
                env |= {
                    "MNEMO_LLM_URL": url,
                    "MNEMO_CHAT_MODEL": args.model,
                    "MNEMO_EXTRACT_MODEL": args.model,
                    # The one-thread server answers one call at a time.
                    "MNEMO_EXTRACT_CONCURRENCY": "1",
                    "MNEMO_EXTRACT_TIMEOUT": "180",
                }
                with server_process(env) as address:
                    result = asyncio.run(_run(address, splits, mode, model))
        else:
            with server_process(env) as address:
                result = asyncio.run(_run(address, splits, mode, model))
    finally:
        if fake is not None:
            fake.stop_thread()
    stats = result["extraction_stats"]
    if model is not None:
        result["model_calls"] = model.calls
        if stats.get("by_rules"):
            print(f"warning: the server used the rule-based extractor {stats['by_rules']} times")
    print(f"extraction calls: {stats}; latency ms {result['extraction_ms']}")
    result.update(
        mode=mode,
        only=args.only,
        data=[str(p) for p in paths],
        seconds=time.perf_counter() - started,
        extractor_cost=cost,
        setup=machine(),
    )
    path = write_result(f"memstate-{mode.replace(':', '-')}", result)
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
