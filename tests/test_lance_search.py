"""Search through the real LanceDB adapter: in-memory indexes kept current by every write,
the same answers cold and warm, prefix matching and the keyword fallback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import lancedb
import msgspec
import numpy as np
import pytest

from memory.facts import Stored
from memory.hashing import HashEmbedder, HashSparseEncoder
from memory.text import MAX_INDEXED_BYTES
from schemas.records import ArchivedMessage
from server.adapters.lance_cache import with_neighbours
from server.adapters.lance_messages import columns_of
from server.adapters.lance_store import LanceStore
from server.adapters.message_entry import MessageEntry
from testing.records import make_fact
from tests.stored_rows import message, put

pytestmark = pytest.mark.anyio

_embedder = HashEmbedder()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[LanceStore]:
    store = LanceStore(tmp_path / "db", embedder=_embedder)
    await store.open()
    yield store
    await store.aclose()


async def _found(store: LanceStore, query: str, *, user: str = "u1", k: int = 5) -> list[str]:
    hits = await store.search_messages(user, query, _embedder.embed_one(query), k=k)
    return [m.text for m, _ in hits]


async def test_a_message_written_after_the_first_search_is_found_by_the_next(
    store: LanceStore,
) -> None:
    await put(store, message(1, "we hiked the alps in june"))
    assert await _found(store, "alps hiking", k=1) == ["we hiked the alps in june"]
    await put(store, message(2, "the marathon in berlin was hard"))
    assert (await _found(store, "berlin marathon", k=1)) == ["the marathon in berlin was hard"]


async def test_a_reopened_store_gives_the_same_hits_as_the_warm_one(
    store: LanceStore, tmp_path: Path
) -> None:
    texts = [f"note {i} about {w}" for i, w in enumerate(["tea", "coffee", "tea time", "cake"])]
    await put(store, *(message(i, t) for i, t in enumerate(texts)))
    warm = await store.search_messages("u1", "tea", _embedder.embed_one("tea"), k=4)
    cold_store = LanceStore(tmp_path / "db", embedder=_embedder)
    await cold_store.open()
    try:
        cold = await cold_store.search_messages("u1", "tea", _embedder.embed_one("tea"), k=4)
    finally:
        await cold_store.aclose()
    approximately: list[tuple[ArchivedMessage, object]] = [(m, pytest.approx(s)) for m, s in warm]
    assert approximately == cold
    assert warm[0][0].meta == {"n": warm[0][0].turn}  # rows read back whole


async def test_deleted_and_cleared_messages_are_never_found_again(store: LanceStore) -> None:
    await put(store, message(1, "secret plan alpha"), message(2, "secret plan beta"))
    assert len(await _found(store, "secret plan")) == 2
    assert await store.delete_message("u1", message(1, "").id)
    assert await _found(store, "secret plan") == ["secret plan beta"]
    assert await store.clear_messages("u1") == 1
    assert await _found(store, "secret plan") == []


async def test_a_scope_sees_global_messages_and_its_own(store: LanceStore) -> None:
    rows = [message(1, "tea global"), message(2, "tea in app a"), message(3, "tea in app b")]
    rows[1] = msgspec.structs.replace(rows[1], scope="app-a")
    rows[2] = msgspec.structs.replace(rows[2], scope="app-b")
    await put(store, *rows)
    hits = await store.search_messages("u1", "tea", _embedder.embed_one("tea"), k=5, scope="app-a")
    assert sorted(m.text for m, _ in hits) == ["tea global", "tea in app a"]


async def test_a_word_ending_in_a_star_matches_words_that_start_with_it(
    store: LanceStore,
) -> None:
    # seed 001: `Pyth*` matches "Python"; LanceDB's own full-text search has no prefixes.
    await put(store, message(1, "I write Python every day"), message(2, "I like green tea"))
    hits = await store.search_messages("u1", "Pyth*", [0.0] * _embedder.dim, k=1)
    assert [m.text for m, _ in hits] == ["I write Python every day"]


async def test_without_the_analyzer_search_matches_keywords_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # seed 001: full-text search unavailable or failing -> LIKE-style keyword matching.
    async def broken(self: Any, text: str, **_: Any) -> list[Any]:
        raise ValueError("Column 'search_text' does not have a full text search index")

    monkeypatch.setattr(lancedb.table.AsyncTable, "tokenize", broken)
    store = LanceStore(tmp_path / "db", embedder=_embedder)
    await store.open()  # its check of the analyzer fails: the first query checks again
    try:
        await put(store, message(1, "my cat Mochi loves tuna"), message(2, "we moved to Lyon"))
        await store.facts.add_facts(
            [Stored(make_fact("fact_0000000a", content="User's cat is named Mochi"), [0.0] * 64)]
        )
        nowhere = [0.0] * _embedder.dim  # the vector side finds nothing in particular
        hits = await store.search_messages("u1", "where is Lyon", nowhere, k=2)
        facts = await store.facts.search_facts("u1", "Mochi", nowhere, k=5, scope=None)
    finally:
        await store.aclose()
    assert hits[0][0].text == "we moved to Lyon"
    assert [(h.stored.fact.id, h.text_rank, h.keyword_score) for h in facts] == [
        ("fact_0000000a", 1, 1.0)
    ]


async def test_fact_search_follows_edits_supersession_and_deletion(store: LanceStore) -> None:
    tea = make_fact("fact_00000001", content="User drinks green tea")
    bike = make_fact("fact_00000002", content="User rides a red bike")
    await store.facts.add_facts(
        [Stored(tea, _embedder.embed_one(tea.content)), Stored(bike, _embedder.embed_one("b"))]
    )

    async def text_hits(query: str) -> list[str]:
        found = await store.facts.search_facts(
            "u1", query, _embedder.embed_one(query), k=5, scope=None
        )
        return sorted(h.stored.fact.id for h in found if h.text_rank is not None)

    assert await text_hits("tea") == ["fact_00000001"]
    coffee = msgspec.structs.replace(tea, content="User drinks black coffee")
    await store.facts.put_facts([Stored(coffee, _embedder.embed_one(coffee.content))])
    assert await text_hits("tea") == []
    assert await text_hits("coffee") == ["fact_00000001"]
    gone = msgspec.structs.replace(bike, validity="superseded")
    await store.facts.put_facts([Stored(gone, _embedder.embed_one("b"))])
    assert await text_hits("bike") == []
    assert [s.fact.id for s in await store.facts.facts_of("u1")] == ["fact_00000001"]
    await store.facts.delete_facts("u1", ["fact_00000001"], purge_now=False)
    assert await store.facts.facts_of("u1") == []
    assert len(await store.facts.facts_of("u1", active_only=False)) == 1


async def test_the_reply_to_a_matching_message_is_lifted_by_it(store: LanceStore) -> None:
    # The reply says what was asked about only through its neighbour.
    asked = message(1, "Which mountain did you climb in April?", session="trip")
    reply = message(2, "Yes, it was cold at the top", session="trip")
    noise = [message(n, f"unrelated chat {n}", session=f"n{n}") for n in range(3, 12)]
    await put(store, asked, reply, *noise)
    nowhere = [0.0] * _embedder.dim
    hits = await store.search_messages("u1", "mountain climb april", nowhere, k=2)
    assert [m.id for m, _ in hits] == [asked.id, reply.id]


def test_neighbours_follow_time_within_a_session_whatever_the_arrival_order() -> None:
    entry = MessageEntry(2)
    rows = [message(3, "c"), message(1, "a"), message(9, "x", session="s2"), message(2, "b")]
    entry.add(columns_of(rows), np.zeros((4, 2)), [[] for _ in rows])
    first, third, other, second = range(4)  # positions, in arrival order
    assert entry.neighbours(third) == (-1, second)
    assert entry.neighbours(second) == (third, first)
    assert entry.neighbours(first) == (second, -1)
    assert entry.neighbours(other) == (-1, -1)
    entry.remove([message(2, "").id])  # splice it out
    assert entry.neighbours(third) == (-1, first)
    assert entry.neighbours(first) == (third, -1)
    entry.add(columns_of([message(4, "d")]), np.zeros((1, 2)), [[]])
    assert entry.neighbours(first) == (third, 4)
    assert entry.neighbours(4) == (first, -1)


def test_a_share_of_the_better_neighbour_lifts_a_message() -> None:
    links = {0: (-1, 1), 1: (0, 2), 2: (1, -1)}
    lifted = with_neighbours({0: 1.0, 2: 0.2}, links.__getitem__, 0.5, None)
    assert lifted == pytest.approx({0: 1.0, 1: 0.5, 2: 0.2})
    hidden = np.array([True, False, True])
    assert 1 not in with_neighbours({0: 1.0}, links.__getitem__, 0.5, hidden)


def _unit(x: float, y: float) -> list[float]:
    """A 2-D direction in the store's 64 dimensions."""
    return [x, y] + [0.0] * (_embedder.dim - 2)


