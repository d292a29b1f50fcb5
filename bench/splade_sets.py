"""The texts and measures of ``bench.splade``: LoCoMo and LongMemEval documents and
questions (through ``bench.locomo`` and ``bench.longmemeval``), the Chinese cases of
``bench/data/memstate``, the texts CPU is timed on, and the printed report."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import lancedb
import numpy as np

from bench.locomo import _CATEGORIES, Bm25, turns_of
from bench.longmemeval import score_question, turn_id
from memory.recall import KEY_CHARS
from server.adapters import onnx_runs
from server.adapters.lance_analyzer import FTS_TOKENIZER

__all__ = [
    "IcuBm25",
    "chinese_sets",
    "load_average",
    "locomo_documents",
    "locomo_questions",
    "mean_tokens",
    "recall_all_at_5",
    "report",
    "rss_mib",
    "timing_texts",
    "user_turns",
]

_MEMSTATE = Path(__file__).resolve().parent / "data" / "memstate"
_TIMED = 200


def _icu_terms(text: str) -> list[str]:
    """LanceDB's ``icu`` analysis (stemmed, stop words out), as mnemo's index has it."""
    tokens = lancedb.tokenize(text, base_tokenizer=FTS_TOKENIZER, remove_stop_words=True)
    return [token.text for token in tokens]


class IcuBm25(Bm25):
    """``Bm25`` over the terms of mnemo's full-text analysis (Chinese split into words)."""

    def __init__(self, documents: Sequence[str]) -> None:
        super().__init__(documents, terms=_icu_terms)


def locomo_documents(sample: dict[str, Any]) -> tuple[list[str], list[str]]:
    """A conversation's turn ids and texts, ``"[<session date>] <speaker>: <text>"``."""
    conversation = sample["conversation"]
    ids, texts = [], []
    for line in turns_of(sample):
        date = conversation[f"{line['session_id']}_date_time"]
        ids.append(line["id"])
        texts.append(f"[{date}] {line['speaker']}: {line['text']}")
    return ids, texts


def locomo_questions(sample: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """Questions of categories 1-4 with evidence: (question, category, evidence ids)."""
    return [
        (qa["question"], _CATEGORIES[qa["category"]], qa["evidence"])
        for qa in sample["qa"]
        if qa.get("category") in _CATEGORIES and qa.get("evidence")
    ]


def user_turns(record: dict[str, Any]) -> tuple[list[str], list[str]]:
    """A LongMemEval haystack's user turns: ids (``session:index``) and texts."""
    ids, texts = [], []
    sessions = zip(record["haystack_session_ids"], record["haystack_sessions"], strict=True)
    for session_id, turns in sessions:
        for index, turn in enumerate(turns):
            if turn["role"] == "user" and turn["content"].strip():
                ids.append(turn_id(session_id, index))
                texts.append(turn["content"])
    return ids, texts


def recall_all_at_5(record: dict[str, Any], ranked: Sequence[str]) -> Iterator[tuple[str, float]]:
    """(level, recall_all@5) for the session level and, with turn evidence, the turn level."""
    scored = score_question(record, ranked, ranked)
    for level in ("turn", "session"):
        if level in scored:
            yield level, scored[level]["recall_all@5"]


def chinese_sets() -> Iterator[tuple[list[str], list[tuple[str, list[str]]]]]:
    """Per memstate file, its Chinese cases' user turns and their probes (query, expected
    values: each item ``a|b`` is said when ``a`` or ``b`` is)."""
    for path in sorted(_MEMSTATE.glob("*.json")):
        cases = json.loads(path.read_text())
        if not isinstance(cases, list):
            continue
        chinese = [case for case in cases if case["lang"] == "zh"]
        texts = [
            turn["user"]
            for case in chinese
            for session in case["sessions"]
            for turn in session
            if turn.get("user")
        ]
        asked = [(p["query"], p["expect"]) for case in chinese for p in case["probes"]]
        if texts and asked:
            yield texts, asked


def timing_texts(path: Path) -> dict[str, list[str]]:
    """LongMemEval texts to time: user turns of 80-120 tokens, questions, assistant
    replies whole and as their first ``KEY_CHARS`` characters (what a reply is keyed by)."""
    with gzip.open(path, "rt") as handle:
        records = json.load(handle)
    tokenizer = onnx_runs.wordpiece()
    users: list[str] = []
    replies: list[str] = []
    for record in records:
        for session in record["haystack_sessions"]:
            for turn in session:
                text = turn["content"]
                if turn["role"] == "assistant" and len(replies) < _TIMED and text.strip():
                    replies.append(text)
                elif turn["role"] == "user" and len(users) < _TIMED:
                    if 80 <= len(tokenizer.encode(text).ids) <= 120:
                        users.append(text)
    return {
        "user_turn_80_120_tokens": users,
        "question": [record["question"] for record in records],
        "assistant_reply_whole": replies,
        "assistant_reply_key": [reply[:KEY_CHARS] for reply in replies],
    }


def mean_tokens(texts: Sequence[str]) -> float:
    return float(np.mean([len(ids) for ids in onnx_runs.token_ids(texts)]))


def rss_mib() -> float:
    """This process's resident memory."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def load_average() -> float:
    return os.getloadavg()[0]


def report(result: dict[str, Any]) -> None:
    setup = result["setup"]
    print(f"bench.splade: BM25 {setup['bm25']}, terms kept {setup['most_terms'] or 'all'},")
    print(f"  {setup['cores']} cores, load average {setup['load']:.1f} at the end")
    print("CPU ms per text, one thread (load-dependent):")
    for kind, row in result["cpu"].items():
        if isinstance(row, dict):
            print(
                f"  {kind:<26} {row['texts']:>4} texts {row['tokens']:6.1f} tokens"
                f"  minilm {row['minilm_ms']:6.2f}  splade {row['splade_ms']:6.2f}"
            )
    print(f"  SPLADE loaded adds {result['cpu']['splade_rss_mib']:.0f} MiB resident")
    locomo, lme = result["locomo"], result["longmemeval"]
    print(f"  {'fusion':<20} {'LoCoMo R@10':>12} {'LME turn@5':>11} {'LME sess@5':>11}")
    for name in locomo:
        if name == "gain":
            continue
        print(
            f"  {name:<20} {locomo[name]['overall']['R@10']:12.3f}"
            f" {lme[name]['turn']['recall_all@5']:11.3f}"
            f" {lme[name]['session']['recall_all@5']:11.3f}"
        )
    for label, gain in (
        ("LoCoMo R@10", locomo["gain"]["overall"]),
        ("LME turn all@5", lme["gain"]["turn"]),
        ("LME session all@5", lme["gain"]["session"]),
    ):
        print(
            f"  SPLADE's gain, {label}: {gain['mean']:+.3f}"
            f" (95 % CI {gain['low']:+.3f} .. {gain['high']:+.3f})"
        )
    categories = [c for c in locomo["minilm+bm25"] if c != "overall"]
    for category in categories:
        before = locomo["minilm+bm25"][category]["R@10"]
        after = locomo["minilm+splade+bm25"][category]["R@10"]
        print(f"  LoCoMo {category:<12} {before:.3f} -> {after:.3f}")
    zh = result["chinese"]
    print(
        f"Chinese memstate probes: {zh['probes']}, {zh['probes_without_splade_terms']}"
        " with no SPLADE term"
    )
    for name in ("bm25", "minilm+bm25", "minilm+splade+bm25", "splade"):
        print(f"  {name:<20} top1 {zh[name].get('top1', 0):>3}  top3 {zh[name].get('top3', 0):>3}")
