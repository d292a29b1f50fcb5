"""A mnemo cluster on one machine: turns/s and ``ack`` latency through HAProxy against 1, 2
and 3 nodes on an S3-compatible server, and what a dead node's users wait.

    python -m bench.cluster [--sessions 200] [--rates 50,100,200] [--seconds 20]
                            [--journal bucket|volume]

Everything is real and local: moto's S3 server (one process), ``mnemo serve`` nodes
(``MNEMO_NODE``, hash embedder, the journal in the bucket), HAProxy from
``deploy/haproxy.cfg`` with the map ``mnemo cluster map`` writes. ``--sessions``
users each hold one WebSocket session through the proxy and send turns at ``--rates``
turns/s in total; each run reports turns/s achieved and ``turn`` → ``ack`` p50/p99.
The same load runs against one server that is not a cluster node (its journal a local
file, its tables in the same bucket): the difference is what the journal in the object
store costs an ``ack``. With 2 or 3 nodes, one is then killed with ``kill -9``: the
time until every one of its users is served again, and each moved user's first search
(a load from the object store) after it. ``--journal volume`` keeps the cluster's
journal on a directory the nodes share (``MNEMO_JOURNAL_DIR``; here one of this
machine's disk, standing in for a replicated volume) instead of the bucket. Writes
``bench/results/cluster.json`` (``cluster-volume.json``).
Everything shares this machine's cores, which the result names.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect

from bench.common import free_port, machine, percentiles, write_result
from testing.deploy import config_for_test, haproxy_env, mnemo_map
from testing.s3_server import bucket_client, moto_server

_HAPROXY = "/usr/sbin/haproxy"
_BUCKET = "mnemo-bench"


def _wait(url: str, process: subprocess.Popen[bytes], within: float = 60) -> None:
    deadline = time.monotonic() + within
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"{process.args!r} exited") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not answer in {within} s") from None
            time.sleep(0.1)


@contextlib.contextmanager
def _node(env: dict[str, str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve"],
        env={**os.environ, **env, "MNEMO_PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(f"http://127.0.0.1:{port}/healthz", process)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait(10)


@contextlib.contextmanager
def _proxy(map_file: Path, ports: list[int], work: Path) -> Iterator[str]:
    port = free_port()
    config = work / "haproxy.cfg"
    config.write_text(config_for_test(map_file, port, ports))
    process = subprocess.Popen(
        [_HAPROXY, "-db", "-f", str(config)],
        env=haproxy_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(3)  # health checks: inter 1 s, rise 2
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


class _Load:
    """One session per user through the proxy, turns spread evenly at ``rate`` per s."""

    def __init__(self, address: str, keys: list[str]) -> None:
        self.address, self.keys = address, keys
        self.acks: list[float] = []
        self.errors = 0

    async def run(self, rate: float, seconds: float) -> dict[str, Any]:
        self.acks, self.errors = [], 0
        start = time.monotonic()
        await asyncio.gather(
            *(self._session(n, key, rate, start, seconds) for n, key in enumerate(self.keys))
        )
        took = time.monotonic() - start
        return {
            "offered_per_s": rate,
            "turns_per_s": round(len(self.acks) / took, 1),
            "ack_ms": {k: round(v, 1) for k, v in percentiles(self.acks, (50, 99)).items()},
            "errors": self.errors,
        }

    async def _session(self, n: int, key: str, rate: float, start: float, seconds: float) -> None:
        every = len(self.keys) / rate
        due = start + (n / len(self.keys)) * every
        url = f"ws://{self.address}/ws/bench"
        try:
            async with connect(
                url, open_timeout=30, additional_headers={"Authorization": f"Bearer {key}"}
            ) as ws:
                json.loads(await ws.recv())  # ready
                sent = 0
                while due < start + seconds:
                    await asyncio.sleep(max(0.0, due - time.monotonic()))
                    sent += 1
                    began = time.monotonic()
                    await ws.send(
                        json.dumps(
                            {"type": "turn", "id": f"t{sent}", "user": f"u{n} t{sent}"}
                            | {"assistant": "ok"}
                        )
                    )
                    while (answer := json.loads(await ws.recv()))["type"] not in ("ack", "error"):
                        pass
                    if answer["type"] == "ack":
                        self.acks.append((time.monotonic() - began) * 1000)
                    else:
                        self.errors += 1
                    due += every
        except Exception:
            self.errors += 1


def _answer(address: str, key: str) -> httpx.Response:
    return httpx.get(
        f"http://{address}/memory/long-term",
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )


def _home(address: str, key: str) -> str:
    """The node that served the user (a cluster node names itself), or ""."""
    answer = _answer(address, key)
    return answer.headers.get("Mnemo-Node", "") if answer.status_code == 200 else ""


def _served(address: str, key: str) -> bool:
    """Whether the user is served (by a cluster node or a single server, which names no
    node)."""
    return _answer(address, key).status_code == 200


def _first_search_ms(address: str, key: str) -> float:
    began = time.monotonic()
    answer = httpx.get(
        f"http://{address}/memory/search",
        params={"q": "what did I say", "k": "5"},
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )
    answer.raise_for_status()
    return (time.monotonic() - began) * 1000


def _start(
    stack: contextlib.ExitStack,
    work: Path,
    s3: Mapping[str, str],
    keys: Mapping[str, str],
    nodes: int,
    *,
    cluster: bool,
    extra: Mapping[str, str] | None = None,
) -> tuple[dict[str, subprocess.Popen[bytes]], str]:
    """``nodes`` servers on the bucket (cluster nodes when ``cluster``) behind HAProxy,
    with the shard map of ``keys``; their processes by name, and the proxy's address."""
    map_file = work / "shards.map"
    made = mnemo_map(map_file, dict(keys))
    if made.returncode:
        raise RuntimeError(made.stderr)
    ports = [free_port() for _ in range(3)]
    running: dict[str, subprocess.Popen[bytes]] = {}
    for n in range(nodes):
        name = f"n{n + 1}"
        env = {
            **s3,
            "MNEMO_DATA_DIR": f"s3://{_BUCKET}/data",
            "MNEMO_LOCAL_DIR": str(work / name),
            "MNEMO_API_KEYS": ",".join(f"{k}:{u}" for k, u in keys.items()),
            "MNEMO_EMBEDDER": "hash",
            "MNEMO_PRELOAD_EMBEDDER": "false",
            "MNEMO_LLM_URL": f"http://127.0.0.1:{free_port()}",
            "MNEMO_LLM_TIMEOUT": "1",
            **(extra or {}),
        }
        if cluster:
            env["MNEMO_NODE"] = name
        running[name] = stack.enter_context(_node(env, ports[n]))
    return running, stack.enter_context(_proxy(map_file, ports, work))


