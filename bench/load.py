"""Many concurrent sessions against a real server: turns/s, ack and first-delta latency, RSS.

    python -m bench.load [--sessions 1000] [--rate 200] [--chat-rate 20] [--seconds 30]

Starts ``mnemo serve`` in its own process (real LanceDB in a temp dir, hash
embedder) and a fake Ollama (``testing/fake_ollama.py``) in another, which
streams a fixed 8-word reply at once and answers extraction with no facts.
Opens ``--sessions`` WebSocket sessions (one user each), then for
``--seconds`` offers ``--rate`` turns/s and ``--chat-rate`` chats/s spread
evenly over the sessions. Reports turns/s achieved, ``turn`` → ``ack`` and
``chat`` → first ``delta`` p50/p99 (with the server's own split from
``done.usage``: mailbox wait, context build, and the server's overhead: first
``delta`` minus the model's own time to its first chunk, ``model_first_ms``),
errors, and the server's RSS per live actor: with every session connected, and
after the clients left (the actors live on until their idle expiry). Writes
``bench/results/load.json`` and ``bench/results/load.png``. While it measures, the
client runs ahead of the server where allowed (see ``_measuring_priority``).

With ``--consolidate-every SECONDS`` each rate runs twice on fresh servers, quiet and
then with ``bench.consolidation.churn`` in a process of its own during the measurement:
every ``SECONDS`` the next of the first users (one per run) runs ``POST
/memory/consolidation`` on the ``--consolidate-episodes`` episodes it stored before the
load (or, with ``--consolidate-live-store``, stores them during it, right before). The
result goes to ``bench/results/load_consolidation.json`` (issue 20: what consolidation
adds to the chat overhead).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import gc
import json
import math
import multiprocessing
import os
import random
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from bench.common import (
    ADMIN_KEY,
    cpu_seconds,
    histograms,
    load_answer,
    load_server,
    machine,
    percentiles,
    plot_curves,
    rss_kib,
    write_result,
)
from bench.consolidation import ENV, Model, churn, prestore
from bench.idle import idle_actors, live_sessions

_CLIENT_NICE = -5  # see _measuring_priority


class _StoreWatch:
    """Follows ``/ws/tail?kind=store``: how the writers spent their time under the load."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    async def follow(self, address: str) -> None:
        auth = {"Authorization": f"Bearer {ADMIN_KEY}"}
        async with connect(f"ws://{address}/ws/tail?kind=store", additional_headers=auth) as ws:
            async for raw in ws:
                self.events.append(json.loads(raw))

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for writer in ("archive", "table", "working", "facts", "learned"):
            mine = [e["data"] for e in self.events if e["data"].get("writer") == writer]
            flushes = [d for d in mine if "rows" in d and "ms" in d]
            optimizes = [d["ms"] for d in mine if "rows" not in d and "ms" in d]
            out[writer] = {
                "batches": len(flushes),
                "rows_per_batch": percentiles([d["rows"] for d in flushes]),
                "write_ms": percentiles([d["ms"] for d in flushes]),
                "optimizes": len(optimizes),
                "optimize_ms": percentiles(optimizes),
            }
        return out


class _Tally:
    def __init__(self) -> None:
        self.ack_ms: list[float] = []
        self.first_delta_ms: list[float] = []
        self.queued_ms: list[float] = []
        self.context_ms: list[float] = []
        #: First delta minus the model's own time to its first chunk (``model_first_ms``).
        self.overhead_ms: list[float] = []
        self.errors: dict[str, int] = {}
        self.turns = 0

    def error(self, code: str) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1


