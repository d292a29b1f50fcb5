"""Retrieval latency at 10k, 100k and 1M stored memories, and ingest throughput.

    python -m bench.retrieval [--sizes 10000,100000,1000000] [--users 1,1,1000]
                              [--queries 200] [--facts-per-user 500]

What counts as a "stored memory" here: an archived message (one row of the
``messages`` table, what ``search_messages`` and ``GET /memory/search?kind=turns``
search). Besides its messages every user holds ``--facts-per-user`` active facts
(default 500, the per-user cap ``max_facts``), searched by ``search_facts``.
Stores are real LanceDB directories in a temp dir, built through ``LanceStore``:
messages from LoCoMo's word distribution with random unit vectors
(``bench.synthetic``), appended 50,000 rows at a time, then ``optimize()`` (so
the full-text index covers every row). The store is then opened again, as a
server starts, and each user's memories are loaded into the in-memory search
index (``LanceStore.warm``, what a session's start does): those load times are
reported apart. Queries are LoCoMo questions embedded with the bundled ONNX
MiniLM. Timed one at a time, per query, users picked at random:

- ``search_messages`` (k=10) and ``search_facts`` (k=50, as the context builder
  asks) with a precomputed query vector;
- embed + ``search_messages``: the end-to-end figure the issue's targets name, as
  ``GET /memory/search`` runs it (the text side scored while the query embeds);
- ``chat_context``: the full context build of ``chat`` (facts recall, recalled
  conversation; two query embeddings) on the ONNX embedder.

Ingest is measured on its own store: rows through ``ArchiveWriter`` (the
server's batching: 1024 rows, 2 ms linger, the journal, moves into the table
every second) from 64 producers awaiting ``append`` of one turn (two messages)
each, with random vectors (storage cost) and with the ONNX embedder (what the
server really does): rows/s acked, and rows/s until the table holds them all.
Writes ``bench/results/retrieval.json`` and ``bench/results/retrieval.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import random
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import lancedb
import numpy as np

from actors.context import ContextBuilder, chat_context
from actors.keeper import FactKeeper
from actors.ports import Embedder
from actors.query_vector import QueryVector
from actors.writer import ArchiveWriter
from bench.common import RESULTS, machine, percentiles, write_result
from bench.retrieval_report import METRICS, table, write_plot
from bench.synthetic import LOCOMO, Corpus, RandomEmbedder, Vectors, facts, messages, mixed_vectors
from memory.projection import PROJECT_FROM
from memory.search_index import top_k
from schemas.settings import Settings
from server.adapters.lance_store import LanceStore
from server.adapters.onnx_embedder import OnnxMiniLmEmbedder
from server.app import SystemClock

_CHUNK = 50_000
_DIM = 384  # the bundled MiniLM's size
_WARM = 20


def _load() -> float:
    return os.getloadavg()[0]


async def _timed(run: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await run()
    return (time.perf_counter() - started) * 1000


async def _ingest(corpus: Corpus, rows: int, embedder: Embedder, producers: int) -> dict[str, Any]:
    """Rows per second through the server's ``ArchiveWriter`` into a fresh store."""
    settings = Settings()
    rng = np.random.default_rng(1)
    pending = messages(corpus.texts(rng, rows), [f"u{i:04d}" for i in range(producers)], 0)
    turns = [pending[i : i + 2] for i in range(0, len(pending), 2)]
    with tempfile.TemporaryDirectory(prefix="mnemo-ingest-") as tmp:
        store = LanceStore(Path(tmp) / "db", embedder=embedder, journal=Path(tmp) / "journal")
        await store.open()
        writer = ArchiveWriter(
            store,
            embedder,
            batch_max=settings.writer_batch_max,
            linger=settings.writer_linger,
            flush=store.flush_messages,
            flush_interval=settings.archive_flush_interval,
            flush_rows=settings.archive_flush_rows,
        )
        async with anyio.create_task_group() as tg:
            await tg.start(writer.run)

            async def producer(mine: list[Any]) -> None:
                for turn in mine:
                    await writer.append(turn)

            started = time.perf_counter()
            async with anyio.create_task_group() as inner:
                for p in range(producers):
                    inner.start_soon(producer, turns[p::producers])
            acked = time.perf_counter() - started
            await store.flush_messages()  # the rest of the journal into the table
            in_table = time.perf_counter() - started
            tg.cancel_scope.cancel()
        await store.aclose()
    return {
        "rows": rows,
        "embedder": embedder.name,
        "seconds": acked,
        "rows_per_s": rows / acked,
        "seconds_into_table": in_table,
        "rows_per_s_into_table": rows / in_table,
        "batches": writer.stats.batches,
    }