def run_cluster(
    nodes: int,
    sessions: int,
    rates: list[float],
    seconds: float,
    cluster: bool,
    *,
    volume: bool = False,
) -> dict[str, Any]:
    """``volume``: the cluster's journal on a directory every node shares
    (``MNEMO_JOURNAL_DIR``) instead of in the bucket."""
    keys = {f"key-{n}": f"user-{n}" for n in range(sessions)}
    with (
        tempfile.TemporaryDirectory() as tmp,
        moto_server(_BUCKET) as s3,
        contextlib.ExitStack() as stack,
    ):
        extra = {"MNEMO_JOURNAL_DIR": str(Path(tmp) / "journal")} if volume and cluster else {}
        running, address = _start(stack, Path(tmp), s3, keys, nodes, cluster=cluster, extra=extra)
        # Every user's first request takes their shard (a lease, the journal's fence, the
        # tables' latest versions): done before the measurement, as in a running cluster.
        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            assert all(pool.map(lambda key: _served(address, key), keys))
        load = _Load(address, list(keys))
        result: dict[str, Any] = {
            "nodes": nodes,
            "cluster": cluster,
            "journal": "volume" if extra else "bucket" if cluster else "local file",
            "sessions": sessions,
            "runs": [asyncio.run(load.run(rate, seconds)) for rate in rates],
        }
        if nodes > 1:
            homes = {key: _home(address, key) for key in keys}
            victim = "n1"
            moved = [key for key, home in homes.items() if home == victim]
            running[victim].kill()
            killed = time.monotonic()

            def back(key: str) -> float:
                # As its clients would: retry every 0.1 s until served, all at once.
                while not _served(address, key):
                    time.sleep(0.1)
                return time.monotonic() - killed

            with concurrent.futures.ThreadPoolExecutor(len(moved) or 1) as pool:
                waited = list(pool.map(back, moved))
            result["kill_9"] = {
                "users_moved": len(moved),
                "seconds_until_served": {
                    k: round(v, 2) for k, v in percentiles(waited, (50, 95)).items()
                },
                "first_search_after_move_ms": {
                    k: round(v, 1)
                    for k, v in percentiles([_first_search_ms(address, k) for k in moved]).items()
                },
                "messages_per_moved_user": round(
                    2 * sum(r["turns_per_s"] for r in result["runs"]) * seconds / sessions
                ),
            }
        return result


