"""``GET /metrics``: Prometheus text format, through the standard client library.

Most series are fed by the event bus (``Metrics.observe`` listens to every
event); the WebSocket handler counts frames directly, and live actors are read
from the registry at scrape time. Each app has its own ``CollectorRegistry``,
so two servers in one process (tests) never share counters.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

import anyio
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from actors.events import Event

__all__ = ["CONTENT_TYPE_LATEST", "Metrics"]

_MS_BUCKETS = (1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)
_ROW_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)


class Metrics:
    def __init__(self, live_actors: Callable[[], int]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        gauge = Gauge("mnemo_live_sessions", "Live sessions (actors) now.", registry=r)
        gauge.set_function(lambda: float(live_actors()))
        # The series' name before /healthz's ``live_sessions`` named it: one release more.
        old = Gauge("mnemo_live_actors", "Deprecated: mnemo_live_sessions.", registry=r)
        old.set_function(lambda: float(live_actors()))
        self.actor_events = Counter(
            "mnemo_actor_events", "Actor lifecycle events by kind.", ["kind"], registry=r
        )
        self.turns = Counter("mnemo_turns", "Turns acknowledged (durable).", registry=r)
        self.chats = Counter("mnemo_chats", "Chat replies streamed to the end.", registry=r)
        self.frames_in = Counter(
            "mnemo_frames_in", "Client frames received, by type.", ["type"], registry=r
        )
        self.frames_out = Counter(
            "mnemo_frames_out", "Server frames sent, by type.", ["type"], registry=r
        )
        self.errors = Counter(
            "mnemo_errors", "Error frames sent to clients, by code.", ["code"], registry=r
        )
        self.llm_errors = Counter(
            "mnemo_llm_errors",
            "Failed Ollama calls, by call and code.",
            ["call", "code"],
            registry=r,
        )
        self.ack_ms = Histogram(
            "mnemo_turn_ack_ms",
            "Turn received by its actor to acked (durable), ms.",
            buckets=_MS_BUCKETS,
            registry=r,
        )
        self.chat_ms = Histogram(
            "mnemo_chat_ms", "Chat: frame in to last delta, ms.", buckets=_MS_BUCKETS, registry=r
        )
        self.chat_overhead_ms = Histogram(
            "mnemo_chat_overhead_ms",
            "Chat: frame read to first delta written, less the model's wait for its first "
            "chunk: the server's own part of the time to the first delta, ms.",
            buckets=(0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 25, 50, 100, 250, 1000),
            registry=r,
        )
        self.extraction_ms = Histogram(
            "mnemo_extraction_ms",
            "Extraction calls through Ollama (or the rules), ms.",
            buckets=_MS_BUCKETS,
            registry=r,
        )
        self.loop_lag_ms = Histogram(
            "mnemo_event_loop_lag_ms",
            "How late the event loop runs a timer (sampled every 50 ms), ms.",
            buckets=(0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000),
            registry=r,
        )
        self.gc_pause_ms = Histogram(
            "mnemo_gc_pause_ms",
            "Python's cyclic garbage collector runs (each stops the event loop), ms.",
            ["generation"],
            buckets=(0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500),
            registry=r,
        )
        self._gc_started = 0.0
        self.retrieval_ms = Histogram(
            "mnemo_retrieval_ms",
            "Building a chat's memory context (retrieval), ms.",
            buckets=_MS_BUCKETS,
            registry=r,
        )
        self.extractions = Counter(
            "mnemo_extractions", "Extraction outcomes.", ["outcome"], registry=r
        )
        self.model_facts_rejected = Counter(
            "mnemo_model_facts_rejected",
            "Facts a model extracted that were dropped before storing, by reason.",
            ["reason"],
            registry=r,
        )
        self.facts = Counter("mnemo_fact_changes", "Fact changes, by kind.", ["kind"], registry=r)
        self.compactions = Counter(
            "mnemo_compactions",
            "Chat prompts compacted (seed 004), by stage.",
            ["stage"],
            registry=r,
        )
        self.write_rows = Histogram(
            "mnemo_store_write_rows",
            "Rows per store write batch.",
            ["writer"],
            buckets=_ROW_BUCKETS,
            registry=r,
        )
        self.write_ms = Histogram(
            "mnemo_store_write_ms",
            "Store write batch latency, ms.",
            ["writer"],
            buckets=_MS_BUCKETS,
            registry=r,
        )
        self.store_failures = Counter(
            "mnemo_store_failures", "Failed store writes.", ["writer"], registry=r
        )
        self.optimizes = Counter(
            "mnemo_store_optimizes", "Store optimize runs.", ["writer"], registry=r
        )
        # Seed 003's monitoring: note creation rate, compaction per app, usage.
        self.notes_created = Counter(
            "mnemo_notes_created", "App notes created.", ["app"], registry=r
        )
        self.notes_failed = Counter(
            "mnemo_notes_failed", "App notes not created (model or store failed).", registry=r
        )
        self.note_llm_ms = Histogram(
            "mnemo_note_llm_ms",
            "Model time spent writing a note (seed 003's energy), ms.",
            buckets=_MS_BUCKETS,
            registry=r,
        )
        self.app_chats = Counter(
            "mnemo_app_chats",
            "Chats in app sessions, by whether app notes were injected.",
            ["with_notes"],
            registry=r,
        )
        self._apps_seen: set[str] = set()
        self._apps_with_notes: set[str] = set()
        Gauge("mnemo_apps_seen", "Apps chatted in since start.", registry=r).set_function(
            lambda: float(len(self._apps_seen))
        )
        Gauge(
            "mnemo_apps_with_notes", "Apps since start whose chats carried notes.", registry=r
        ).set_function(lambda: float(len(self._apps_with_notes)))
        self.note_compactions = Counter(
            "mnemo_note_compactions",
            "App note compactions, by app and how (model or fifo).",
            ["app", "by"],
            registry=r,
        )

        self.tool_calls = Counter(
            "mnemo_mcp_tool_calls",
            "MCP tool calls, by tool and outcome (ok, error).",
            ["tool", "outcome"],
            registry=r,
        )
        self.tool_ms = Histogram(
            "mnemo_mcp_tool_ms",
            "MCP tool calls: request in to result out, by tool, ms.",
            ["tool"],
            buckets=_MS_BUCKETS,
            registry=r,
        )

    def observe_tool(self, tool: str, outcome: str, seconds: float) -> None:
        self.tool_calls.labels(tool, outcome).inc()
        self.tool_ms.labels(tool).observe(seconds * 1000)

    async def sample_loop_lag(self, interval: float = 0.05) -> None:
        """Forever: how late a ``sleep(interval)`` wakes up. Lag means some step held the
        event loop (every actor, socket and writer shares it)."""
        while True:
            started = anyio.current_time()
            await anyio.sleep(interval)
            self.loop_lag_ms.observe(max(anyio.current_time() - started - interval, 0.0) * 1000)

    def time_gc(self) -> Callable[[], None]:
        """Time every collection of Python's garbage collector into ``mnemo_gc_pause_ms``
        until the returned function is called."""
        gc.callbacks.append(self._on_gc)

        def stop() -> None:
            if self._on_gc in gc.callbacks:
                gc.callbacks.remove(self._on_gc)

        return stop

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        ms = (time.perf_counter() - self._gc_started) * 1000
        self.gc_pause_ms.labels(str(info["generation"])).observe(ms)

    def observe(self, event: Event) -> None:
        """The bus listener: one event in, a few series updated."""
        kind, data = event.kind, event.data
        family = kind.split(".", 1)[0]
        if family == "actor":
            self.actor_events.labels(kind.split(".", 1)[1]).inc()
        elif kind == "turn.acked":
            self.turns.inc()
            self.ack_ms.observe(float(data.get("ms", 0.0)))
        elif kind == "chat.streamed":
            self.chats.inc()
            self.chat_ms.observe(float(data.get("ms", 0.0)))
            self.retrieval_ms.observe(float(data.get("context_ms", 0.0)))
            app = data.get("app")
            if app is not None:
                self._apps_seen.add(str(app))
                if data.get("notes"):
                    self._apps_with_notes.add(str(app))
                self.app_chats.labels("true" if data.get("notes") else "false").inc()
        elif kind == "context.compacted":
            self.compactions.labels(str(data.get("stage", 0))).inc()
        elif family == "extraction" and kind != "extraction.started":
            outcome = kind.split(".", 1)[1]
            if kind == "extraction.finished" and data.get("by_rules"):
                outcome = "rules"
            self.extractions.labels(outcome).inc()
            for reason, count in dict(data.get("rejected") or {}).items():
                self.model_facts_rejected.labels(str(reason)).inc(int(count))
            if "ms" in data:
                self.extraction_ms.observe(float(data["ms"]))
        elif family == "facts":
            self.facts.labels(kind.split(".", 1)[1]).inc(len(data.get("facts", ())))
        elif kind == "llm.error":
            self.llm_errors.labels(str(data.get("call")), str(data.get("code"))).inc()
        else:
            self._observe_store_and_notes(event)

    def _observe_store_and_notes(self, event: Event) -> None:
        kind, data = event.kind, event.data
        writer = str(data.get("writer", ""))
        if kind == "store.flushed":
            self.write_rows.labels(writer).observe(float(data.get("rows", 0)))
            self.write_ms.labels(writer).observe(float(data.get("ms", 0.0)))
        elif kind == "store.optimized":
            self.optimizes.labels(writer).inc()
        elif kind == "store.failed":
            self.store_failures.labels(writer or "session").inc()
        elif kind == "note.created":
            self.notes_created.labels(str(data.get("app"))).inc()
            self.note_llm_ms.observe(float(data.get("llm_ms", 0.0)))
        elif kind == "note.failed":
            self.notes_failed.inc()
        elif kind == "note.compacted":
            self.note_compactions.labels(str(data.get("app")), str(data.get("by"))).inc()

    def frame_in(self, kind: str) -> None:
        self.frames_in.labels(kind).inc()

    def frame_out(self, kind: str, code: str | None = None) -> None:
        self.frames_out.labels(kind).inc()
        if code is not None:
            self.errors.labels(code).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