async def _kiwis(store: LanceStore) -> dict[str, str]:
    """Four messages in sessions of their own (no neighbours), with chosen vectors: by vector
    the ranks are D 1, A 2, C 3, E 4; by text (BM25 of "kiwi") A 1, D 2."""
    rows = {
        "A": (message(1, "kiwi kiwi", session="a"), _unit(0.8, 0.6)),
        "D": (message(2, "kiwi with a few other words here", session="d"), _unit(1.0, 0.0)),
        "C": (message(3, "plain banana", session="c"), _unit(0.6, 0.8)),
        "E": (message(4, "apple pie", session="e"), _unit(0.0, 1.0)),
    }
    await store.append_messages([m for m, _ in rows.values()], [v for _, v in rows.values()])
    return {m.id: name for name, (m, _) in rows.items()}


async def test_hybrid_search_fuses_ranks_by_rrf_k_60_ties_going_to_the_better_vector_rank(
    store: LanceStore,
) -> None:
    # seed 002: 1/(60 + semantic_rank) + 1/(60 + keyword_rank), a missing rank = limit + 1
    # (each side is searched 2k deep, at least 60), ordered by rrf_score desc then
    # semantic_rank asc.
    names = await _kiwis(store)
    hits = await store.search_messages("u1", "kiwi", _unit(1.0, 0.0), k=3)
    assert [names[m.id] for m, _ in hits] == ["D", "A", "C"]  # D and A tie; D is nearer
    depth = max(2 * 3, 60)
    rrf = {"D": 1 / 61 + 1 / 62, "A": 1 / 62 + 1 / 61, "C": 1 / 63 + 1 / (60 + depth + 1)}
    score = {names[m.id]: s for m, s in hits}
    assert score["D"] == score["A"]
    assert score["C"] / score["D"] == pytest.approx(rrf["C"] / rrf["D"], rel=1e-6)