async def _build(
    store: LanceStore,
    corpus: Corpus,
    basis: Vectors,
    size: int,
    users: list[str],
    facts_per_user: int,
) -> dict[str, Any]:
    rng = np.random.default_rng(size)
    append_s = facts_s = 0.0
    started = time.perf_counter()
    for offset in range(0, size, _CHUNK):
        n = min(_CHUNK, size - offset)
        rows = messages(corpus.texts(rng, n), users, offset)
        vectors = mixed_vectors(rng, basis, n)
        t = time.perf_counter()
        # NumPy rows go into the Arrow table as they are; a list of lists would cost more.
        await store.append_messages(rows, cast("Sequence[Sequence[float]]", vectors))
        append_s += time.perf_counter() - t
    batch: list[Any] = []
    for user in users:
        picks = rng.integers(0, len(corpus.observations), facts_per_user).tolist()
        contents = [corpus.observations[i] for i in picks]
        batch += facts(user, contents, mixed_vectors(rng, basis, facts_per_user))
        if len(batch) >= _CHUNK or user == users[-1]:
            t = time.perf_counter()
            await store.facts.add_facts(batch)
            facts_s += time.perf_counter() - t
            batch = []
    t = time.perf_counter()
    await store.optimize(cleanup_older_than=0.001)
    await store.facts.optimize(0.001)
    optimize_s = time.perf_counter() - t
    return {
        "seconds": time.perf_counter() - started,
        "append_s": append_s,
        "append_rows_per_s": size / append_s,
        "facts_append_s": facts_s,
        "optimize_s": optimize_s,
    }


async def _unindexed(path: str) -> dict[str, int]:
    """Rows each index of ``messages`` and ``facts`` does not cover yet (0 after optimize)."""
    db: Any = await lancedb.connect_async(path)
    out: dict[str, int] = {}
    for name in ("messages", "facts"):
        table: Any = await db.open_table(name)
        for index in await table.list_indices():
            stats = await table.index_stats(index.name)
            out[f"{name}.{','.join(index.columns)}"] = int(stats.num_unindexed_rows)
        table.close()
    db.close()
    return out


async def _projection_recall(
    store: LanceStore, users: list[str], queries: list[tuple[str, str, list[float]]]
) -> dict[str, float] | None:
    """Recall@10 of the vector side against exact search where users' indexes rank by
    projection first (``memory.projection``); None where none is that large."""
    found: list[float] = []
    for user, _, vector in queries:
        index = await store.message_index(user)
        if index.wants_projection or len(index) < PROJECT_FROM:
            continue
        exact = {p for p, _ in top_k(index.dense_scores(vector, None, exact=True), 10)}
        approx = {p for p, _ in top_k(index.dense_scores(vector, None), 10)}
        found.append(len(exact & approx) / max(1, len(exact)))
    if not found:
        return None
    return {"mean": sum(found) / len(found), "min": min(found), "queries": len(found)}


async def _measure(
    store: LanceStore,
    onnx: OnnxMiniLmEmbedder,
    queries: list[tuple[str, str, list[float]]],
    keys: Sequence[str] = tuple(METRICS),
) -> dict[str, list[float]]:
    settings = Settings()
    clock = SystemClock()
    fact_writer = ArchiveWriter(store, onnx, optimizer=store.facts.optimize)
    keeper = FactKeeper(store, onnx, fact_writer, settings, clock)
    builder = ContextBuilder(store, onnx, keeper, settings, clock)
    samples: dict[str, list[float]] = {key: [] for key in keys}
    async with anyio.create_task_group() as tg:
        await tg.start(fact_writer.run)
        for n, (user, text, vector) in enumerate(queries):
            runs = _runs(store, builder, onnx, user, text, vector)
            for key in keys:
                ms = await _timed(runs[key])
                if n >= _WARM:
                    samples[key].append(ms)
        tg.cancel_scope.cancel()
    return samples


def _runs(
    store: LanceStore,
    builder: ContextBuilder,
    onnx: OnnxMiniLmEmbedder,
    user: str,
    text: str,
    vector: list[float],
) -> dict[str, Callable[[], Awaitable[Any]]]:
    """One query's timed calls, in the keys of ``METRICS``."""

    async def embed_search() -> None:
        # As GET /memory/search does it: the text side is scored while the query embeds.
        await store.search_messages(user, text, QueryVector(onnx, text), k=10)

    return {
        "search_messages_ms": lambda: store.search_messages(user, text, vector, k=10),
        "search_facts_ms": lambda: store.facts.search_facts(user, text, vector, k=50, scope=None),
        "embed_search_ms": embed_search,
        "context_ms": lambda: chat_context(
            builder, user, text, scope=None, topic=None, history=[], system_tokens=0
        ),
    }


