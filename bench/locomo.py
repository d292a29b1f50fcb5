"""Retrieval quality on LoCoMo: Recall@1/5/10/20 and MRR per category, beside plain BM25.

    python -m bench.locomo [--data ../shared/eval/locomo-dev.json] [--embedder onnx-minilm]
                           [--data-dir DIR] [--project-from N]

Starts ``mnemo serve`` in its own process (real LanceDB in a temp dir, the
chosen embedder; no Ollama: importing and searching never call it). Each
conversation becomes one user: its turns go in through ``POST
/memory/import`` (``meta.dia_id`` carries LoCoMo's turn id, the session's date
is the timestamp, a shared image's caption is part of the text). Every
question of categories 1-4 (those with evidence) is asked through ``GET
/memory/search?kind=turns&limit=20``. Recall@k is the share of a question's
evidence turns among the first k hits; MRR uses the first evidence hit. The
baseline is plain BM25 (k1 1.2, b 0.75, lower-cased word tokens) over the same
turn texts, computed here in the same run. Writes ``bench/results/locomo.json``.

``--project-from 0`` gives every conversation what a user of 50,000 messages gets: a
projection first and int8 vectors (``MNEMO_PROJECT_FROM``); a conversation is under the
projection's 1,000 candidates, so what changes is the int8 rounding alone. Writes
``bench/results/locomo-int8.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import machine, percentiles, server_process, write_result

_DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo-dev.json"
_KS = (1, 5, 10, 20)
_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_WORD = re.compile(r"\w+")


def turns_of(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation's turns as import lines (kind ``turn``), in order."""
    conversation = sample["conversation"]
    speaker_a = conversation["speaker_a"]
    lines: list[dict[str, Any]] = []
    number = 1
    while f"session_{number}" in conversation:
        when = _session_date(conversation[f"session_{number}_date_time"])
        for position, turn in enumerate(conversation[f"session_{number}"]):
            text = turn["text"]
            if turn.get("blip_caption"):
                text = f"{text} (shared an image: {turn['blip_caption']})"
            lines.append(
                {
                    "kind": "turn",
                    "id": turn["dia_id"],
                    "session_id": f"session_{number}",
                    "speaker": turn["speaker"],
                    "role": "user" if turn["speaker"] == speaker_a else "other",
                    "text": text,
                    "at": (when + timedelta(seconds=30 * position)).isoformat(),
                    "meta": {"dia_id": turn["dia_id"]},
                }
            )
        number += 1
    return lines


def _session_date(raw: str) -> datetime:
    """LoCoMo's ``1:56 pm on 8 May, 2023``."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def words(text: str) -> list[str]:
    """Lower-cased word tokens: the baseline's terms."""
    return _WORD.findall(text.lower())


class Bm25:
    """Plain Okapi BM25 over a small collection, for the baseline; ``terms`` splits a text
    (lower-cased words by default)."""

    def __init__(
        self,
        documents: Sequence[str],
        k1: float = 1.2,
        b: float = 0.75,
        *,
        terms: Callable[[str], list[str]] = words,
    ) -> None:
        self._terms = terms
        self._docs = [Counter(terms(d)) for d in documents]
        self._lengths = [sum(d.values()) for d in self._docs]
        self._average = sum(self._lengths) / max(len(self._docs), 1)
        frequency: Counter[str] = Counter()
        for doc in self._docs:
            frequency.update(doc.keys())
        n = len(self._docs)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}
        self._k1, self._b = k1, b

    def rank(self, query: str, k: int) -> list[int]:
        terms = self._terms(query)
        scores = []
        for index, (doc, length) in enumerate(zip(self._docs, self._lengths, strict=True)):
            score = 0.0
            for term in terms:
                tf = doc.get(term, 0)
                if tf:
                    norm = self._k1 * (1 - self._b + self._b * length / self._average)
                    score += self._idf[term] * tf * (self._k1 + 1) / (tf + norm)
            if score > 0:
                scores.append((-score, index))
        return [index for _, index in sorted(scores)[:k]]


