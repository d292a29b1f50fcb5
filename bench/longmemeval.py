"""Retrieval quality on LongMemEval: recall_all@k and ndcg_any@k per question type, beside BM25.

    python -m bench.longmemeval [--limit N] [--types knowledge-update,multi-session=3]
                                [--data-dir DIR] [--embedder onnx-minilm]

Starts ``mnemo serve`` in its own process (real LanceDB, the chosen embedder; no
Ollama: importing and searching never call it). Each question's haystack becomes
its own user: its turns go in through ``POST /memory/import`` (the session's date
is each turn's time, 30 s apart), then the question is asked through ``GET
/memory/search?kind=turns&limit=100`` with the question's date as the query's time.

Scoring follows the benchmark's own code (``../shared/eval/README.md``): only user
turns with ``has_answer`` are turn evidence, so turns are ranked among the user
turns found (a hit of the assistant is left out, as the benchmark indexes user
turns only); a session's rank is that of its best-ranked user turn; ``recall_all@k``
is 1 when every evidence item is in the top k; ``ndcg_any@k`` as the benchmark
computes it. Questions whose id ends in ``_abs``, and questions with no user
evidence turn (turn level), are not scored. ``served_turn_recall_all@5`` keeps the
assistant's hits in their places: what a context block of five turns would hold.
Knowledge-update rates (``longmemeval-dev-ku-labels.json``): the current evidence
session ranked above the stale one, and in the top 5 (the benchmark's); and the same
for their evidence turns (``KUt``): which of the two statements a context block of a
few turns shows first.

The baseline is plain BM25 (k1 1.2, b 0.75, lower-cased word tokens) over the same
haystack: a session is its user turns joined, a turn one user turn.

``--data-dir`` keeps the server's data between runs: an imported haystack is
skipped on the next run (its ids are known), so a ranking change can be measured
again in minutes. Writes ``bench/results/longmemeval.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import machine, percentiles, server_process, write_result
from bench.locomo import Bm25

_EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
#: The dev split, beside the project as ``../shared/eval``.
DATA = _EVAL / "longmemeval-dev.json.gz"
_KS = (5, 10)
_DEPTH = 100
_TYPES = (
    "knowledge-update",
    "multi-session",
    "temporal-reasoning",
    "single-session-user",
    "single-session-preference",
    "single-session-assistant",
)


def _request(address: str, key: str, path: str, body: bytes | None = None) -> Any:
    headers = {"Authorization": f"Bearer {key}"}
    if body is not None:
        headers["Content-Type"] = "application/x-ndjson"
    req = urllib.request.Request(f"http://{address}{path}", data=body, headers=headers)
    with urllib.request.urlopen(req, timeout=3600) as response:
        return json.loads(response.read())


def haystack_date(raw: str) -> datetime:
    """LongMemEval's ``2023/05/20 (Sat) 02:21`` (taken as UTC)."""
    return datetime.strptime(raw, "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)


def turn_id(session_id: str, index: int) -> str:
    return f"{session_id}:{index}"


def import_lines(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The question's haystack as import lines, every session at its date."""
    lines = []
    sessions = zip(
        record["haystack_session_ids"],
        record["haystack_dates"],
        record["haystack_sessions"],
        strict=True,
    )
    for session_id, date, turns in sessions:
        when = haystack_date(date)
        for index, turn in enumerate(turns):
            if not turn["content"].strip():
                continue  # a few turns are empty: nothing to import
            lines.append(
                {
                    "kind": "turn",
                    "id": turn_id(session_id, index),
                    "session_id": session_id,
                    "speaker": turn["role"],
                    "role": turn["role"],
                    "text": turn["content"],
                    "at": (when + timedelta(seconds=30 * index)).isoformat(),
                    "meta": {"session": session_id, "turn": index},
                }
            )
    return lines


def _dcg(relevances: Sequence[float], k: int) -> float:
    # The benchmark's own: the first two places are not discounted.
    head = list(relevances)[:k]
    if not head:
        return 0.0
    return head[0] + sum(r / math.log2(i) for i, r in enumerate(head[1:], 2))


def measures(ranked: Sequence[str], evidence: set[str], corpus: int) -> dict[str, float]:
    """recall_all@k and ndcg_any@k of one ranking (``corpus``: how many items could be
    ranked, for the ideal ranking)."""
    out: dict[str, float] = {}
    ideal = [1.0] * min(len(evidence), corpus)
    for k in _KS:
        top = ranked[:k]
        out[f"recall_all@{k}"] = float(evidence <= set(top))
        best = _dcg(ideal, k)
        found = _dcg([1.0 if item in evidence else 0.0 for item in top], k)
        out[f"ndcg_any@{k}"] = found / best if best else 0.0
    return out


def sessions_of(turns: Sequence[str]) -> list[str]:
    """Sessions in the order of their best-ranked turn."""
    seen: dict[str, None] = {}
    for turn in turns:
        seen.setdefault(turn.rsplit(":", 1)[0], None)
    return list(seen)


def _rank_of(ranked: Sequence[str], item: str) -> int:
    return ranked.index(item) if item in ranked else len(ranked) + 1_000_000


def ku_rates(
    sessions: Sequence[str], turns: Sequence[str], label: dict[str, Any]
) -> dict[str, float]:
    """The knowledge-update rates of a ranking of sessions and one of user turns: the
    benchmark's, by session (the current evidence session ranked above the stale one,
    and in the top 5), and the same by turn (the best-ranked of the current statement's
    turns above the best-ranked of the stale one's, and in the top 5): which statement a
    context block of the first few turns shows first."""
    current = _rank_of(sessions, label["current_session_id"])
    stale = _rank_of(sessions, label["stale_session_id"])

    def best(session: str, indexes: Sequence[int]) -> int:
        return min(_rank_of(turns, turn_id(session, i)) for i in indexes)

    current_turn = best(label["current_session_id"], label["current_turn_idx"])
    stale_turn = best(label["stale_session_id"], label["stale_turn_idx"])
    return {
        "current_above_stale": float(current < stale),
        "current_in_top5": float(current < 5),
        "current_turn_above_stale": float(current_turn < stale_turn),
        "current_turn_in_top5": float(current_turn < 5),
    }


def score_question(
    record: dict[str, Any], turns: Sequence[str], served: Sequence[str]
) -> dict[str, dict[str, float]]:
    """Session- and turn-level measures of one ranking of user turns (``served``: every
    hit, the assistant's too, in the order found)."""
    user_turns = [
        turn_id(sid, i)
        for sid, session in zip(
            record["haystack_session_ids"], record["haystack_sessions"], strict=True
        )
        for i, turn in enumerate(session)
        if turn["role"] == "user"
    ]
    evidence_turns = {
        turn_id(sid, i)
        for sid, session in zip(
            record["haystack_session_ids"], record["haystack_sessions"], strict=True
        )
        for i, turn in enumerate(session)
        if turn["role"] == "user" and turn.get("has_answer")
    }
    out = {
        "session": measures(
            sessions_of(turns), set(record["answer_session_ids"]), len(record["haystack_sessions"])
        )
    }
    if evidence_turns:
        out["turn"] = measures(turns, evidence_turns, len(user_turns))
        out["turn"]["served_recall_all@5"] = float(evidence_turns <= set(served[:5]))
    return out


def bm25_ranking(record: dict[str, Any]) -> tuple[list[str], list[str]]:
    """BM25's session ranking (a session = its user turns joined) and turn ranking."""
    ids, texts, session_texts = [], [], []
    for sid, session in zip(
        record["haystack_session_ids"], record["haystack_sessions"], strict=True
    ):
        mine = [(i, t["content"]) for i, t in enumerate(session) if t["role"] == "user"]
        ids += [turn_id(sid, i) for i, _ in mine]
        texts += [text for _, text in mine]
        session_texts.append(" ".join(text for _, text in mine))
    query = record["question"]
    turns = [ids[i] for i in Bm25(texts).rank(query, _DEPTH)]
    sessions = [record["haystack_session_ids"][i] for i in Bm25(session_texts).rank(query, _DEPTH)]
    return sessions, turns


def _merge(scored: dict[str, dict[str, float]], into: dict[str, dict[str, list[float]]]) -> None:
    for level, values in scored.items():
        for name, value in values.items():
            into.setdefault(level, {}).setdefault(name, []).append(value)


def _means(rows: dict[str, dict[str, dict[str, list[float]]]]) -> dict[str, Any]:
    return {
        qtype: {
            level: {name: sum(v) / len(v) for name, v in values.items()}
            | {"questions": len(next(iter(values.values())))}
            for level, values in levels.items()
        }
        for qtype, levels in rows.items()
    }


def run(
    address: str, records: list[dict[str, Any]], labels: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    mnemo: dict[str, dict[str, dict[str, list[float]]]] = {}
    bm25: dict[str, dict[str, dict[str, list[float]]]] = {}
    search_ms: list[float] = []
    imported = import_seconds = 0.0
    per_question = []
    for index, record in enumerate(records):
        key = f"k{index}"
        lines = import_lines(record)
        started = time.perf_counter()
        body = "".join(json.dumps(line) + "\n" for line in lines).encode()
        reply = _request(address, key, "/memory/import", body)
        if reply.get("errors"):
            raise RuntimeError(f"import of {record['question_id']} failed: {reply['errors'][:3]}")
        if reply["imported"]:
            import_seconds += time.perf_counter() - started
            imported += reply["imported"]
        asked = haystack_date(record["question_date"]).isoformat()
        params = {"q": record["question"], "limit": _DEPTH, "kind": "turns", "at": asked}
        started = time.perf_counter()
        hits = _request(address, key, f"/memory/search?{urllib.parse.urlencode(params)}")["hits"]
        search_ms.append((time.perf_counter() - started) * 1000)
        served = [hit["source_id"] for hit in hits]
        turns = [hit["source_id"] for hit in hits if hit["role"] == "user"]
        qtype = record["question_type"]
        scored = score_question(record, turns, served)
        base_sessions, base_turns = bm25_ranking(record)
        baseline = score_question(record, base_turns, base_turns)
        baseline["session"] = measures(
            base_sessions, set(record["answer_session_ids"]), len(record["haystack_sessions"])
        )
        label = labels.get(record["question_id"])
        if label is not None:
            scored["ku"] = ku_rates(sessions_of(turns), turns, label)
            baseline["ku"] = ku_rates(base_sessions, base_turns, label)
        for table, values in ((mnemo, scored), (bm25, baseline)):
            _merge(values, table.setdefault(qtype, {}))
            _merge(values, table.setdefault("overall", {}))
        per_question.append(
            {
                "id": record["question_id"],
                "type": qtype,
                "mnemo": scored,
                "sessions": sessions_of(turns)[:10],
                "turns": turns[:10],
            }
        )
        print(f"  {index + 1}/{len(records)} {record['question_id']} {qtype}", file=sys.stderr)
    return {
        "questions": len(records),
        "imported_turns": imported,
        "import_turns_per_s": imported / import_seconds if import_seconds else None,
        "search_ms": percentiles(search_ms),
        "mnemo": _means(mnemo),
        "bm25": _means(bm25),
        "per_question": per_question,
    }


def select(records: list[dict[str, Any]], types: str, limit: int | None) -> list[Any]:
    """Scorable questions of ``types`` (``a,b=3``: every question of type ``a``, at most
    3 of ``b``; empty: every type), at most ``limit`` of a type without its own count."""
    wanted: dict[str, int | None] = {}
    for item in filter(None, types.split(",")):
        name, _, count = item.partition("=")
        wanted[name] = int(count) if count else None
    out, taken = [], dict.fromkeys(_TYPES, 0)
    for record in records:
        qtype = record["question_type"]
        if record["question_id"].endswith("_abs") or (wanted and qtype not in wanted):
            continue
        most = wanted.get(qtype, limit) if wanted else limit
        if most is not None and taken.get(qtype, 0) >= most:
            continue
        taken[qtype] = taken.get(qtype, 0) + 1
        out.append(record)
    return out


_COLUMNS = (
    ("session", "recall_all@5", "S R@5"),
    ("session", "recall_all@10", "S R@10"),
    ("session", "ndcg_any@5", "S nd@5"),
    ("turn", "recall_all@5", "T R@5"),
    ("turn", "recall_all@10", "T R@10"),
    ("turn", "ndcg_any@10", "T nd@10"),
    ("turn", "served_recall_all@5", "srvT@5"),
    ("ku", "current_above_stale", "KU>st"),
    ("ku", "current_in_top5", "KU@5"),
    ("ku", "current_turn_above_stale", "KUt>st"),
    ("ku", "current_turn_in_top5", "KUt@5"),
)


def print_table(result: dict[str, Any]) -> None:
    header = "".join(f"{label:>8}" for _, _, label in _COLUMNS)
    print(f"  {'type':<26}{'n':>4}  {'system':<6}{header}")
    for qtype in (*_TYPES, "overall"):
        for system in ("mnemo", "bm25"):
            row = result[system].get(qtype)
            if row is None:
                continue
            cells = "".join(
                f"{row[level][name]:8.3f}" if name in row.get(level, {}) else f"{'-':>8}"
                for level, name, _ in _COLUMNS
            )
            print(f"  {qtype:<26}{row['session']['questions']:>4}  {system:<6}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--labels", type=Path, default=_EVAL / "longmemeval-dev-ku-labels.json")
    parser.add_argument("--limit", type=int, default=None, help="questions per type, at most")
    parser.add_argument("--types", default="", help="question types: a,b=3 (3 of b)")
    parser.add_argument("--data-dir", default=None, help="keep the server's data here")
    parser.add_argument("--embedder", default="onnx-minilm")
    args = parser.parse_args()
    with gzip.open(args.data, "rt") as handle:
        records = select(json.load(handle), args.types, args.limit)
    labels = {label["question_id"]: label for label in json.loads(args.labels.read_text())}
    env = {
        "MNEMO_EMBEDDER": args.embedder,
        "MNEMO_LLM_URL": "http://127.0.0.1:9",  # nothing listens: no model is needed
        "MNEMO_API_KEYS": ",".join(f"k{i}:{r['question_id']}" for i, r in enumerate(records)),
        # Importing a haystack is one request of ~1 MB: no per-user rate limit here.
        "MNEMO_USER_RATE": "1000000",
        "MNEMO_USER_BURST": "1000000",
    }
    with server_process(env, data_dir=args.data_dir) as address:
        result = run(address, records, labels)
    result["setup"] = {
        **machine(),
        "embedder": args.embedder,
        "data": str(args.data),
        "limit": args.limit,
        "types": args.types,
    }
    path = write_result("longmemeval", result)
    rate = result["import_turns_per_s"]
    print(
        f"LongMemEval {args.data.name}: {result['questions']} questions,"
        f" {result['imported_turns']:.0f} turns imported"
        + (f" at {rate:.0f} turns/s" if rate else "")
        + f", embedder {args.embedder}; search p50 {result['search_ms']['p50']:.1f} ms"
    )
    print_table(result)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
