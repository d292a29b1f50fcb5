"""Search as a client sees it: over loopback HTTP and WebSocket, against a fresh server.

    python -m bench.client_search [--users 16] [--warm 200] [--big 100000] [--big-data DIR]

1. Import: ``mnemo serve`` in its own process (uvicorn, LanceDB in a temp dir, the
   bundled ONNX MiniLM embedder) takes ``--users`` LongMemEval haystacks (about 490
   messages each, ``/work/shared/eval/longmemeval-dev.json.gz`` or ``--data``) through
   ``POST /memory/import``, one user after the other as ``mnemo import`` sends them:
   messages per second.
2. Search, 500 messages: a fresh server on that directory; each user's first
   ``GET /memory/search`` (the user not loaded yet), then ``--warm`` warm searches over
   the users (``rest_500``); the same on another fresh server, which maps the indexes
   the first one saved when it stopped, if the users have ``MNEMO_SAVE_INDEX_FROM``
   messages (``rest_500_saved``); then another fresh server and the same through a
   WebSocket: connect, wait for ``ready``, send a ``context`` request (first: from
   connecting to the answer).
   The queries are the LongMemEval questions; every one is embedded by the server.
3. Search, ``--big`` messages for one user: imported through the same API by a server
   whose embedder is a 384-dimensional stand-in (feature hashing named ``onnx-minilm``:
   embedding 100k messages with MiniLM takes longer than the rest of the run; latency
   does not depend on the vectors' values), then searched by real fresh servers with
   the ONNX embedder: the first with no saved index (``rest_big``: the index is built
   from the table, and saved when that server stops), the next two reading the saved
   index (``rest_big_saved``, ``ws_big``). ``--big-data DIR`` keeps that directory for
   the next run; ``--cold`` empties the kernel's page cache before each REST first
   search of the big user (root only; the JSON is then ``client_search-cold.json``).

Prints the setup and a table, writes ``bench/results/client_search.json``. Timings are
the client's: from sending the request to having read the whole answer.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import connect

from bench.common import machine, percentiles, served, write_result
from bench.longmemeval import DATA, haystack_date

_CHUNK = 1 << 16
_BIG_USER = "big"


def _turn_lines(record: dict[str, Any], *, copy: int = 0) -> list[str]:
    """One LongMemEval haystack as import lines (``copy`` > 0: the same with other ids)."""
    lines = []
    sessions = zip(
        record["haystack_session_ids"],
        record["haystack_dates"],
        record["haystack_sessions"],
        strict=True,
    )
    for session_id, date, turns in sessions:
        started = haystack_date(date).replace(tzinfo=None)
        sid = f"{session_id}.{copy}"[:128]
        for n, turn in enumerate(turns):
            line = {
                "kind": "turn",
                "id": f"{sid}-{n}",
                "session_id": sid,
                "speaker": turn["role"],
                "role": turn["role"],
                "text": turn["content"][:65_536] or ".",
                "at": f"{(started + timedelta(seconds=n)).isoformat()}Z",
                "turn": n // 2 + 1,
            }
            lines.append(json.dumps(line))
    return lines


def _chunks(body: bytes) -> Iterator[bytes]:
    for start in range(0, len(body), _CHUNK):
        yield body[start : start + _CHUNK]


def _import(client: httpx.Client, key: str, lines: Sequence[str]) -> tuple[int, float]:
    body = ("\n".join(lines) + "\n").encode()
    started = time.perf_counter()
    response = client.post(
        "/memory/import",
        content=_chunks(body),
        headers={"Content-Type": "application/x-ndjson", "Authorization": f"Bearer {key}"},
    )
    seconds = time.perf_counter() - started
    response.raise_for_status()
    reply = response.json()
    if reply["errors"]:
        raise RuntimeError(f"import errors: {reply['errors'][:3]}")
    return reply["imported"] + reply["skipped"], seconds


def _search(client: httpx.Client, key: str, query: str) -> float:
    started = time.perf_counter()
    response = client.get(
        "/memory/search",
        params={"q": query, "limit": 10},
        headers={"Authorization": f"Bearer {key}"},
    )
    response.raise_for_status()
    response.json()
    return (time.perf_counter() - started) * 1000


def _keys(users: int) -> dict[str, str]:
    keys = {f"k{i}": f"u{i}" for i in range(users)}
    keys[f"k{_BIG_USER}"] = _BIG_USER
    return keys


def _env(users: int) -> dict[str, str]:
    return {
        "MNEMO_EMBEDDER": "onnx-minilm",
        "MNEMO_LLM_URL": "http://127.0.0.1:9",
        "MNEMO_RATE_LIMIT": "100000",
        "MNEMO_RATE_BURST": "100000",
        "MNEMO_API_KEYS": ",".join(f"{k}:{u}" for k, u in _keys(users).items()),
    }


def _drop_caches() -> None:
    """Empty the kernel's page cache (root only): the next reads come from the disk."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def _rest(
    address: str, keys: Sequence[str], queries: Sequence[str], warm: int, *, cold: bool = False
) -> dict[str, Any]:
    """First search of each key's user on a fresh server (``cold``: with the page cache
    emptied first), then ``warm`` searches."""
    if cold:
        _drop_caches()
    with httpx.Client(base_url=f"http://{address}", timeout=900) as client:
        first = [_search(client, key, queries[i % len(queries)]) for i, key in enumerate(keys)]
        again = [
            _search(client, keys[i % len(keys)], queries[(i * 7 + 3) % len(queries)])
            for i in range(warm)
        ]
    return {"first": first, "warm": again}


