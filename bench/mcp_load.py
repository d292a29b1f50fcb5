"""``bench.mcp``'s second part: MCP sessions held open beside ``bench.load`` on one server.

For each embedder of ``--sessions-embedders`` and each count N of ``--sessions``: a fresh
``mnemo serve`` (``bench.common.load_server``, with that embedder, fake Ollama in its
own process) on a copy of a data directory where each
of N agent users (``a<i>``, keys ``ka<i>``) holds ``--agent-facts`` facts, written
through the store adapter before start. N MCP sessions, one per agent user, each on its
own connection pool, are opened (20 at a time) and each makes one ``memory_search``
(its user's first: not timed with the rest); then every ``--every`` seconds (at a random
phase) each calls ``memory_search`` (3 of 5 calls), ``memory_context`` (1 of 5) or
``memory_store_fact`` (1 of 5). Beside them, in a process of its own, ``bench.load``'s
own driver (``bench.load._drive``: ``--load-sessions`` WebSocket sessions, one user each,
offered ``--load-rate`` turns/s and a tenth as many chats/s for ``--load-seconds``, its
client at real-time priority where allowed) runs against the same server; its idle-actor
measurement is skipped (it waits for a quiet server, which busy MCP sessions never
leave). The MCP calls counted are those that started inside the load's offered window.

``bench.load`` reports figures but judges none; the targets judged here are this bench's
(flags): no errors and nothing unanswered, turns/s at least 98 % of those offered,
``turn`` → ``ack`` p99 ≤ ``--ack-p99-ms`` (50) and a chat's overhead on its first
``delta`` p99 ≤ ``--overhead-p99-ms`` (25): a few times what ``bench.load`` recorded on a
quieter machine (``bench/results/load.json``: ack p99 10-28 ms, overhead p99 5-7 ms), as
this 2-core machine is shared; the run with no MCP session is the load alone, to compare
with. And the MCP side: every session opened, no call failed.

Sessions call every 4 s by default: at 5 s a few of them break (``httpx2.ReadError``
in the SDK's POST, which ends the session) as uvicorn's keep-alive timeout (5 s, the
default ``mnemo serve`` keeps) closes the idle connection just as httpx's pool (whose
idle expiry is also 5 s) reuses it; 2 of 40 sessions in 60 s here, none at 4 s or 6 s.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import gc
import multiprocessing
import os
import random
import shutil
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from bench.common import cpu_seconds, load_server, percentiles, plot_curves, rss_kib
from bench.mcp_data import (
    SCOPES,
    fact_text,
    mcp_session,
    prompt,
    question,
    seed,
    server_tool_ms,
    timed_call,
)

__all__ = ["print_sessions", "sessions_sweep"]

_TOOLS = ("memory_search",) * 3 + ("memory_context", "memory_store_fact")


def _load(address: str, pid: int, fake_pid: int, params: dict[str, Any]) -> dict[str, Any]:
    """``bench.load``'s driver against a running server (in a process of its own)."""
    from bench.load import _drive

    args = argparse.Namespace(consolidating=False, idle=False, **params)
    result: dict[str, Any] = asyncio.run(_drive(address, pid, fake_pid, args))
    return result


def _arguments(tool: str, rng: random.Random) -> dict[str, Any]:
    if tool == "memory_search":
        return {"query": question(rng)}
    if tool == "memory_context":
        return {"trigger_prompt": prompt(rng), "butler": rng.choice(SCOPES)}
    subject, predicate, _, content = fact_text(rng)
    return {"subject": subject.lower(), "predicate": predicate, "content": content}


class _Countdown:
    """Set once ``count`` tasks have each said ``done`` (at once when ``count`` is 0)."""

    def __init__(self, count: int) -> None:
        self.left, self.event = count, asyncio.Event()
        if not count:
            self.event.set()

    def done(self) -> None:
        self.left -= 1
        if not self.left:
            self.event.set()


