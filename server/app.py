"""The Starlette application: ``create_app(settings, llm=..., store=..., embedder=...)``."""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TypedDict

import anyio
from anyio.abc import TaskStatus
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from threadpoolctl import threadpool_limits

from actors.events import EventBus, RecentEvents
from actors.mailbox import SessionDeps
from actors.ports import Clock, Embedder, Llm, Store
from actors.registry import SessionRegistry
from actors.sweeper import Sweeper
from actors.wiring import build_deps
from actors.writer import ArchiveWriter
from schemas.settings import Settings
from server import dropin_ollama, dropin_openai, http, observe, rest, site, ws
from server.adapters.upstream import Upstream
from server.boundary import Boundary
from server.budget import UserBudgets
from server.cluster.node import ClusterNode
from server.cluster.ownership import Ownership
from server.mcp_http import McpEndpoint, new_server
from server.mcp_http import sessions as mcp_sessions
from server.metrics import Metrics

__all__ = ["AppState", "SystemClock", "create_app"]

_log = logging.getLogger("mnemo.app")


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class AppState(TypedDict):
    settings: Settings
    store: Store
    writer: ArchiveWriter
    registry: SessionRegistry
    deps: SessionDeps
    sweeper: Sweeper
    events: EventBus
    recent: RecentEvents
    metrics: Metrics
    budgets: UserBudgets
    mcp: StreamableHTTPSessionManager
    #: Live tails (``/ws/tail``) per user key's user, for ``max_tails_per_user``.
    tails: Counter[str]
    #: A cluster node's ownership of users (None: a single server owns everyone).
    cluster: Ownership | None
    #: The model server, for the drop-in endpoints' relayed requests.
    upstream: Upstream


async def _optimize_learned(store: Store, cleanup_older_than: float) -> None:
    """The learned-memory writer's upkeep: facts, notes, profiles, progress, rules, events,
    entities, links, episodes."""
    await store.facts.optimize(cleanup_older_than)
    await store.rules.optimize(cleanup_older_than)
    await store.events.optimize(cleanup_older_than)
    await store.entities.optimize(cleanup_older_than)
    await store.links.optimize(cleanup_older_than)
    await store.episodes.optimize(cleanup_older_than)


