"""A message's analyzed terms are stored with it, so loading a user's index for their
first search reads them instead of analyzing every text again."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from memory.hashing import HashEmbedder
from server.adapters.lance_analyzer import Analyzer
from server.adapters.lance_messages import TERMS_COLUMN
from server.adapters.lance_store import LanceStore
from tests.stored_rows import message, put

pytestmark = pytest.mark.anyio

_embedder = HashEmbedder()
_TEXTS = ["we hiked the alps in june", "the berlin marathon was hard", "tea with grandma"]


async def _search(store: LanceStore, query: str) -> list[tuple[str, float]]:
    hits = await store.search_messages("u1", query, _embedder.embed_one(query), k=3)
    return [(m.text, round(score, 6)) for m, score in hits]


def _open(tmp_path: Path) -> LanceStore:
    return LanceStore(tmp_path / "db", embedder=_embedder, journal=tmp_path / "journal")


async def _written(tmp_path: Path) -> list[tuple[str, float]]:
    """The texts stored and moved into the table; the hits of a warm search."""
    store = _open(tmp_path)
    await store.open()
    try:
        await put(store, *(message(n, text) for n, text in enumerate(_TEXTS)))
        await store.flush_messages()
        return await _search(store, "berlin marathon")
    finally:
        await store.aclose()


async def test_a_users_first_search_reads_stored_terms_and_analyzes_no_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warm = await _written(tmp_path)
    analyzed: list[Sequence[str]] = []
    analyze = Analyzer.analyze

    async def counting(self: Analyzer, texts: Sequence[str]) -> list[list[str]]:
        analyzed.append(texts)
        return await analyze(self, texts)

    monkeypatch.setattr(Analyzer, "analyze", counting)
    store = _open(tmp_path)
    await store.open()
    try:
        assert await _search(store, "berlin marathon") == warm
    finally:
        await store.aclose()
    assert analyzed == []


async def test_messages_stored_before_terms_were_are_analyzed_when_their_user_loads(
    tmp_path: Path,
) -> None:
    warm = await _written(tmp_path)
    store = _open(tmp_path)
    await store.open()
    await store._messages_table.table.drop_columns([TERMS_COLUMN])  # as an older mnemo wrote
    await store.aclose()
    store = _open(tmp_path)
    await store.open()  # adds the column back, empty
    try:
        assert await _search(store, "berlin marathon") == warm
        await put(store, message(9, "a new marathon record in berlin"))
        await store.flush_messages()
    finally:
        await store.aclose()
    store = _open(tmp_path)
    await store.open()
    try:
        hits = await _search(store, "berlin marathon")
    finally:
        await store.aclose()
    assert {text for text, _ in hits[:2]} == {
        "a new marathon record in berlin",
        "the berlin marathon was hard",
    }