def fetch_seconds(megabytes: int, tries: int = 3) -> dict[str, Any]:
    """How long a node takes to fetch a saved index of ``megabytes`` from the bucket: the
    same download (``Objects.download``: 8 MB ranges, 8 at a time) a node does when it
    takes a user whose index is there, on a file of random bytes."""
    from server.cluster.objects import Objects

    with tempfile.TemporaryDirectory() as tmp, moto_server(_BUCKET) as s3:
        source = Path(tmp) / "index.idx"
        source.write_bytes(os.urandom(megabytes << 20))
        objects = Objects(f"s3://{_BUCKET}/fetch", s3)
        began = time.monotonic()
        asyncio.run(objects.upload("index", source))
        upload = time.monotonic() - began
        took = []
        for n in range(tries):
            target = Path(tmp) / f"fetched{n}.idx"
            began = time.monotonic()
            assert asyncio.run(objects.download("index", target))
            took.append(time.monotonic() - began)
            assert target.stat().st_size == source.stat().st_size
        return {"megabytes": megabytes, "upload_s": round(upload, 2), "fetch_s": took}


_WORDS = (
    "garden river coffee violin market winter bicycle letter mountain kitchen doctor "
    "ticket painting harbor lantern meeting journey pepper orchard theatre museum camera "
    "blanket festival library station recipe tennis sailing marathon"
).split()


def _history(messages: int) -> bytes:
    """``messages`` turns in the import format, a session every 20, texts of varied words."""
    lines = []
    for n in range(messages):
        words = [_WORDS[(n * 7 + k * 13) % len(_WORDS)] for k in range(12)]
        lines.append(
            json.dumps(
                {
                    "kind": "turn",
                    "id": f"h{n}",
                    "session_id": f"s{n // 20}",
                    "speaker": "user" if n % 2 == 0 else "assistant",
                    "role": "user" if n % 2 == 0 else "assistant",
                    "text": f"entry {n}: " + " ".join(words),
                    "at": f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}T12:00:00Z",
                    "turn": n % 20,
                }
            )
        )
    return ("\n".join(lines) + "\n").encode()