async def _scenario(
    corpus: Corpus,
    onnx: OnnxMiniLmEmbedder,
    size: int,
    n_users: int,
    args: argparse.Namespace,
    embedded: dict[str, list[float]],
    basis: Vectors,
) -> dict[str, Any]:
    users = [f"u{i:04d}" for i in range(n_users)]
    picker = random.Random(size)
    asked = [picker.choice(list(embedded)) for _ in range(_WARM + args.queries)]
    queries = [(picker.choice(users), q, embedded[q]) for q in asked]
    with tempfile.TemporaryDirectory(prefix="mnemo-retrieval-") as tmp:
        store = LanceStore(tmp, embedder=RandomEmbedder(_DIM))
        await store.open()
        build = await _build(store, corpus, basis, size, users, args.facts_per_user)
        await store.aclose()
        unindexed = await _unindexed(tmp)
        store = LanceStore(tmp, embedder=RandomEmbedder(_DIM), cache_bytes=args.cache_mb << 20)
        await store.open()
        started = time.perf_counter()
        load_ms = [await _timed(functools.partial(store.warm, u)) for u in users]
        warm_s = time.perf_counter() - started
        index_mb = store.index_bytes() / 2**20
        lance_mb = store.lance_cache_bytes() / 2**20
        load = _load()
        samples = await _measure(store, onnx, queries)
        recall = await _projection_recall(store, users, queries)
        lance_mb_after = store.lance_cache_bytes() / 2**20
        await store.aclose()
    result: dict[str, Any] = {
        "rows": size,
        "users": n_users,
        "rows_per_user": size // n_users,
        "facts": n_users * args.facts_per_user,
        "build": build,
        "unindexed_rows": unindexed,
        "index_load_ms": percentiles(load_ms),
        "index_load_all_s": warm_s,
        "index_mb": index_mb,
        # LanceDB's own caches (metadata, index pages) after the loads and after the queries.
        "lance_cache_mb": [lance_mb, lance_mb_after],
        "load_before_queries": load,
        "projection_recall_at_10": recall,
    }
    result.update({key: percentiles(samples[key]) for key in METRICS})
    return result


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = Corpus.load(args.locomo)
    onnx = OnnxMiniLmEmbedder(threads=Settings().embed_threads)
    await onnx.warm_up()
    questions = random.Random(0).sample(corpus.questions, min(args.queries, len(corpus.questions)))
    for q in questions[:_WARM]:
        await onnx.embed([q])
    embedded: dict[str, list[float]] = {}
    embed_ms = []
    for q in questions:
        started = time.perf_counter()
        [embedded[q]] = await onnx.embed([q])
        embed_ms.append((time.perf_counter() - started) * 1000)
    sample = random.Random(1).sample(corpus.observations, 512)
    basis = np.array(await onnx.embed(sample), dtype=np.float32)
    ingest = [
        await _ingest(corpus, args.ingest_rows, RandomEmbedder(_DIM), 64),
        await _ingest(corpus, args.ingest_onnx_rows, onnx, 64),
    ]
    scenarios = []
    for size, n_users in zip(args.sizes, args.users, strict=True):
        scenarios.append(await _scenario(corpus, onnx, size, n_users, args, embedded, basis))
        print(f"  built and measured {size:,} rows / {n_users} users", flush=True)
    return {
        "query_embedding_ms": percentiles(embed_ms),
        "query_words": float(np.mean([len(q.split()) for q in questions])),
        "ingest": ingest,
        "scenarios": scenarios,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--users", default="1,1,1000", help="users per size, same order")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--facts-per-user", type=int, default=Settings().max_facts)
    parser.add_argument("--ingest-rows", type=int, default=20_000)
    parser.add_argument("--ingest-onnx-rows", type=int, default=2_000)
    parser.add_argument(
        "--cache-mb", type=int, default=4096, help="MNEMO_CACHE_MB of the measured store"
    )
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.users = [int(u) for u in args.users.split(",")]
    load_before = _load()
    result = asyncio.run(_run(args))
    result["setup"] = {
        **machine(),
        "queries": args.queries,
        "facts_per_user": args.facts_per_user,
        "load_before": load_before,
        "load_after": _load(),
        "lancedb": lancedb.__version__,
        "cache_mb": args.cache_mb,
    }
    path = write_result("retrieval", result)
    plot = RESULTS / "retrieval.png"
    write_plot(result, plot)
    print("\n".join(table(result)))
    print(f"wrote {path} and {plot}")


if __name__ == "__main__":
    main()