async def _supervise_writer(
    writer: ArchiveWriter, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Keep the single writer running: a crash is logged and the writer restarted,
    with what was queued still in its queue."""
    started = False
    while True:
        try:
            if started:
                await writer.run()
            else:
                started = True
                await writer.run(task_status=task_status)
            return
        except Exception:
            _log.exception("archive writer crashed; restarting")
            await anyio.sleep(1.0)


def create_app(
    settings: Settings,
    *,
    llm: Llm,
    store: Store,
    embedder: Embedder,
    clock: Clock | None = None,
    cluster: ClusterNode | None = None,
) -> Starlette:
    """The app. Resources open in its lifespan and close when it ends; constructing it
    does no I/O. With ``cluster``, the app is one node of a cluster (its store's journal
    made by ``cluster.journal``)."""
    mcp_server = new_server()
    upstream = Upstream(settings.llm_api, settings.llm_url, timeout=settings.llm_timeout)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[AppState]:
        # One BLAS thread for numpy: a search's products are small, and OpenBLAS's idle
        # threads spin after each one, taking the cores from the query embedding and the
        # event loop (bench.mcp: server CPU per search 20.6 -> 12.4 ms).
        threadpool_limits(1, user_api="blas")
        await embedder.warm_up()
        await store.open()
        events = EventBus()
        recent = RecentEvents()
        events.listen(recent)
        live: list[SessionRegistry] = []  # set once the registry exists
        metrics = Metrics(lambda: len(live[0].live()) if live else 0)
        events.listen(metrics.observe)
        stop_timing_gc = metrics.time_gc()
        guard = cluster.ownership.fence if cluster is not None else None
        writer = ArchiveWriter(
            store,
            embedder,
            batch_max=settings.writer_batch_max,
            linger=settings.writer_linger,
            optimize_interval=settings.optimize_interval,
            optimize_after_writes=settings.optimize_after_writes,
            cleanup_older_than=settings.cleanup_older_than,
            snapshot_interval=settings.snapshot_interval,
            flush=store.flush_messages,
            flush_interval=settings.archive_flush_interval,
            flush_rows=settings.archive_flush_rows,
            events=events,
            guard=guard,
        )
        fact_writer = ArchiveWriter(
            store,
            embedder,
            optimize_interval=settings.optimize_interval,
            optimize_after_writes=settings.optimize_after_writes,
            cleanup_older_than=settings.cleanup_older_than,
            optimizer=functools.partial(_optimize_learned, store),
            # Facts, log entries and links are durable once journaled by the store: moved
            # into their tables in one write each, like the archive's messages.
            flush=store.flush_learned,
            flush_interval=settings.archive_flush_interval,
            flush_rows=settings.archive_flush_rows,
            pending=lambda: store.learned_pending,
            events=events,
            name="facts",
            guard=guard,
        )
        deps = build_deps(
            settings,
            llm=llm,
            embedder=embedder,
            store=store,
            writer=writer,
            fact_writer=fact_writer,
            clock=clock or SystemClock(),
            events=events,
        )
        try:
            async with anyio.create_task_group() as cluster_group:
                async with anyio.create_task_group() as writer_group:
                    await writer_group.start(_supervise_writer, writer)
                    await writer_group.start(_supervise_writer, fact_writer)
                    await writer_group.start(store.run_indexing)
                    async with anyio.create_task_group() as sessions:
                        registry = SessionRegistry(sessions, deps)
                        live.append(registry)
                        if settings.preload_embedder:
                            # Before the server listens, so no first request waits for it.
                            await registry.preload_embedder()
                        if cluster is not None:
                            cluster.attach(registry, cluster_group)
                            await cluster_group.start(cluster.ownership.run)
                        sweeper = Sweeper(deps, registry)
                        await sessions.start(sweeper.run)
                        sessions.start_soon(metrics.sample_loop_lag)
                        if settings.preload_model:
                            sessions.start_soon(deps.learning.extractor.warm_up)
                        async with mcp_sessions(mcp_server, settings) as mcp:
                            yield AppState(
                                budgets=UserBudgets(settings.user_rate, settings.user_burst),
                                events=events,
                                recent=recent,
                                metrics=metrics,
                                settings=settings,
                                store=store,
                                writer=writer,
                                registry=registry,
                                deps=deps,
                                sweeper=sweeper,
                                mcp=mcp,
                                tails=Counter(),
                                cluster=cluster.ownership if cluster is not None else None,
                                upstream=upstream,
                            )
                        sessions.cancel_scope.cancel()
                    # Sessions are gone and have queued their snapshots: now stop the writer,
                    # which flushes everything still queued before it returns.
                    writer_group.cancel_scope.cancel()
                if cluster is not None:
                    # Everything is flushed: hand the shards back, leave the membership.
                    with anyio.CancelScope(shield=True):
                        await cluster.ownership.release_all()
                cluster_group.cancel_scope.cancel()
        finally:
            stop_timing_gc()
            with anyio.CancelScope(shield=True):
                await upstream.aclose()
                await llm.aclose()
                await store.aclose()

    routes = [
        *observe.routes,  # before the chat socket: /ws/tail is not a session
        WebSocketRoute("/ws/{session_id}", ws.chat_socket),
        Route("/mcp", McpEndpoint()),
        *rest.routes,
        *dropin_ollama.routes,
        *dropin_openai.routes,
        *site.routes,
    ]
    app = Starlette(
        routes=routes,
        # Outermost: no route, the page and /mcp included, runs for a foreign Host or Origin.
        middleware=[Middleware(Boundary, settings=settings)],
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error, Exception: _server_error},
    )
    # ``/memory/long-term/`` is no memory: a 404, not a redirect to the list.
    app.router.redirect_slashes = False
    return app


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return http.error(exc.status_code, code, str(exc.detail))


async def _server_error(request: Request, exc: Exception) -> Response:
    _log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return http.error(500, "internal", "internal server error")