def _ws(address: str, keys: Sequence[str], queries: Sequence[str], warm: int) -> dict[str, Any]:
    """Per key: connect, ``ready``, first ``context``; then ``warm`` context requests."""
    first: list[float] = []
    again: list[float] = []
    with ExitStack() as stack:
        sockets = []
        for i, key in enumerate(keys):
            started = time.perf_counter()
            url = f"ws://{address}/ws/bench-{i}"
            auth = {"Authorization": f"Bearer {key}"}
            socket = stack.enter_context(connect(url, compression=None, additional_headers=auth))
            sockets.append(socket)
            json.loads(socket.recv())  # ready
            first.append(_context(socket, queries[i % len(queries)], started))
        for n in range(warm):
            socket = sockets[n % len(sockets)]
            again.append(_context(socket, queries[(n * 7 + 3) % len(queries)], None))
    return {"first": first, "warm": again}


def _context(socket: Any, query: str, started: float | None) -> float:
    begun = time.perf_counter() if started is None else started
    socket.send(json.dumps({"type": "context", "id": "c", "query": query}))
    while True:
        frame = json.loads(socket.recv())
        if frame["type"] == "context":
            return (time.perf_counter() - begun) * 1000
        if frame["type"] == "error":
            raise RuntimeError(frame)


def _stand_in() -> None:
    """The big user's importing server: the real app with a 384-dimensional stand-in."""
    import uvicorn

    from memory.hashing import HashEmbedder
    from server.adapters.ollama import OllamaLlm
    from server.app import create_app
    from server.config import load_settings
    from server.main import build_store

    class StandIn(HashEmbedder):
        @property
        def name(self) -> str:
            return "onnx-minilm"

    settings = load_settings(os.environ)
    embedder = StandIn(384)
    store = build_store(settings, embedder)
    llm = OllamaLlm(settings.llm_url, timeout=settings.llm_timeout)
    app = create_app(settings, llm=llm, store=store, embedder=embedder)
    uvicorn.run(app, host="127.0.0.1", port=settings.port, log_level="warning")


def _big(data_dir: str, records: Sequence[dict[str, Any]], size: int) -> None:
    """Import ``size`` messages for the big user unless ``data_dir`` has them."""
    marker = Path(data_dir) / f"bench-big-{size}"
    if marker.exists():
        return
    lines: list[str] = []
    copy = 0
    while len(lines) < size:  # haystacks share sessions: each copy gets its own ids
        for record in records:
            lines += _turn_lines(record, copy=copy)
            copy += 1
    command = [sys.executable, "-m", "bench.client_search", "--stand-in"]
    with (
        served(_env(0), data_dir=data_dir, command=command) as (address, _),
        httpx.Client(base_url=f"http://{address}", timeout=600) as client,
    ):
        for start in range(0, size, 10_000):
            part = lines[start : min(start + 10_000, size)]
            for attempt in range(5):  # a 503 (the writer slow to ack): again, it is idempotent
                try:
                    _import(client, f"k{_BIG_USER}", part)
                    break
                except httpx.HTTPStatusError:
                    if attempt == 4:
                        raise
    marker.touch()


