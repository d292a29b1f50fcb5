"""Recall with SPLADE-tiny as a third signal beside MiniLM and BM25, on the dev splits.

    python -m bench.splade [--locomo PATH] [--longmemeval PATH] [--most-terms N (0: all)]
                           [--bm25 plain|icu] [--limit N]

In process, with the real adapters (``OnnxMiniLmEmbedder``, ``OnnxSpladeEncoder``), one
document per turn, one index per conversation (LoCoMo) or per question's haystack
(LongMemEval). Each signal ranks its top 100 (MiniLM by cosine, SPLADE by the sparse
dot product of ``memory.sparse``, BM25 as ``bench.locomo.Bm25``: k1 1.2, b 0.75,
lower-cased word tokens; ``--bm25 icu``: the terms of LanceDB's ``icu`` analysis, as
mnemo's index has them), and reciprocal rank fusion (k = 60) joins the lists. This is
the harness the measured gain was found with, not mnemo's search (no statement keys,
no ranking rules): it measures what the third list adds.

- LoCoMo: a turn is ``"[<session date>] <speaker>: <text>"`` (a shared image's caption
  in the text, as ``bench.locomo`` imports it); Recall@10 of categories 1-4.
- LongMemEval: the user's turns, as the benchmark scores them; turn and session
  recall_all@5 (``bench.longmemeval.score_question``).
- Chinese: the Chinese cases of ``bench/data/memstate`` (each file's cases' user turns
  one haystack, their probes as queries, BM25 always on ``icu`` terms): the share of
  probes whose expected value is said in the top 1 and top 3 turns, and how many
  probes' SPLADE vectors hold a term at all.
- CPU per text, one thread: both models on LongMemEval user turns of 80-120 tokens, on
  questions, and on assistant replies whole (truncated at 256 tokens) and keyed by
  their first ``KEY_CHARS`` characters; the resident memory the loaded SPLADE adds.
  Timings depend on the machine's load; recall does not.

The gain over MiniLM + BM25 comes with a 95 % interval from a paired bootstrap over
questions. Writes ``bench/results/splade.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench import splade_sets
from bench.common import machine, write_result
from bench.locomo import Bm25
from bench.longmemeval import DATA
from memory.sparse import SparseRows, SparseVector
from server.adapters.onnx_embedder import OnnxMiniLmEmbedder
from server.adapters.splade import MOST_TERMS, OnnxSpladeEncoder

_DEPTH = 100
_RRF_K = 60
_RESAMPLES = 2000
#: The fusions reported, each the lists it joins.
FUSIONS = {
    "bm25": ("bm25",),
    "minilm": ("minilm",),
    "splade": ("splade",),
    "minilm+bm25": ("minilm", "bm25"),
    "minilm+splade+bm25": ("minilm", "splade", "bm25"),
}
Floats = npt.NDArray[np.float32]


class Signals:
    """The three ranked lists over one haystack."""

    def __init__(
        self, texts: Sequence[str], dense: Floats, sparse: Sequence[SparseVector], bm25: Bm25
    ) -> None:
        self.texts, self._dense, self._sparse, self._bm25 = texts, dense, SparseRows(sparse), bm25

    def lists(self, query: str, dense: Floats, sparse: SparseVector) -> dict[str, list[int]]:
        cosines = self._dense @ dense
        dots = self._sparse.scores(sparse)
        return {
            "minilm": np.argsort(-cosines, kind="stable")[:_DEPTH].tolist(),
            "splade": [i for i in np.argsort(-dots, kind="stable")[:_DEPTH].tolist() if dots[i]],
            "bm25": self._bm25.rank(query, _DEPTH),
        }


def fused(lists: Sequence[Sequence[int]]) -> list[int]:
    """Reciprocal rank fusion (k = 60); ties keep the order first seen."""
    scores: dict[int, float] = {}
    for ranked in lists:
        for rank, doc in enumerate(ranked, 1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (_RRF_K + rank)
    return sorted(scores, key=lambda doc: -scores[doc])


def rankings(lists: dict[str, list[int]]) -> dict[str, list[int]]:
    return {name: fused([lists[s] for s in parts]) for name, parts in FUSIONS.items()}


class Encoders:
    """Both models, with the thread CPU time each spent."""

    def __init__(self, most_terms: int | None) -> None:
        self.minilm = OnnxMiniLmEmbedder()
        self.splade = OnnxSpladeEncoder(most_terms=most_terms)
        self.minilm.load()
        before = splade_sets.rss_mib()
        if self.splade.encode_sync(["load"]) is None:
            raise SystemExit("the SPLADE model cannot be had here (see the log)")
        self.splade_mib = splade_sets.rss_mib() - before

    def dense(self, texts: Sequence[str]) -> Floats:
        return np.asarray(self.minilm.embed_sync(texts), dtype=np.float32).reshape(-1, 384)

    def sparse(self, texts: Sequence[str]) -> list[SparseVector]:
        vectors = self.splade.encode_sync(texts)
        assert vectors is not None  # loaded in __init__
        return vectors

    def signals(self, texts: Sequence[str], bm25: Callable[[Sequence[str]], Bm25]) -> Signals:
        return Signals(texts, self.dense(texts), self.sparse(texts), bm25(texts))


def bootstrap(deltas: Sequence[float], seed: int = 47) -> dict[str, float]:
    """The mean of paired differences and its 95 % percentile interval."""
    values = np.asarray(deltas, dtype=np.float64)
    picks = np.random.default_rng(seed).integers(0, len(values), (_RESAMPLES, len(values)))
    means = values[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": float(values.mean()), "low": float(low), "high": float(high)}


def locomo(path: Path, encoders: Encoders, bm25: Callable[[Sequence[str]], Bm25]) -> dict[str, Any]:
    recall: dict[str, dict[str, list[float]]] = {}
    for sample in json.loads(path.read_text()):
        ids, texts = splade_sets.locomo_documents(sample)
        signals = encoders.signals(texts, bm25)
        asked = splade_sets.locomo_questions(sample)
        dense = encoders.dense([q for q, _, _ in asked])
        sparse = encoders.sparse([q for q, _, _ in asked])
        for (question, category, evidence), d, s in zip(asked, dense, sparse, strict=True):
            for name, ranked in rankings(signals.lists(question, d, s)).items():
                found = {ids[i] for i in ranked[:10]}
                score = len(found & set(evidence)) / len(evidence)
                for group in (category, "overall"):
                    recall.setdefault(name, {}).setdefault(group, []).append(score)
    return _summary(recall, "R@10", ("overall",))


def longmemeval(
    path: Path, encoders: Encoders, bm25: Callable[[Sequence[str]], Bm25], limit: int | None
) -> dict[str, Any]:
    with gzip.open(path, "rt") as handle:
        records = json.load(handle)[:limit]
    found: dict[str, dict[str, list[float]]] = {}
    for record in records:
        ids, texts = splade_sets.user_turns(record)
        signals = encoders.signals(texts, bm25)
        question = record["question"]
        lists = signals.lists(
            question, encoders.dense([question])[0], encoders.sparse([question])[0]
        )
        for name, ranked in rankings(lists).items():
            for level, value in splade_sets.recall_all_at_5(record, [ids[i] for i in ranked]):
                found.setdefault(name, {}).setdefault(level, []).append(value)
    return _summary(found, "recall_all@5", ("turn", "session"))


def _summary(
    scores: dict[str, dict[str, list[float]]], measure: str, paired: Sequence[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {
        name: {group: {measure: float(np.mean(v)), "questions": len(v)} for group, v in by.items()}
        for name, by in scores.items()
    }
    for group in paired:
        base, ours = scores["minilm+bm25"][group], scores["minilm+splade+bm25"][group]
        deltas = [b - a for a, b in zip(base, ours, strict=True)]
        out.setdefault("gain", {})[group] = bootstrap(deltas)
    return out


def chinese(encoders: Encoders) -> dict[str, Any]:
    """Top-1 and top-3 of the memstate Chinese probes, with and without SPLADE's list."""
    hits: dict[str, Counter[str]] = {}
    probes = empty = 0
    for texts, asked in splade_sets.chinese_sets():
        signals = encoders.signals(texts, splade_sets.IcuBm25)
        sparse = encoders.sparse([query for query, _ in asked])
        dense = encoders.dense([query for query, _ in asked])
        for (query, expect), d, s in zip(asked, dense, sparse, strict=True):
            probes += 1
            empty += not len(s)
            for name, ranked in rankings(signals.lists(query, d, s)).items():
                for k in (1, 3):
                    said = " ".join(texts[i] for i in ranked[:k]).lower()
                    ok = all(any(alt.lower() in said for alt in item.split("|")) for item in expect)
                    hits.setdefault(name, Counter())[f"top{k}"] += ok
    return {
        "probes": probes,
        "probes_without_splade_terms": empty,
        **{name: dict(counts) for name, counts in hits.items()},
    }