def score(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    """Recall@k for each k in ``_KS`` and the reciprocal rank of the first evidence hit."""
    wanted = set(evidence)
    out = {f"R@{k}": len(wanted & set(ranked[:k])) / len(wanted) for k in _KS}
    first = next((i for i, hit in enumerate(ranked) if hit in wanted), None)
    out["MRR"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


def _request(address: str, key: str, path: str, body: bytes | None = None) -> Any:
    headers = {"Authorization": f"Bearer {key}"}
    if body is not None:
        headers["Content-Type"] = "application/x-ndjson"
    request = urllib.request.Request(f"http://{address}{path}", data=body, headers=headers)
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


def _table(rows: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    out = {}
    for name, scored in rows.items():
        out[name] = {m: sum(s[m] for s in scored) / len(scored) for m in scored[0]}
        out[name]["questions"] = len(scored)
    return out


def run(address: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    mnemo: dict[str, list[dict[str, float]]] = {}
    bm25: dict[str, list[dict[str, float]]] = {}
    search_ms: list[float] = []
    per_question: list[dict[str, Any]] = []
    import_seconds = 0.0
    for index, sample in enumerate(samples):
        key = f"k{index}"
        lines = turns_of(sample)
        started = time.perf_counter()
        body = "".join(json.dumps(line) + "\n" for line in lines).encode()
        reply = _request(address, key, "/memory/import", body)
        import_seconds += time.perf_counter() - started
        if reply.get("errors"):
            raise RuntimeError(f"import of {sample['sample_id']} failed: {reply['errors'][:3]}")
        baseline = Bm25([line["text"] for line in lines])
        ids = [line["id"] for line in lines]
        for qa in sample["qa"]:
            category = qa.get("category")
            if category not in _CATEGORIES or not qa.get("evidence"):
                continue
            query = urllib.parse.urlencode({"q": qa["question"], "limit": 20, "kind": "turns"})
            started = time.perf_counter()
            hits = _request(address, key, f"/memory/search?{query}")["hits"]
            search_ms.append((time.perf_counter() - started) * 1000)
            found = [str((hit.get("meta") or {}).get("dia_id")) for hit in hits]
            name = _CATEGORIES[category]
            mnemo.setdefault(name, []).append(score(found, qa["evidence"]))
            per_question.append(
                {
                    "sample": sample["sample_id"],
                    "question": qa["question"],
                    "category": name,
                    "evidence": qa["evidence"],
                    "found": found,
                }
            )
            ranked = [ids[i] for i in baseline.rank(qa["question"], 20)]
            bm25.setdefault(name, []).append(score(ranked, qa["evidence"]))
    mnemo["overall"] = [s for name in _CATEGORIES.values() for s in mnemo.get(name, [])]
    bm25["overall"] = [s for name in _CATEGORIES.values() for s in bm25.get(name, [])]
    turns = sum(len(turns_of(s)) for s in samples)
    return {
        "conversations": len(samples),
        "turns": turns,
        "import_turns_per_s": turns / import_seconds,
        "search_ms": percentiles(search_ms),
        "mnemo": _table(mnemo),
        "bm25": _table(bm25),
        "per_question": per_question,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=_DEFAULT_DATA)
    parser.add_argument("--embedder", default="onnx-minilm")
    parser.add_argument(
        "--data-dir", default=None, help="keep the server's data here (a rerun skips the import)"
    )
    parser.add_argument("--project-from", type=int, default=None, help="MNEMO_PROJECT_FROM")
    args = parser.parse_args()
    samples = json.loads(args.data.read_text())
    env = {
        "MNEMO_EMBEDDER": args.embedder,
        "MNEMO_LLM_URL": "http://127.0.0.1:9",  # nothing listens: no model is needed
        "MNEMO_API_KEYS": ",".join(f"k{i}:{s['sample_id']}" for i, s in enumerate(samples)),
    }
    name = "locomo"
    if args.project_from is not None:
        env["MNEMO_PROJECT_FROM"] = str(args.project_from)
        name = "locomo-int8"
    with server_process(env, data_dir=args.data_dir) as address:
        result = run(address, samples)
    result["setup"] = {**machine(), "embedder": args.embedder, "data": str(args.data)}
    result["setup"]["project_from"] = args.project_from
    path = write_result(name, result)
    print(
        f"LoCoMo {args.data.name}: {result['conversations']} conversations, {result['turns']}"
        f" turns imported at {result['import_turns_per_s']:.0f} turns/s, embedder"
        f" {args.embedder}, {result['setup']['cores']} cores; search p50"
        f" {result['search_ms']['p50']:.1f} ms p95 {result['search_ms']['p95']:.1f} ms"
    )
    header = "".join(f"{m:>8}" for m in (*(f"R@{k}" for k in _KS), "MRR"))
    print(f"  {'category':<12} {'n':>4}  {'system':<6}{header}")
    for name in (*_CATEGORIES.values(), "overall"):
        for system in ("mnemo", "bm25"):
            row = result[system].get(name)
            if row is None:
                continue
            cells = "".join(f"{row[m]:8.3f}" for m in (*(f"R@{k}" for k in _KS), "MRR"))
            print(f"  {name:<12} {row['questions']:>4.0f}  {system:<6}{cells}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
