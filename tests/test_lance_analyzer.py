"""The query analyzer: LanceDB's own ``icu`` analysis, on the spot, stop words kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pytest
from lancedb.index import FTS

from memory.hashing import HashEmbedder
from memory.text import MAX_QUERY_CHARS
from server.adapters.lance_analyzer import Analyzer
from server.adapters.lance_store import LanceStore

pytestmark = pytest.mark.anyio

_QUERIES = [
    "What did Caroline say about the LGBTQ support group last Tuesday?",
    "我喜欢用 Python 写代码",
    "我喜欢用Python写代码\uff0c周末去爬山",
    "running runners ran — e-mail me at a.b@example.com, or call +1 (555) 010-9999!",
    "don't can't it's Müller's café naïve Straße",
    "  tabs\tand\nnewlines   between words  ",
    "東京に住んでいます and 서울에서 일해요",
    "3.14 is pi; v2.0.1 shipped on 2023-05-07 at 10:30",
    "the of and a to in is",
    "",
]


@pytest.fixture
async def table(tmp_path: Path) -> Any:
    db = await lancedb.connect_async(tmp_path / "db")
    schema = pa.schema([pa.field("search_text", pa.string())])
    table = await db.create_table("t", data=[{"search_text": "seed row"}], schema=schema)
    await table.create_index("search_text", config=FTS(base_tokenizer="icu", with_position=True))
    return table


async def test_a_query_gets_the_index_terms_and_only_stop_words_besides(table: Any) -> None:
    analyzer = Analyzer(table, "search_text")
    for query in _QUERIES:
        whole = [t.text for t in await table.tokenize(query, column="search_text")]
        got = list((await analyzer.query(query)).terms)
        assert [t for t in got if t in whole] == whole, query
        for extra in (t for t in got if t not in whole):  # dropped by the index's analysis
            assert await table.tokenize(extra, column="search_text") == [], (query, extra)


async def test_stop_words_are_kept_in_a_query_and_never_in_a_vocabulary(table: Any) -> None:
    analyzer = Analyzer(table, "search_text")
    # LanceDB drops stop words after stemming: "wills" is "will", a stop word.
    assert (await analyzer.query("the wills")).terms == ("the", "will")
    assert await analyzer.analyze(["the wills", "free will"]) == [[], ["free"]]


async def test_after_the_first_query_no_query_asks_the_index(
    table: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    analyzer = Analyzer(table, "search_text")
    await analyzer.query("where does Caroline live now")
    calls: list[str] = []

    async def by_index(self: Any, text: str, **kwargs: Any) -> Any:
        calls.append(text)
        return []

    monkeypatch.setattr(lancedb.table.AsyncTable, "tokenize", by_index)
    found = await analyzer.query("where does Melanie paint")
    assert calls == []
    assert found.terms == ("where", "doe", "melani", "paint")


async def test_an_opened_store_has_checked_its_analyzer_so_no_first_query_asks_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LanceStore(tmp_path / "db", embedder=HashEmbedder())
    await store.open()
    calls: list[str] = []

    async def by_index(self: Any, text: str, **kwargs: Any) -> Any:
        calls.append(text)
        return []

    monkeypatch.setattr(lancedb.table.AsyncTable, "tokenize", by_index)
    try:
        found = await store.search_messages("u1", "where does Melanie paint", [1.0] * 64, k=3)
    finally:
        await store.aclose()
    assert found == []
    assert calls == []


async def test_queries_take_the_index_way_when_lancedb_tokenize_disagrees_with_it(
    table: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = lancedb.tokenize

    def other_settings(text: str, **kwargs: Any) -> Any:
        return here(text, **{**kwargs, "stem": False})

    monkeypatch.setattr(lancedb, "tokenize", other_settings)
    analyzer = Analyzer(table, "search_text")
    whole = [t.text for t in await table.tokenize("runners ran", column="search_text")]
    assert list((await analyzer.query("runners ran")).terms) == whole


async def test_a_word_with_a_star_asks_for_a_prefix_and_adds_no_term(table: Any) -> None:
    analyzer = Analyzer(table, "search_text")
    found = await analyzer.query("Pyth* code")
    assert found.prefixes == ("pyth",)
    assert found.terms == ("code",)


async def test_a_query_is_analyzed_by_its_first_characters(table: Any) -> None:
    analyzer = Analyzer(table, "search_text")
    head = "tea " * (MAX_QUERY_CHARS // 4)
    found = await analyzer.query(head + "coffee Pyth*")
    assert set(found.terms) == {"tea"}
    assert found.prefixes == ()