def _row(samples: Sequence[float]) -> dict[str, float]:
    return {k: round(v, 2) for k, v in percentiles(samples).items()} | {"n": len(samples)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--warm", type=int, default=200)
    parser.add_argument("--big", type=int, default=100_000, help="0: skip")
    parser.add_argument("--big-data", help="keep the big user's data directory here")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument(
        "--cold",
        action="store_true",
        help="empty the page cache before the big user's first search (root)",
    )
    parser.add_argument("--stand-in", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stand_in:
        _stand_in()
        return
    with gzip.open(args.data, "rt") as file:
        records = json.load(file)
    queries = [r["question"] for r in records]
    result: dict[str, Any] = {"setup": {**machine(), "users": args.users, "warm": args.warm}}
    result["setup"]["cold_page_cache"] = args.cold
    if args.users:
        _small(result, args, records, queries)
    if args.big:
        big_dir = args.big_data or tempfile.mkdtemp(prefix="mnemo-client-search-big-")
        _big(big_dir, records, args.big)
        shutil.rmtree(Path(big_dir) / "indexes", ignore_errors=True)
        with served(_env(0), data_dir=big_dir) as (address, _):
            result["rest_big"] = _rest(
                address, [f"k{_BIG_USER}"], queries, args.warm, cold=args.cold
            )
        saved = sorted((Path(big_dir) / "indexes").glob("*.idx"))
        result["setup"]["big_saved_index_bytes"] = sum(p.stat().st_size for p in saved)
        with served(_env(0), data_dir=big_dir) as (address, _):
            big = [f"k{_BIG_USER}"]
            result["rest_big_saved"] = _rest(address, big, queries, args.warm, cold=args.cold)
        with served(_env(0), data_dir=big_dir) as (address, _):
            result["ws_big"] = _ws(address, [f"k{_BIG_USER}"], queries, args.warm)
        result["setup"]["big_messages"] = args.big
    _report(result, args)


def _small(
    result: dict[str, Any],
    args: argparse.Namespace,
    records: Sequence[dict[str, Any]],
    queries: Sequence[str],
) -> None:
    """Import ``args.users`` haystacks, then search them on two fresh servers."""
    keys = [f"k{i}" for i in range(args.users)]
    with tempfile.TemporaryDirectory(prefix="mnemo-client-search-") as tmp:
        env = _env(args.users)
        with (
            served(env, data_dir=tmp) as (address, _),
            httpx.Client(base_url=f"http://{address}", timeout=600) as client,
        ):
            counted = [_import(client, key, _turn_lines(records[i])) for i, key in enumerate(keys)]
        messages, seconds = sum(n for n, _ in counted), sum(s for _, s in counted)
        result["import"] = {"messages": messages, "seconds": round(seconds, 2)}
        result["import"]["messages_per_s"] = round(messages / seconds, 1)
        print(f"import: {result['import']}", flush=True)
        with served(env, data_dir=tmp) as (address, _):
            result["rest_500"] = _rest(address, keys, queries, args.warm)
        with served(env, data_dir=tmp) as (address, _):  # the indexes the last one saved
            result["rest_500_saved"] = _rest(address, keys, queries, args.warm)
        with served(env, data_dir=tmp) as (address, _):
            result["ws_500"] = _ws(address, keys, queries, args.warm)


def _report(result: dict[str, Any], args: argparse.Namespace) -> None:
    setup = result["setup"]
    load = os.getloadavg()
    setup["loadavg_at_end"] = [round(x, 2) for x in load]
    print(
        f"{setup['cores']} cores ({setup['cpu']}), Python {setup['python']}, load average "
        f"{load[0]:.2f} at the end; server in its own process, ONNX MiniLM query embedding"
    )
    if (imported := result.get("import")) is not None:
        print(
            f"import: {imported['messages']} LongMemEval messages of {args.users} users in "
            f"{imported['seconds']} s = {imported['messages_per_s']} messages/s"
        )
    print(f"{'path':<34}{'n':>5}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for name in ("rest_500", "rest_500_saved", "ws_500", "rest_big", "rest_big_saved", "ws_big"):
        if name not in result:
            continue
        for phase in ("first", "warm"):
            row = _row(result[name][phase])
            result[name][f"{phase}_ms"] = row
            label = f"{name} {phase}"
            print(
                f"{label:<34}{row['n']:>5}{row['p50']:>9.1f}{row['p95']:>9.1f}"
                f"{row['p99']:>9.1f}{row['max']:>9.1f}"
            )
            del result[name][phase]
    name = "client_search-cold" if args.cold else "client_search"
    print(f"wrote {write_result(name, result)}")


if __name__ == "__main__":
    main()