async def test_semantic_search_scores_by_cosine_similarity_and_keyword_search_by_bm25(
    store: LanceStore,
) -> None:
    names = await _kiwis(store)
    semantic = await store.search_messages("u1", "kiwi", _unit(1.0, 0.0), k=4, mode="semantic")
    cosines: list[tuple[str, object]] = [
        ("D", pytest.approx(1.0)),
        ("A", pytest.approx(0.8)),
        ("C", pytest.approx(0.6)),
        ("E", pytest.approx(0.0, abs=1e-6)),
    ]
    assert [(names[m.id], s) for m, s in semantic] == cosines
    keyword = await store.search_messages("u1", "kiwi", _unit(1.0, 0.0), k=4, mode="keyword")
    assert [names[m.id] for m, _ in keyword] == ["A", "D"]
    assert keyword[0][1] > keyword[1][1] > 0
    for blank in ("", " \x00\t"):  # seed 002: an empty query finds nothing by text
        assert await store.search_messages("u1", blank, _unit(1, 0), k=4, mode="keyword") == []
        facts = await store.facts.search_facts(
            "u1", blank, _unit(1, 0), k=4, scope=None, mode="keyword"
        )
        assert facts == []


async def test_a_message_is_indexed_as_one_clean_line_of_at_most_one_mib(
    store: LanceStore, tmp_path: Path
) -> None:
    long = message(2, "茶" * (MAX_INDEXED_BYTES // 3 + 100), session="s2")
    await put(store, message(1, "green\x00 tea\t\tand\n\ncake  "), long)
    db = await lancedb.connect_async(tmp_path / "db")
    table = await db.open_table("messages")
    rows = await table.query().select(["turn", "search_text"]).to_list()
    indexed = {r["turn"]: r["search_text"] for r in rows}
    table.close()  # type: ignore[no-untyped-call]  # lancedb leaves close() unannotated
    db.close()  # type: ignore[no-untyped-call]  # lancedb leaves close() unannotated
    assert indexed[1].endswith("] user: green tea and cake")
    assert "\x00" not in indexed[1]
    assert MAX_INDEXED_BYTES - 3 < len(indexed[2].encode()) <= MAX_INDEXED_BYTES
    assert indexed[2].endswith("茶")
    hits = await store.search_messages("u1", "cake", _embedder.embed_one("cake"), k=1)
    assert [m.text for m, _ in hits] == ["green\x00 tea\t\tand\n\ncake  "]  # the text as said


@asynccontextmanager
async def _stored_twice(
    store: LanceStore, tmp_path: Path, turn: int
) -> AsyncIterator[tuple[LanceStore, Any]]:
    """``store`` closed, its message ``turn`` added to the table again (as two cluster
    nodes moving the same journaled rows at once can: docs/scaling.md), and the store
    opened again; with the table."""
    await store.aclose()
    db = await lancedb.connect_async(tmp_path / "db")
    table = await db.open_table("messages")
    await table.add(await table.query().where(f"turn = {turn}").to_arrow())
    assert await table.count_rows(f"turn = {turn}") == 2
    reopened = LanceStore(tmp_path / "db", embedder=_embedder)
    await reopened.open()
    try:
        yield reopened, table
    finally:
        await reopened.aclose()
        await table.checkout_latest()  # type: ignore[no-untyped-call]  # lancedb: unannotated
        table.close()  # type: ignore[no-untyped-call]  # lancedb leaves close() unannotated
        db.close()  # type: ignore[no-untyped-call]  # lancedb leaves close() unannotated


@pytest.mark.parametrize(("limit", "offset"), [(10, 0), (2, 0), (1, 1), (1, 2)])
async def test_a_message_stored_twice_is_listed_once_and_stored_once_again(
    store: LanceStore, tmp_path: Path, limit: int, offset: int
) -> None:
    # The copies list as neighbours, maybe across a page's edge: the listing deletes
    # all but one and lists the rest as they were.
    await put(store, *(message(n, f"note {n}") for n in (1, 2, 3)))
    async with _stored_twice(store, tmp_path, 2) as (reopened, table):
        messages, total = await reopened.list_messages("u1", limit=limit, offset=offset)
        assert ([m.turn for m in messages], total) == ([3, 2, 1][offset : offset + limit], 3)
        await table.checkout_latest()
        assert await table.count_rows("turn = 2") == 1


async def test_a_message_stored_twice_is_found_once_and_deleted_whole(
    store: LanceStore, tmp_path: Path
) -> None:
    # A user loaded from such a table holds the message once.
    await put(store, message(1, "secret plan alpha"), message(2, "secret plan beta"))
    async with _stored_twice(store, tmp_path, 1) as (reopened, table):
        assert sorted(await _found(reopened, "secret plan")) == [
            "secret plan alpha",
            "secret plan beta",
        ]
        assert await reopened.delete_message("u1", message(1, "").id)
        assert await _found(reopened, "secret plan") == ["secret plan beta"]
        await table.checkout_latest()
        assert await table.count_rows("turn = 1") == 0


_SAID = [
    "we adopted a puppy from the shelter",
    "the puppy chewed my new shoes",
    "berlin marathon training starts monday",
    "我们在柏林跑了马拉松",
    "my sister visited with her dog",
]


async def _learning(path: Path) -> LanceStore:
    store = LanceStore(path, embedder=_embedder, learned=HashSparseEncoder())
    await store.open()
    return store


async def test_with_a_sparse_model_a_reopened_store_ranks_as_the_warm_one(tmp_path: Path) -> None:
    # The warm store encodes messages as they are appended, the reopened one as it loads
    # them: the same vectors, so the same three lists and the same hits.
    warm = await _learning(tmp_path / "db")
    try:
        await put(warm, *(message(i, t, session=f"s{i}") for i, t in enumerate(_SAID)))
        asked = await warm.search_messages("u1", "puppy", _embedder.embed_one("puppy"), k=5)
    finally:
        await warm.aclose()
    cold = await _learning(tmp_path / "db")
    try:
        again = await cold.search_messages("u1", "puppy", _embedder.embed_one("puppy"), k=5)
    finally:
        await cold.aclose()
    assert [m.text for m, _ in asked][:2] == [_SAID[0], _SAID[1]]
    approximately: list[tuple[str, object]] = [(m.id, pytest.approx(s)) for m, s in asked]
    assert approximately == [(m.id, s) for m, s in again]


async def test_a_query_the_sparse_model_has_no_terms_for_ranks_as_without_it(
    tmp_path: Path, store: LanceStore
) -> None:
    learning = await _learning(tmp_path / "learning")
    try:
        for each in (store, learning):
            await put(each, *(message(i, t, session=f"s{i}") for i, t in enumerate(_SAID)))
        # A Chinese query gets no learned terms: the same hits with the same scores.
        query = "柏林马拉松"
        plain = await store.search_messages("u1", query, _embedder.embed_one(query), k=5)
        learned = await learning.search_messages("u1", query, _embedder.embed_one(query), k=5)
        approximately: list[tuple[str, object]] = [(m.id, pytest.approx(s)) for m, s in plain]
        assert approximately == [(m.id, s) for m, s in learned]
        # An English one is ranked by three lists, its scores still within 0..1.
        query = "berlin marathon"
        hits = await learning.search_messages("u1", query, _embedder.embed_one(query), k=5)
        assert hits[0][0].text == _SAID[2]
        assert 0.0 < hits[0][1] <= 1.0
    finally:
        await learning.aclose()