class _Agents:
    """N MCP sessions: opened (``opened``); after ``go``, each one's first call (``first``);
    then a call every ``every`` seconds until ``stop``."""

    def __init__(self, address: str, count: int, every: float) -> None:
        self.address, self.count, self.every = address, count, every
        self.open_ms: list[float] = []
        self.first_ms: list[float] = []
        self.failures: list[str] = []
        #: (wall-clock start, tool, ms, error or None) of every call after the first.
        self.calls: list[tuple[float, str, float, str | None]] = []
        self.opened, self.first = _Countdown(count), _Countdown(count)
        self.go, self.stop = asyncio.Event(), asyncio.Event()
        self._gate = asyncio.Semaphore(20)

    async def run(self, i: int) -> None:
        try:
            await self._run(i)
        except Exception as exc:  # a session breaking (or its ending) counts, the rest go on
            when = "ending" if self.stop.is_set() else "session"
            leaf: BaseException = exc
            while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
                leaf = leaf.exceptions[0]  # the SDK's task groups wrap what went wrong
            self.failures.append(f"{when}: {type(leaf).__name__}")

    async def _run(self, i: int) -> None:
        rng = random.Random(i)
        async with AsyncExitStack() as stack:
            try:
                async with self._gate:
                    began = time.perf_counter()
                    session = await stack.enter_async_context(mcp_session(self.address, f"ka{i}"))
                    self.open_ms.append((time.perf_counter() - began) * 1000)
            except Exception as exc:
                self.failures.append(f"open: {type(exc).__name__}")
                self.opened.done()
                self.first.done()
                return
            self.opened.done()
            await self.go.wait()
            async with self._gate:  # the user's first search loads its index
                took, error = await timed_call(
                    session, "memory_search", _arguments("memory_search", rng)
                )
            self.first_ms.append(took)
            self.failures += [f"first call: {error}"] if error else []
            self.first.done()
            wait = rng.uniform(0, self.every)
            while not await self._stopped_within(wait):
                tool = rng.choice(_TOOLS)
                at, began = time.time(), time.perf_counter()
                took, error = await timed_call(session, tool, _arguments(tool, rng))
                self.calls.append((at, tool, took, error))
                wait = self.every - (time.perf_counter() - began)

    async def _stopped_within(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self.stop.wait(), max(seconds, 0.0))
        except TimeoutError:
            return False
        return True