def big_user_move(messages: int) -> dict[str, Any]:
    """A user with ``messages`` messages on one of two nodes: imported, saved (in the
    bucket too), then their node killed: how long the other node takes to serve them,
    and their first searches there (the index fetched from the bucket and mapped)."""
    keys = {"key-big": "big"}
    with (
        tempfile.TemporaryDirectory() as tmp,
        moto_server(_BUCKET) as s3,
        contextlib.ExitStack() as stack,
    ):
        running, address = _start(
            stack, Path(tmp), s3, keys, 2, cluster=True, extra={"MNEMO_SAVE_INDEX_AFTER": "5"}
        )
        auth = {"Authorization": "Bearer key-big"}
        began = time.monotonic()
        for first in range(0, messages, 5000):
            body = _history(min(5000, messages - first))
            body = body.replace(b'"id": "h', f'"id": "b{first}-'.encode())
            answer = httpx.post(
                f"http://{address}/memory/import",
                content=body,
                headers={**auth, "Content-Type": "application/x-ndjson"},
                timeout=600,
            )
            answer.raise_for_status()
        imported = time.monotonic() - began
        home = _home(address, "key-big")
        bucket = bucket_client(s3)
        deadline = time.monotonic() + 600
        size = 0
        while not size:  # saved, then uploaded
            if time.monotonic() > deadline:
                raise RuntimeError("the index did not reach the bucket in 10 minutes")
            time.sleep(1)
            listed = bucket.list_objects_v2(Bucket=_BUCKET, Prefix="data/cluster/indexes/")
            size = max(
                (o["Size"] for o in listed.get("Contents", []) if "." in o["Key"]), default=0
            )
        running[home].kill()
        killed = time.monotonic()
        while not _served(address, "key-big"):
            time.sleep(0.1)
        served = time.monotonic() - killed
        searches = [_first_search_ms(address, "key-big") for _ in range(21)]
        return {
            "messages": messages,
            "import_s": round(imported, 1),
            "index_mb_in_bucket": round(size / (1 << 20), 1),
            "served_again_s": round(served, 2),
            "first_search_ms": round(searches[0], 1),
            "next_20_searches_ms": {k: round(v, 1) for k, v in percentiles(searches[1:]).items()},
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--rates", default="50,100,200")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--nodes", default="1,2,3")
    parser.add_argument(
        "--journal",
        choices=("bucket", "volume"),
        default="bucket",
        help="the cluster's journal in the bucket, or on a directory the nodes share "
        "(MNEMO_JOURNAL_DIR; writes cluster-volume.json)",
    )
    parser.add_argument(
        "--fetch-mb",
        type=int,
        default=253,
        help="size of the saved index fetched (253 MB: a 95,395-message user's)",
    )
    parser.add_argument(
        "--big-user",
        type=int,
        default=100_000,
        help="messages of the user moved by kill -9 at the end (0: skip)",
    )
    args = parser.parse_args()
    big = big_user_move(args.big_user) if args.big_user else None
    print(f"a {args.big_user}-message user's move: {big}")
    fetched = fetch_seconds(args.fetch_mb)
    print(f"saved index of {args.fetch_mb} MB from the bucket: {fetched}")
    rates = [float(r) for r in args.rates.split(",")]
    results: list[dict[str, Any]] = []
    plans = [(1, False)] + [(int(n), True) for n in args.nodes.split(",")]
    for nodes, cluster in plans:
        volume = args.journal == "volume"
        result = run_cluster(nodes, args.sessions, rates, args.seconds, cluster, volume=volume)
        results.append(result)
        label = f"{nodes} node{'s' * (nodes > 1)}" + (" (cluster)" if cluster else " (single)")
        for run in result["runs"]:
            print(
                f"{label}: offered {run['offered_per_s']:.0f}/s, achieved "
                f"{run['turns_per_s']}/s, ack p50 {run['ack_ms']['p50']} ms, "
                f"p99 {run['ack_ms']['p99']} ms, errors {run['errors']}"
            )
        if "kill_9" in result:
            print(f"{label}: kill -9 n1: {result['kill_9']}")
    path = write_result(
        "cluster" if args.journal == "bucket" else "cluster-volume",
        {
            "machine": machine(),
            "setup": "moto S3 server, HAProxy 2.6 and every node on this machine's cores; "
            "hash embedder; one WebSocket session per user through the proxy",
            "seconds_per_rate": args.seconds,
            "results": results,
            "saved_index_fetch": fetched,
            "big_user_move": big,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
