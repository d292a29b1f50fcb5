"""Indexing off the ack's path: an append is durable first, and searches still find it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import anyio
import pytest

from memory.hashing import HashEmbedder
from server.adapters.lance_store import LanceStore
from tests.stored_rows import message, put

pytestmark = pytest.mark.anyio

_embedder = HashEmbedder()
_SLOW = 0.5


@pytest.fixture
async def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[LanceStore]:
    """A journaled store whose analyzer takes half a second, indexing in the background."""
    store = LanceStore(tmp_path / "db", embedder=_embedder, journal=tmp_path / "journal")
    await store.open()
    _slow_analyzer(store, monkeypatch)
    async with anyio.create_task_group() as tg:
        await tg.start(store.run_indexing)
        yield store
        tg.cancel_scope.cancel()
    await store.aclose()


async def test_an_append_returns_before_indexing_and_a_search_waits_for_it(
    store: LanceStore,
) -> None:
    await store.warm("u1")  # held in memory: every append is indexed
    started = time.perf_counter()
    await put(store, message(1, "the spare key is under the blue flowerpot"))
    appended = time.perf_counter() - started
    hits = await store.search_messages("u1", "flowerpot", _embedder.embed_one("key"), k=1)
    searched = time.perf_counter() - started
    assert appended < _SLOW / 2
    assert searched >= _SLOW
    assert [m.turn for m, _ in hits] == [1]


async def test_a_message_deleted_while_queued_for_indexing_is_never_found(
    store: LanceStore,
) -> None:
    await store.warm("u1")
    await put(store, message(1, "forget the flowerpot"), message(2, "keep the garden"))
    assert await store.delete_message("u1", message(1, "").id)
    hits = await store.search_messages("u1", "flowerpot", _embedder.embed_one("x"), k=5)
    assert [m.turn for m, _ in hits if "flowerpot" in m.text] == []


async def test_messages_still_queued_when_indexing_stops_are_found_by_the_next_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LanceStore(tmp_path / "db", embedder=_embedder, journal=tmp_path / "journal")
    await store.open()
    try:
        await store.warm("u1")
        _slow_analyzer(store, monkeypatch)
        async with anyio.create_task_group() as tg:
            await tg.start(store.run_indexing)
            await put(store, message(1, "being indexed when the server stopped"))
            await anyio.sleep(_SLOW / 5)  # its indexing has started
            await put(store, message(2, "queued when the server stopped"))
            tg.cancel_scope.cancel()
        assert not store._search._indexing.running
        hits = await store.search_messages("u1", "queued", _embedder.embed_one("x"), k=1)
    finally:
        await store.aclose()
    assert [m.turn for m, _ in hits] == [2]


def _slow_analyzer(store: LanceStore, monkeypatch: pytest.MonkeyPatch) -> None:
    search = store._search
    analyze = search._analyze

    async def slow(texts: Sequence[str]) -> list[list[str]]:
        await anyio.sleep(_SLOW)
        return await analyze(texts)

    monkeypatch.setattr(search, "_analyze", slow)