class _Session:
    """One connection; a reader task matches answers to the requests by id."""

    def __init__(self, ws: ClientConnection, tally: _Tally) -> None:
        self.ws, self.tally = ws, tally
        self.sent: dict[str, float] = {}
        self.streaming: dict[str, float] = {}
        self.n = 0

    async def read(self) -> None:
        async for raw in self.ws:
            frame = json.loads(raw)
            kind, ident = frame["type"], frame.get("id")
            started = self.sent.get(ident) if ident else None
            if kind == "ack" and started is not None:
                self.tally.ack_ms.append((time.perf_counter() - started) * 1000)
                self.tally.turns += 1
                del self.sent[ident]
            elif kind == "delta" and started is not None and ident not in self.streaming:
                self.streaming[ident] = first = (time.perf_counter() - started) * 1000
                self.tally.first_delta_ms.append(first)
            elif kind == "done" and ident is not None:
                usage = frame["usage"]
                self.tally.queued_ms.append(usage["queued_ms"])
                self.tally.context_ms.append(usage["context_ms"])
                if ident in self.streaming:
                    first = self.streaming.pop(ident)
                    self.tally.overhead_ms.append(first - usage["model_first_ms"])
                self.sent.pop(ident, None)
            elif kind == "error":
                self.tally.error(frame.get("code", "?"))
                self.sent.pop(ident, None)

    async def turn(self) -> None:
        self.n += 1
        ident = f"t{self.n}"
        self.sent[ident] = time.perf_counter()
        text = f"turn {self.n}: I walked the dog and then read a book about {random.random():.6f}"
        await self.ws.send(
            json.dumps({"type": "turn", "id": ident, "user": text, "assistant": "Nice."})
        )

    async def chat(self) -> None:
        self.n += 1
        ident = f"c{self.n}"
        self.sent[ident] = time.perf_counter()
        # A new text each time: nothing the server caches by text helps it.
        content = f"What should I read next, after the book about {random.random():.6f}?"
        await self.ws.send(json.dumps({"type": "chat", "id": ident, "content": content}))