async def _beside(
    address: str, pid: int, fake_pid: int, count: int, args: argparse.Namespace
) -> dict[str, Any]:
    agents = _Agents(address, count, args.every)
    load_before = os.getloadavg()
    rss_before = rss_kib(pid)
    started = time.perf_counter()
    tasks = [asyncio.create_task(agents.run(i)) for i in range(count)]
    await agents.opened.event.wait()
    open_seconds = time.perf_counter() - started
    await asyncio.sleep(2)
    rss_open = rss_kib(pid)
    agents.go.set()
    await agents.first.event.wait()
    await asyncio.sleep(2)
    rss_first = rss_kib(pid)
    params = {
        "sessions": args.load_sessions,
        "rate": args.load_rate,
        "chat_rate": args.load_rate * 0.1,
        "seconds": args.load_seconds,
    }
    tools_before = server_tool_ms(address)
    gc.collect()
    gc.disable()  # as bench.load's client: no collector pauses in the timings
    cpu_before, began = cpu_seconds(os.getpid()), time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(
        1, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        load = await asyncio.wrap_future(pool.submit(_load, address, pid, fake_pid, params))
    cpu = (cpu_seconds(os.getpid()) - cpu_before) / (time.perf_counter() - began)
    gc.enable()
    tools_after = server_tool_ms(address)
    rss_end = rss_kib(pid)
    agents.stop.set()
    _, late = await asyncio.wait(tasks, timeout=60) if tasks else (set(), set())
    for task in late:  # a call still unanswered a minute after the load
        task.cancel()
    await asyncio.gather(*late, return_exceptions=True)
    start, end = load["load_window_unix"]
    during = [c for c in agents.calls if start <= c[0] <= end]
    errors: dict[str, int] = {}
    for *_, error in during:
        if error:
            errors[error] = errors.get(error, 0) + 1
    by_tool = {
        tool: {
            k: round(v, 3) for k, v in percentiles([c[2] for c in during if c[1] == tool]).items()
        }
        | {"n": sum(1 for c in during if c[1] == tool)}
        for tool in sorted(set(_TOOLS))
    }
    return {
        "mcp_sessions": count,
        # The machine is shared: ``uptime``'s load averages (1, 5, 15 min) around the run.
        "load_average_1min_before": load_before[0],
        "load_averages_before": [round(x, 2) for x in load_before],
        "load_averages_after": [round(x, 2) for x in os.getloadavg()],
        "mcp_opened": len(agents.open_ms),
        "mcp_open_seconds": round(open_seconds, 2),
        "mcp_initialize_ms": percentiles(agents.open_ms),
        "mcp_first_call_ms": percentiles(agents.first_ms),
        "mcp_failures": agents.failures,
        "mcp_unanswered_at_end": len(late),
        "mcp_calls_in_window": len(during),
        "mcp_calls_per_s": len(during) / max(end - start, 1e-9),
        "mcp_all_ms": percentiles([c[2] for c in during]),
        "mcp_by_tool_ms": by_tool,
        "mcp_errors": errors,
        "server_handler_mean_ms": {  # the tool handler alone, from mnemo_mcp_tool_ms
            tool: _mean_between(tools_before.get(tool, {}), tools_after.get(tool, {}))
            for tool in sorted(set(_TOOLS))
        },
        "mcp_client_cores_busy": cpu,
        "server_rss_kib": {
            "before_mcp": rss_before,
            "mcp_open": rss_open,
            "after_first_calls": rss_first,
            "load_connected": load["rss_kib"]["connected"],
            "end_of_load": rss_end,
        },
        "rss_per_mcp_session_kib": (rss_open - rss_before) / count if count else None,
        "rss_per_agent_user_loaded_kib": (rss_first - rss_open) / count if count else None,
        "load": load,
        "targets": _targets(load, agents, count - len(late), args),
    }


def _mean_between(before: dict[str, float], after: dict[str, float]) -> float | None:
    calls = after.get("calls", 0.0) - before.get("calls", 0.0)
    total = after.get("sum_ms", 0.0) - before.get("sum_ms", 0.0)
    return round(total / calls, 2) if calls else None


def _targets(
    load: dict[str, Any], agents: _Agents, answered: int, args: argparse.Namespace
) -> dict[str, bool]:
    """``answered``: the sessions whose calls had all been answered a minute after the load."""
    offered = load["offered"]["turns_per_s"]
    return {
        "load: no errors, nothing unanswered": not load["errors"] and not load["unanswered"],
        "load: turns/s >= 98% of offered": load["turns_per_s"] >= 0.98 * offered,
        f"load: ack p99 <= {args.ack_p99_ms:g} ms": load["turn_ack_ms"]["p99"] <= args.ack_p99_ms,
        f"load: chat overhead p99 <= {args.overhead_p99_ms:g} ms": (
            load["chat_overhead_ms"]["p99"] <= args.overhead_p99_ms
        ),
        "mcp: every session opened, no call failed or unanswered": (
            len(agents.open_ms) == answered == agents.count
            and not agents.failures
            and not any(error for *_, error in agents.calls)
        ),
    }


def sessions_sweep(args: argparse.Namespace) -> dict[str, Any]:
    """One sweep over ``--sessions`` per embedder of ``--sessions-embedders``; the plot
    (``bench/results/<name>.png``) holds every sweep's curves."""
    counts = [int(n) for n in args.sessions.split(",")]
    sweeps = [_sweep(embedder, counts, args) for embedder in args.sessions_embedders.split(",")]
    curves: dict[str, list[float]] = {}
    for sweep in sweeps:
        runs, name = sweep["runs"], sweep["setup"]["embedder"]
        curves |= {
            f"{name}: memory_store_fact p95": [
                r["mcp_by_tool_ms"]["memory_store_fact"]["p95"] for r in runs
            ],
            f"{name}: memory_search p95": [
                r["mcp_by_tool_ms"]["memory_search"]["p95"] for r in runs
            ],
            f"{name}: turn → ack p99": [r["load"]["turn_ack_ms"]["p99"] for r in runs],
        }
    plotted = plot_curves(
        args.name,
        f"mnemo bench.mcp: MCP agents beside bench.load ({args.load_rate:g} turns/s)",
        f"MCP agents (one session each, a call every {args.every:g} s)",
        counts,
        curves,
    )
    return {"sweeps": sweeps, "plot": str(plotted) if plotted else None}


def _sweep(embedder: str, counts: list[int], args: argparse.Namespace) -> dict[str, Any]:
    top = max(counts)
    load_users = args.load_sessions
    keys = [f"k{i}:u{i}" for i in range(load_users)] + [f"ka{i}:a{i}" for i in range(top)]
    env = {"MNEMO_EMBEDDER": embedder, "MNEMO_API_KEYS": ",".join(keys)}
    runs = []
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-mcp-") as tmp:
        template = Path(tmp) / "template"
        template.mkdir()
        agents = {f"a{i}": args.agent_facts for i in range(top)}
        seeded = asyncio.run(seed(str(template), env, agents)) if top else 0.0
        for count in counts:
            data = Path(tmp) / f"run{count}"
            shutil.copytree(template, data)
            with load_server(load_users, {**env, "MNEMO_DATA_DIR": str(data)}) as (
                address,
                pid,
                fake_pid,
            ):
                run = asyncio.run(_beside(address, pid, fake_pid, count, args))
            shutil.rmtree(data)
            _print_run(run)
            runs.append(run)
    return {
        "setup": {
            "embedder": embedder,
            "agent_facts": args.agent_facts,
            "every_s": args.every,
            "load_sessions": args.load_sessions,
            "load_turns_per_s": args.load_rate,
            "load_chats_per_s": args.load_rate * 0.1,
            "load_seconds": args.load_seconds,
            "seed_s": seeded,
            "data": "facts written through the store adapter before start (bench.mcp_data.seed)",
        },
        "runs": runs,
    }


def _print_run(r: dict[str, Any]) -> None:
    load, rss = r["load"], r["server_rss_kib"]
    held = all(r["targets"].values())
    print(
        f"\n{r['mcp_sessions']} MCP sessions ({r['mcp_opened']} opened in"
        f" {r['mcp_open_seconds']:.1f} s) beside bench.load: {load['connected']} sessions,"
        f" {load['offered']['turns_per_s']:g} turns/s offered -> targets"
        f" {'HELD' if held else 'BROKEN'} (machine load average"
        f" {r['load_average_1min_before']:.1f} before the run)"
    )
    for name, ok in r["targets"].items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    print(
        f"  load: turns/s {load['turns_per_s']:.1f}, ack p50/p99"
        f" {load['turn_ack_ms']['p50']:.1f}/{load['turn_ack_ms']['p99']:.1f} ms, chat overhead"
        f" p50/p99 {load['chat_overhead_ms']['p50']:.1f}/{load['chat_overhead_ms']['p99']:.1f}"
        f" ms, errors {load['errors'] or 0}, unanswered {load['unanswered']}"
    )
    for tool, row in r["mcp_by_tool_ms"].items():
        print(
            f"  MCP {tool:<18} p50 {row['p50']:7.1f}  p95 {row['p95']:7.1f}  p99"
            f" {row['p99']:7.1f} ms  (n {row['n']}); server handler mean"
            f" {r['server_handler_mean_ms'][tool]} ms"
        )
    print(
        f"  MCP calls/s {r['mcp_calls_per_s']:.1f}, errors {r['mcp_errors'] or 0}, failures"
        f" {r['mcp_failures'][:3] or 0}; first call p50 {r['mcp_first_call_ms']['p50']:.1f} ms,"
        f" initialize p50 {r['mcp_initialize_ms']['p50']:.1f} ms"
    )
    busy = ", ".join(f"{k} {v:.2f}" for k, v in load["cpu_cores_busy"].items())
    lag = load["server_side"]["event_loop_lag_ms"]
    print(
        f"  cores busy: {busy}, MCP client {r['mcp_client_cores_busy']:.2f}; server event"
        f" loop lag p50 <= {lag['p50_le_ms']} ms, p99 <= {lag['p99_le_ms']} ms (whole run)"
    )
    per, user = r["rss_per_mcp_session_kib"], r["rss_per_agent_user_loaded_kib"]
    print(
        f"  server RSS MiB: before MCP {rss['before_mcp'] / 1024:.0f}, MCP open"
        f" {rss['mcp_open'] / 1024:.0f}, after first calls {rss['after_first_calls'] / 1024:.0f},"
        f" load connected {rss['load_connected'] / 1024:.0f}, end {rss['end_of_load'] / 1024:.0f}"
        + (f"; {per:.0f} KiB per open MCP session, {user:.0f} KiB per user loaded" if per else "")
    )


def print_sessions(result: dict[str, Any]) -> None:
    for sweep in result["sweeps"]:
        _print_sweep(sweep)
    if result["plot"]:
        print(f"wrote {result['plot']}")


def _print_sweep(result: dict[str, Any]) -> None:
    s = result["setup"]
    print(
        f"\nMCP sessions beside bench.load ({s['load_sessions']} sessions,"
        f" {s['load_turns_per_s']:g} turns/s + {s['load_chats_per_s']:g} chats/s for"
        f" {s['load_seconds']:g} s; {s['embedder']} embedder;"
        f" each agent's user {s['agent_facts']} facts;"
        f" a call every {s['every_s']:g} s per session)"
    )
    print(
        f"  {'MCP':>5} {'held':>5} {'ack p99':>8} {'ovh p99':>8} {'turns/s':>8}"
        f" {'search p50':>10} {'p95':>7} {'ctx p95':>8} {'store p95':>9} {'errors':>6}"
        f" {'RSS MiB':>8} {'load avg':>9}"
    )
    for r in result["runs"]:
        load, tools = r["load"], r["mcp_by_tool_ms"]
        print(
            f"  {r['mcp_sessions']:>5} {'yes' if all(r['targets'].values()) else 'NO':>5}"
            f" {load['turn_ack_ms']['p99']:8.1f} {load['chat_overhead_ms']['p99']:8.1f}"
            f" {load['turns_per_s']:8.1f} {tools['memory_search']['p50']:10.1f}"
            f" {tools['memory_search']['p95']:7.1f} {tools['memory_context']['p95']:8.1f}"
            f" {tools['memory_store_fact']['p95']:9.1f}"
            f" {sum(r['mcp_errors'].values()) + len(r['mcp_failures']):6d}"
            f" {r['server_rss_kib']['load_connected'] / 1024:8.0f}"
            f" {r['load_average_1min_before']:9.1f}"
        )
    held = [r["mcp_sessions"] for r in result["runs"] if all(r["targets"].values())]
    first_broken = next(
        (r["mcp_sessions"] for r in result["runs"] if not all(r["targets"].values())), None
    )
    print(
        f"  targets held at {held or 'no count'}"
        + (f"; first broken at {first_broken}" if first_broken is not None else "")
    )