def cpu(encoders: Encoders, path: Path) -> dict[str, Any]:
    """Thread CPU ms per text of each model, one thread, on four kinds of text."""
    kinds = splade_sets.timing_texts(path)
    out: dict[str, Any] = {}
    for kind, texts in kinds.items():
        row: dict[str, float] = {"texts": len(texts), "tokens": splade_sets.mean_tokens(texts)}
        for model, run in (("minilm", encoders.dense), ("splade", encoders.sparse)):
            run(texts[:5])  # warm
            started = time.thread_time()
            for text in texts:
                run([text])
            row[f"{model}_ms"] = (time.thread_time() - started) * 1000 / len(texts)
        out[kind] = row
    out["splade_rss_mib"] = encoders.splade_mib
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=DATA.parent / "locomo-dev.json")
    parser.add_argument("--longmemeval", type=Path, default=DATA)
    parser.add_argument("--most-terms", type=int, default=MOST_TERMS, help="terms kept a text")
    parser.add_argument("--bm25", choices=("plain", "icu"), default="plain")
    parser.add_argument("--limit", type=int, default=None, help="LongMemEval questions")
    args = parser.parse_args()
    bm25 = Bm25 if args.bm25 == "plain" else splade_sets.IcuBm25
    most_terms = args.most_terms or None
    encoders = Encoders(most_terms)
    result: dict[str, Any] = {"cpu": cpu(encoders, args.longmemeval)}
    result["locomo"] = locomo(args.locomo, encoders, bm25)
    result["longmemeval"] = longmemeval(args.longmemeval, encoders, bm25, args.limit)
    result["chinese"] = chinese(encoders)
    result["setup"] = {**machine(), "most_terms": most_terms, "bm25": args.bm25}
    result["setup"]["load"] = splade_sets.load_average()
    plain = most_terms == MOST_TERMS and args.bm25 == "plain"
    path = write_result("splade" if plain else f"splade-{args.bm25}-{most_terms or 'all'}", result)
    splade_sets.report(result)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