def _measuring_priority() -> str:
    """Run this process, the measuring client, ahead of the server on the CPUs: real-time
    round robin if allowed, else nice ``_CLIENT_NICE``, else as is; says which.

    Client and server share this machine. Woken by a frame, the client was put on the
    CPU of the server that sent it and could wait there until the server's work after
    the send was done: at 50 turns/s, 1.3 ms p50 from the server's write to the
    client's read (0.7 ms p50, 2.2 ms p90 at nice -5), and the client-measured
    overhead p99 was 5.1-5.5 ms while the server's own was at most 2.5-4 ms. In a toy
    pair of processes, one replying and then busy for 2 ms, the other waited 1.3-2 ms,
    and 26-230 µs at nice -5 or round robin. That wait is the client's, not the
    server's; a remote client would not have it. Raised after the server started, so
    the server keeps the usual priority, and dropped after the load.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
        return "real-time round robin"
    except PermissionError:
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, 0, _CLIENT_NICE)
        return f"nice {_CLIENT_NICE}"
    except PermissionError:
        return "normal (could not raise it: its wake-ups may wait for the server)"


def _normal_priority() -> None:
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    os.setpriority(os.PRIO_PROCESS, 0, 0)


def _processes(server: int, fake: int) -> dict[str, int]:
    return {"server": server, "fake_ollama": fake, "client": os.getpid()}


def _metrics_text(address: str) -> str:
    request = urllib.request.Request(
        f"http://{address}/metrics", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        text: str = response.read().decode()
    return text


def _server_histograms(address: str) -> dict[str, dict[str, float]]:
    """From ``/metrics``: the server's own view of its event-loop lag, turn → ack, and its
    overhead on a chat's first delta (frame read to delta written, less the model's
    wait), which leaves out both machines' network stacks and the client's own delays."""
    text = _metrics_text(address)
    return {
        name: _bucket_quantiles(text, f"mnemo_{name}")
        for name in ("event_loop_lag_ms", "turn_ack_ms", "chat_overhead_ms")
    }


def _gc_pauses(text: str) -> dict[str, dict[str, float]]:
    """``mnemo_gc_pause_ms`` by generation: collections, total ms, and per bucket bound
    the collections at or under it."""
    out = histograms(text, "mnemo_gc_pause_ms", "generation")
    for row in out.values():
        row["count"], row["ms"] = row.get("count", 0.0), row.pop("sum", 0.0)
    return out


def _gc_during(before: str, after: str) -> dict[str, dict[str, float]]:
    """Collections between two scrapes, by generation: how many, their total ms, and the
    smallest bucket bound that holds the longest."""
    start, end = _gc_pauses(before), _gc_pauses(after)
    out = {}
    for generation, row in end.items():
        was = start.get(generation, {})
        diff = {k: v - was.get(k, 0.0) for k, v in row.items()}
        bounds = sorted(
            (float(k[3:]), v) for k, v in diff.items() if k.startswith("le_") and k != "le_+Inf"
        )
        longest = next((b for b, n in bounds if n >= diff.get("count", 0.0)), float("inf"))
        out[generation] = {
            "collections": diff.get("count", 0.0),
            "total_ms": round(diff.get("ms", 0.0), 1),
            "longest_le_ms": longest,
        }
    return out


def _bucket_quantiles(text: str, series: str) -> dict[str, float]:
    """A Prometheus histogram as bucket bounds: the smallest bound under which 50 % / 99 %
    of the samples fall."""
    buckets = []
    for line in text.splitlines():
        if line.startswith(series + "_bucket{"):
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((float(bound), float(line.rsplit(" ", 1)[1])))
    total = buckets[-1][1] if buckets else 0.0
    out = {"samples": total}
    for name, share in (("p50_le_ms", 0.5), ("p99_le_ms", 0.99)):
        out[name] = next((b for b, n in buckets if n >= share * total), float("nan"))
    return out


class _ClientGc:
    """This process's own garbage collections while it measures: each pause would delay
    the frames it timestamps (up to 64 ms seen), so collection is off during the load
    and any that still runs is reported."""

    def __init__(self) -> None:
        self.pauses_ms: list[float] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses_ms.append((time.perf_counter() - self._started) * 1000)

    def summary(self) -> dict[str, float]:
        return {
            "collections": len(self.pauses_ms),
            "total_ms": sum(self.pauses_ms),
            "max_ms": max(self.pauses_ms, default=0.0),
        }


async def _drive(address: str, pid: int, fake_pid: int, args: argparse.Namespace) -> dict[str, Any]:
    tally = _Tally()
    watch = _StoreWatch()
    watcher = asyncio.create_task(watch.follow(address))
    rss_empty = rss_kib(pid)
    # bench.mcp runs this driver beside busy MCP sessions: the idle-actor measurement
    # waits for a quiet server, which it then never sees, so it is skipped there.
    idle = await idle_actors(address, pid, args.sessions) if getattr(args, "idle", True) else None
    started = time.perf_counter()
    sessions: list[_Session] = []
    connect_failures = 0

    async def open_one(i: int) -> None:
        nonlocal connect_failures
        try:
            ws = await connect(
                f"ws://{address}/ws/load{i}",
                max_queue=None,
                open_timeout=60,
                additional_headers={"Authorization": f"Bearer k{i}"},
            )
            await ws.recv()  # ready
            sessions.append(_Session(ws, tally))
        except (OSError, TimeoutError) as exc:
            connect_failures += 1
            tally.error(f"connect: {type(exc).__name__}")

    gate = asyncio.Semaphore(50)

    async def gated(i: int) -> None:
        async with gate:
            await open_one(i)

    await asyncio.gather(*(gated(i) for i in range(args.sessions)))
    connect_seconds = time.perf_counter() - started
    readers = [asyncio.create_task(s.read()) for s in sessions]
    await asyncio.sleep(2)
    rss_connected = rss_kib(pid)
    live_connected = live_sessions(address)

    # Offered load: one tick every 1/rate s picks the next session round robin.
    async def offer(rate: float, action: str) -> None:
        if rate <= 0 or not sessions:
            return
        interval, next_at, i = 1.0 / rate, time.perf_counter(), 0
        deadline = next_at + args.seconds
        while next_at < deadline:
            session = sessions[i % len(sessions)]
            i += 1
            await (session.turn() if action == "turn" else session.chat())
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))

    churns = None
    if args.consolidating:  # started before the priority is raised: it keeps the usual one
        spawn = multiprocessing.get_context("spawn")
        churns = concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn)
        users = math.ceil(args.seconds / args.consolidate_every)
        if not args.consolidate_live_store:
            made = churns.submit(prestore, address, users, args.consolidate_episodes)
            await asyncio.wrap_future(made)
    client_gc = _ClientGc()
    client_priority = _measuring_priority()
    gc.collect()
    gc.disable()  # a few minutes of cyclic garbage is cheaper than pauses in the timings
    gc.callbacks.append(client_gc)
    load_started = time.perf_counter()
    window = [time.time()]  # wall clock: what runs beside the load in other processes
    cpu_before = {name: cpu_seconds(p) for name, p in _processes(pid, fake_pid).items()}
    metrics_before = _metrics_text(address)
    consolidation = None
    if churns is not None:
        c = (users, args.consolidate_every, args.consolidate_episodes, args.seconds)
        consolidation = churns.submit(churn, address, *c, args.consolidate_live_store)
    await asyncio.gather(offer(args.rate, "turn"), offer(args.chat_rate, "chat"))
    window.append(time.time())
    await asyncio.sleep(3)  # answers in flight
    load_seconds = time.perf_counter() - load_started - 3
    cpu = {
        name: (cpu_seconds(p) - cpu_before[name]) / (load_seconds + 3)
        for name, p in _processes(pid, fake_pid).items()
    }
    gc.callbacks.remove(client_gc)
    gc.enable()
    _normal_priority()  # the next run's server starts at the usual one
    unanswered = sum(len(s.sent) for s in sessions)
    server = _server_histograms(address)
    gc_pauses = _gc_during(metrics_before, _metrics_text(address))
    for s in sessions:
        await s.ws.close()
    for task in readers:
        task.cancel()
    await asyncio.sleep(3)
    rss_idle = rss_kib(pid)
    live_idle = live_sessions(address)
    watcher.cancel()
    if churns is not None and consolidation is not None:
        consolidated = await asyncio.wrap_future(consolidation)
        churns.shutdown()
    return {
        "consolidation": consolidated if churns is not None else None,
        "writers": watch.summary(),
        "server_side": server,
        "sessions": args.sessions,
        "connected": len(sessions),
        "connect_seconds": connect_seconds,
        "load_window_unix": window,
        "offered": {
            "turns_per_s": args.rate,
            "chats_per_s": args.chat_rate,
            "seconds": args.seconds,
        },
        "turns_per_s": tally.turns / load_seconds,
        "turn_ack_ms": percentiles(tally.ack_ms),
        "chat_first_delta_ms": percentiles(tally.first_delta_ms),
        "chat_queued_ms": percentiles(tally.queued_ms),
        "chat_context_ms": percentiles(tally.context_ms),
        "chat_overhead_ms": percentiles(tally.overhead_ms),
        "errors": tally.errors,
        "unanswered": unanswered,
        "rss_kib": {"empty": rss_empty, "connected": rss_connected, "idle_actors": rss_idle},
        "live_actors": {"connected": live_connected, "after_clients_left": live_idle},
        "rss_per_connected_session_kib": (rss_connected - rss_empty) / max(live_connected, 1),
        "cpu_cores_busy": cpu,
        "gc_during_load": gc_pauses,
        "client_gc_during_load": client_gc.summary(),
        "client_priority": client_priority,
        "idle_actors": idle,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument(
        "--rates", default="50,100,150,200", help="turns/s offered in total, one run each"
    )
    parser.add_argument(
        "--chat-share", type=float, default=0.1, help="chats/s offered per turn/s offered"
    )
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    parser.add_argument(
        "--consolidate-every", type=float, default=0.0, help="seconds; 0: no consolidation"
    )
    parser.add_argument("--consolidate-episodes", type=int, default=20, help="per run")
    parser.add_argument("--consolidate-live-store", action="store_true")
    parser.add_argument(
        "--name", help="bench/results/<name>.json (default: load, or load_consolidation)"
    )
    args = parser.parse_args()
    runs = []
    for rate in (float(r) for r in args.rates.split(",")):
        args.rate, args.chat_rate = rate, rate * args.chat_share
        for consolidating in (False, True) if args.consolidate_every > 0 else (False,):
            args.consolidating = consolidating
            run = _one_run(args)
            _print(run)
            runs.append(run)
    result = {"runs": runs, "setup": {**machine(), "embedder": "hash", "fake_ollama": "instant"}}
    default = "load_consolidation" if args.consolidate_every > 0 else "load"
    path = write_result(args.name or default, result)
    print(f"wrote {path}")
    if args.consolidate_every > 0:
        return
    plotted = plot_curves(
        "load",
        "mnemo bench.load: 1000 sessions, offered turn rate",
        "turns/s offered",
        [r["offered"]["turns_per_s"] for r in runs],
        {
            "turn → ack p50": [r["turn_ack_ms"]["p50"] for r in runs],
            "turn → ack p99": [r["turn_ack_ms"]["p99"] for r in runs],
            "chat → first delta p50": [r["chat_first_delta_ms"]["p50"] for r in runs],
            "chat → first delta p99": [r["chat_first_delta_ms"]["p99"] for r in runs],
        },
    )
    print(f"wrote {plotted}" if plotted else "no plot: pip install -e '.[bench]' for matplotlib")


def _one_run(args: argparse.Namespace) -> dict[str, Any]:
    """A fresh fake Ollama and server, the sessions, the offered load; the result."""
    env = dict(item.split("=", 1) for item in args.env)
    model: Callable[[str, dict[str, Any]], Any] = load_answer
    if args.consolidate_every > 0:  # the same server and model, quiet or consolidating
        env, model = {**ENV, **env}, Model()
    # Twice as many users as sessions: the idle-actor measurement's second batch.
    with load_server(2 * args.sessions, env, model) as (address, pid, fake_pid):
        return asyncio.run(_drive(address, pid, fake_pid, args))


def _print(r: dict[str, Any]) -> None:
    o, c = r["offered"], r["consolidation"]
    if c is not None:
        print(
            f"with consolidation: {c['runs']} runs of {c['episodes_per_run']} episodes"
            f" every {c['every_s']:g} s: {c['episodes']} episodes, {c['groups']} groups,"
            f" +{c['facts_added']} facts, +{c['rules_added']} rules; run ms p50"
            f" {c['run_ms']['p50']:.0f} p95 {c['run_ms']['p95']:.0f}, storing the episodes"
            f" ms p50 {c['store_ms_per_run']['p50']:.0f}"
            f" ({'during' if c['stored_during_the_load'] else 'before'} the load)"
        )
    print(
        f"{r['connected']}/{r['sessions']} sessions (one user each) connected in "
        f"{r['connect_seconds']:.1f} s; offered {o['turns_per_s']:.0f} turns/s + "
        f"{o['chats_per_s']:.0f} chats/s for {o['seconds']:.0f} s"
    )
    print(f"  turns/s achieved            {r['turns_per_s']:8.1f}")
    for name in (
        "turn_ack_ms",
        "chat_first_delta_ms",
        "chat_overhead_ms",
        "chat_queued_ms",
        "chat_context_ms",
    ):
        row = r[name]
        print(f"  {name:<27} p50 {row['p50']:8.2f}  p99 {row['p99']:8.2f}  max {row['max']:8.2f}")
    print(f"  errors                      {r['errors'] or 0}  unanswered {r['unanswered']}")
    busy = ", ".join(f"{name} {cores:.2f}" for name, cores in r["cpu_cores_busy"].items())
    print(f"  cores busy under the load   {busy} (of {os.cpu_count()})")
    for generation, g in sorted(r["gc_during_load"].items()):
        print(
            f"  gc generation {generation} under load  {g['collections']:.0f} collections,"
            f" {g['total_ms']:.0f} ms in all, longest ≤ {g['longest_le_ms']} ms"
        )
    c = r["client_gc_during_load"]
    print(
        f"  client's own gc under load  {c['collections']:.0f} collections,"
        f" {c['total_ms']:.0f} ms in all, longest {c['max_ms']:.1f} ms"
    )
    print(f"  client priority             {r['client_priority']}")
    for name, h in r["server_side"].items():
        print(
            f"  server {name:<20} p50 ≤ {h['p50_le_ms']} ms, p99 ≤ {h['p99_le_ms']} ms"
            f" ({h['samples']:.0f} samples, whole run)"
        )
    for name, w in r["writers"].items():
        if not w["batches"] and not w["optimizes"]:
            continue
        print(
            f"  {name} writer: {w['batches']} batches, rows p50 {w['rows_per_batch']['p50']:.0f}"
            f" max {w['rows_per_batch']['max']:.0f}, write ms p50 {w['write_ms']['p50']:.1f}"
            f" p99 {w['write_ms']['p99']:.1f}; {w['optimizes']} optimizes,"
            f" ms p50 {w['optimize_ms']['p50']:.0f} max {w['optimize_ms'].get('max', 0):.0f}"
        )
    print(
        f"  RSS KiB: empty {r['rss_kib']['empty']}, connected {r['rss_kib']['connected']}, "
        f"idle actors {r['rss_kib']['idle_actors']}"
    )
    idle = r["idle_actors"]
    print(
        f"  RSS per idle actor {idle['rss_per_actor_kib']:.1f} KiB for the first"
        f" {idle['actors']} (one turn each, clients gone; before any load),"
        f" {idle['rss_per_actor_kib_marginal']:.1f} KiB for the next"
        f" {idle['second_batch_actors']}; per connected session under load"
        f" {r['rss_per_connected_session_kib']:.1f} KiB"
    )


if __name__ == "__main__":
    main()
