"""Saved message indexes (``server.adapters.index_files``): a large user's index is read
back from its file after a restart, and the file is never wrong: every write deletes
it first, and a save raced by a write is not put in place."""

from __future__ import annotations

import errno
import os
import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from memory.hashing import HashEmbedder
from memory.search_index import SearchIndex
from schemas.records import ArchivedMessage
from server.adapters.index_files import IndexFiles, UnreadableIndex
from server.adapters.lance_store import LanceStore
from server.adapters.message_entry import MessageEntry
from server.adapters.message_search import MessageSearch
from tests.stored_rows import everything_on_disk, message, put

pytestmark = pytest.mark.anyio

_embedder = HashEmbedder()
_TOPICS = ["sailing", "violin", "sourdough", "chess", "tomatoes", "marathon", "kyoto"]


def _text(n: int) -> str:
    return f"note {n} about {_TOPICS[n % len(_TOPICS)]} and item{n}"


def _note(n: int, *, user: str = "u1") -> ArchivedMessage:
    """Each in its own session: the hash embedder's unrelated texts tie at cosine 0, and
    neighbours in one session would lift each other above the one that matches."""
    return message(n, _text(n), user=user, session=f"s{n}")


def _store(root: Path, *, save_from: int = 10, save_after: float = 30.0) -> LanceStore:
    return LanceStore(
        root / "db",
        embedder=_embedder,
        journal=root / "journal",
        indexes=root / "indexes",
        save_index_from=save_from,
        save_index_after=save_after,
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[LanceStore]:
    store = _store(tmp_path)
    await store.open()
    yield store
    await store.aclose()


async def _ask(store: LanceStore, text: str, user: str = "u1") -> list[str]:
    hits = await store.search_messages(user, text, _embedder.embed_one(text), k=5)
    return [m.text for m, _ in hits]


def _no_table_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on (after the store's open, which reads a user of no messages)."""

    async def refused(self: MessageSearch, user_id: str) -> MessageEntry:
        raise AssertionError(f"read user {user_id} from the table")

    monkeypatch.setattr(MessageSearch, "_read_messages", refused)


def _saved_files(root: Path) -> list[Path]:
    return sorted((root / "indexes").glob("*.idx"))


async def _saved_user(root: Path, notes: int, question: str) -> tuple[list[str], Path]:
    """A store at ``root`` with ``notes`` notes of user u1, closed (their index saved): what
    ``question`` found, and the saved file."""
    store = _store(root)
    await store.open()
    await put(store, *(_note(n) for n in range(notes)))
    found = await _ask(store, question)
    await store.aclose()
    [saved] = _saved_files(root)
    return found, saved


async def test_a_large_users_first_search_after_a_restart_reads_their_saved_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    await store.open()
    await put(store, *(_note(n) for n in range(40)))
    await put(store, *(_note(n, user="small") for n in range(100, 103)))
    questions = ["sourdough", "item17", "violin item22", "kyoto marathon"]
    before = [await _ask(store, q) for q in questions]
    assert await _ask(store, "sourdough", user="small")  # loaded, and too small to save
    await store.aclose()
    assert len(_saved_files(tmp_path)) == 1

    store = _store(tmp_path)
    await store.open()
    _no_table_reads(monkeypatch)
    try:
        assert [await _ask(store, q) for q in questions] == before
        hits = await store.search_messages("u1", "item17", _embedder.embed_one("item17"), k=40)
        assert _note(17) in [m for m, _ in hits]  # every field
    finally:
        await store.aclose()


async def test_a_saved_index_that_cannot_be_read_mid_use_is_dropped_and_the_table_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, saved = await _saved_user(tmp_path, 40, "sourdough item9")

    store = _store(tmp_path)
    await store.open()
    try:
        assert await _ask(store, "violin") != []  # loaded from the file

        def failing(fd: int, size: int, offset: int) -> bytes:
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(os, "pread", failing)  # the disk fails under the file's texts
        assert await _ask(store, "sourdough item9") == before
        assert "their saved index cannot be read" in caplog.text
        assert not saved.exists()
        assert await _ask(store, "sourdough item9") == before  # and stays served
    finally:
        await store.aclose()


async def test_a_message_written_after_the_save_is_found_after_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    await store.open()
    await put(store, *(_note(n) for n in range(20)))
    await _ask(store, "violin")
    assert await store._search.saver.save() == 1
    assert len(_saved_files(tmp_path)) == 1
    await put(store, message(50, "a pelican named Gus", session="p"))
    assert _saved_files(tmp_path) == []  # gone before the write was acknowledged
    # The process dies here: no close, its journal still holds the message.
    store._messages_table.close()  # (only its file handle, as the kernel would)
    store = _store(tmp_path)
    await store.open()
    try:
        assert (await _ask(store, "pelican Gus"))[0] == "a pelican named Gus"
        await store.aclose()  # read from the table, so saved again
        assert len(_saved_files(tmp_path)) == 1
        store = _store(tmp_path)
        await store.open()
        _no_table_reads(monkeypatch)
        assert (await _ask(store, "pelican Gus"))[0] == "a pelican named Gus"
    finally:
        await store.aclose()


async def test_a_deleted_message_leaves_no_saved_index_holding_its_text(
    tmp_path: Path, store: LanceStore
) -> None:
    secret = "zebra-crossing-7731"
    await put(store, *(_note(n) for n in range(20)), message(30, f"hint {secret}", session="h"))
    await _ask(store, "hint")
    assert await store._search.saver.save() == 1
    assert secret.encode() in everything_on_disk(tmp_path / "indexes")
    assert await store.delete_message("u1", message(30, "").id)
    assert secret.encode() not in everything_on_disk(tmp_path / "indexes")
    assert all("zebra" not in text for text in await _ask(store, "hint zebra crossing"))
    assert await store._search.saver.save() == 1  # saved again, without it
    assert _saved_files(tmp_path)
    assert secret.encode() not in everything_on_disk(tmp_path / "indexes")


async def test_clearing_a_users_messages_deletes_their_saved_index(
    tmp_path: Path, store: LanceStore
) -> None:
    await put(store, *(_note(n) for n in range(20)))
    await put(store, *(_note(n, user="u2") for n in range(20)))
    await _ask(store, "violin")
    await _ask(store, "violin", user="u2")
    assert await store._search.saver.save() == 2
    assert await store.clear_messages("u1") == 20
    assert len(_saved_files(tmp_path)) == 1
    assert await _ask(store, "violin") == []
    assert await store._search.saver.save() == 0  # nothing left to save
    assert len(await _ask(store, "violin", user="u2")) == 3  # notes 1, 8 and 15


async def test_a_damaged_or_foreign_saved_index_is_deleted_and_the_table_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    expected, saved = await _saved_user(tmp_path, 20, "chess")
    data = bytearray(saved.read_bytes())
    saved.write_bytes(data[: len(data) // 2])  # cut short
    store = _store(tmp_path)
    await store.open()
    try:
        assert await _ask(store, "chess") == expected
        assert "not their saved index" in caplog.text
    finally:
        await store.aclose()

    files = IndexFiles(tmp_path / "indexes", embedder="another", dim=_embedder.dim)
    files.open()
    with pytest.raises(UnreadableIndex, match="another"):
        files.read("u1")


def test_a_save_raced_by_a_write_is_not_put_in_place(tmp_path: Path) -> None:
    files = IndexFiles(tmp_path, embedder="hash", dim=4)
    files.open()
    entry = MessageEntry(4)
    columns: dict[str, Sequence[Any]] = {
        "id": ["a", "b"],
        "session_id": ["s", "s"],
        "scope": ["global", "global"],
        "turn": [1, 2],
        "role": ["user", "assistant"],
        "speaker": ["user", "assistant"],
        "text": ["one", "two"],
        "at": [1.0, 2.0],
        "meta": ["{}", "{}"],
        "source_id": ["", ""],
    }
    entry.add(columns, np.eye(4, dtype=np.float32)[:2], [["one"], ["two"]])
    token = files.token("u1")
    path = files.write("u1", entry.saving()())
    files.accept(["u1"])  # a write arrives while the file was being written
    assert not files.install("u1", path, token)
    assert not files.has("u1")
    assert not any(tmp_path.iterdir())

    token = files.token("u1")
    assert files.install("u1", files.write("u1", entry.saving()()), token)
    assert files.has("u1")
    files.accept(["u1"])
    assert not files.has("u1")
    assert not any(tmp_path.iterdir())


def _entry(dim: int, rows: int, seed: int, *, remove: bool = True, pad: int = 0) -> MessageEntry:
    rng = np.random.default_rng(seed)
    entry = MessageEntry(dim)
    vectors = rng.normal(size=(rows, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = ["apple", "pear", "plum", "fig", "kiwi", "lime", "宝宝", "\udcff"]
    terms = [[words[i % 8], words[(i * 3) % 8], f"w{i % 50}"] for i in range(rows)]
    start = 0
    while start < rows:  # large batches (runs of postings), then small ones (the tail)
        end = min(rows, start + (300 if start < 900 else 7))
        part = range(start, end)
        entry.add(
            {
                "id": [f"m{i}" for i in part],
                "session_id": [f"s{i % 13}" for i in part],
                "scope": ["global" if i % 5 else "work" for i in part],
                "turn": list(part),
                "role": ["user" if i % 2 else "assistant" for i in part],
                "speaker": ["user" if i % 2 else "assistant" for i in part],
                "text": [f"text {i} 宝宝 \udcff" + " more words" * pad for i in part],
                "at": [float(1_000_000 + (i * 7919) % rows) for i in part],
                "meta": [f'{{"n": {i}}}' for i in part],
                "source_id": [f"src{i}" for i in part],
            },
            vectors[start:end],
            terms[start:end],
        )
        start = end
    if remove:
        entry.remove([f"m{i}" for i in range(0, rows, 17)])
    return entry


def _live(entry: MessageEntry) -> list[int]:
    return sorted(entry.positions.values())


def _by_id(entry: MessageEntry, values: Any) -> dict[str, Any]:
    return {entry.ids[p]: values[p] for p in _live(entry)}


def _links(entry: MessageEntry) -> dict[str, tuple[str | None, str | None]]:
    def name(p: int) -> str | None:
        return None if p < 0 else entry.ids[p]

    links = {}
    for p in _live(entry):
        before, after = entry.neighbours(p)
        links[entry.ids[p]] = (name(before), name(after))
    return links


def _same(back: MessageEntry, entry: MessageEntry, dim: int) -> None:
    """The same messages, rows, neighbours and scores, message by message."""
    assert [back.ids[p] for p in _live(back)] == [entry.ids[p] for p in _live(entry)]
    assert _links(back) == _links(entry)
    assert _by_id(back, [back.row(p, "u1") for p in range(len(back.ids))]) == _by_id(
        entry, [entry.row(p, "u1") for p in range(len(entry.ids))]
    )
    query = np.random.default_rng(5).normal(size=dim).astype(np.float32)
    for scope in (None, "work", "home"):
        mask, again = entry.index.visible(scope), back.index.visible(scope)
        dense = back.index.dense_scores(query, again)
        expected = _by_id(entry, entry.index.dense_scores(query, mask))
        assert _by_id(back, dense) == pytest.approx(expected, rel=1e-5)  # (BLAS on other rows)
        for terms in (["plum"], ["w7", "宝宝"], ["\udcff", "fig"], ["late"], ["absent"]):
            sparse = back.index.sparse_scores(terms, again)
            assert _by_id(back, sparse) == _by_id(entry, entry.index.sparse_scores(terms, mask))


def test_a_saved_entry_reads_back_the_same_without_its_removed_messages(tmp_path: Path) -> None:
    dim, rows = 16, 1_000
    entry = _entry(dim, rows, seed=3)
    entry.index.install(entry.index.fit_projection())
    files = IndexFiles(tmp_path, embedder="hash", dim=dim)
    files.open()
    assert files.install("u1", files.write("u1", entry.saving()()), files.token("u1"))
    back = MessageEntry.restored(dim, files.read("u1"))
    assert len(back.ids) == len(back.positions) == len(entry.positions) < rows
    assert back.index.removed == 0
    assert "text 17 " not in " ".join(back.texts())  # removed: not saved
    assert not back.index.wants_projection
    _same(back, entry, dim)

    for held in (entry, back):  # and both go on alike
        held.add(
            {
                "id": ["new"],
                "session_id": ["s1"],
                "scope": ["global"],
                "turn": [0],
                "role": ["user"],
                "speaker": ["user"],
                "text": ["late"],
                "at": [0.5],
                "meta": ["{}"],
                "source_id": [""],
            },
            np.ones((1, dim), dtype=np.float32) / np.sqrt(dim),
            [["plum", "late"]],
        )
        held.remove([f"m{i}" for i in range(1, 1_000, 2)])
    _same(back, entry, dim)

    # Saved with nothing removed, it is the same position by position.
    whole = _entry(dim, 300, seed=4, remove=False)
    files.accept(["u1"])
    assert files.install("u1", files.write("u1", whole.saving()()), files.token("u1"))
    again = MessageEntry.restored(dim, files.read("u1"))
    assert again.ids == whole.ids
    assert [again.row(p, "u1") for p in range(300)] == [whole.row(p, "u1") for p in range(300)]
    assert again.nbytes() < whole.nbytes()  # texts kept encoded, not a string each
    assert [again.neighbours(p) for p in range(300)] == [whole.neighbours(p) for p in range(300)]


def test_what_each_message_states_is_saved_so_a_loaded_user_reads_no_text_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dim = 16
    entry = _entry(dim, 400, seed=6)
    for n, text in enumerate(["I ran 5 km on Monday", "We met Anna", "nothing here"]):
        entry.add(
            {
                "id": [f"said{n}"],
                "session_id": ["s1"],
                "scope": ["global"],
                "turn": [n],
                "role": ["user"],
                "speaker": ["user"],
                "text": [text],
                "at": [2e6 + n],
                "meta": ["{}"],
                "source_id": [""],
            },
            np.ones((1, dim), dtype=np.float32) / np.sqrt(dim),
            [["said"]],
        )
    entry.stated(entry.positions["said0"])  # one read before the save, the rest by it
    expected = {ident: entry.stated(p) for ident, p in entry.positions.items()}
    files = IndexFiles(tmp_path, embedder="hash", dim=dim)
    files.open()
    assert files.install("u1", files.write("u1", entry.saving()()), files.token("u1"))
    back = MessageEntry.restored(dim, files.read("u1"))

    def unread(*_: object) -> int:
        raise AssertionError("a message's text was read to learn what it states")

    monkeypatch.setattr("server.adapters.message_entry.stated", unread)
    assert {ident: back.stated(p) for ident, p in back.positions.items()} == expected
    assert expected["said0"] != expected["said2"]  # a number, a time, a name against none


async def test_changed_indexes_are_saved_in_the_background_once_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path, save_after=1.0)
    await store.open()
    try:
        async with anyio.create_task_group() as tasks:
            await tasks.start(store.run_indexing)
            await put(store, *(_note(n) for n in range(20)))
            await _ask(store, "violin")
            with anyio.fail_after(10):
                while not _saved_files(tmp_path):
                    await anyio.sleep(0.02)
            await put(store, message(40, "a kestrel over the dunes", session="k"))
            assert _saved_files(tmp_path) == []
            await anyio.sleep(0.1)
            assert _saved_files(tmp_path) == []  # not yet quiet
            with anyio.fail_after(10):
                while not _saved_files(tmp_path):
                    await anyio.sleep(0.02)
            tasks.cancel_scope.cancel()
    finally:
        await store.aclose()
    store = _store(tmp_path)
    await store.open()
    _no_table_reads(monkeypatch)
    try:
        assert (await _ask(store, "kestrel dunes"))[0] == "a kestrel over the dunes"
    finally:
        await store.aclose()


def test_an_index_restored_from_its_state_keeps_its_projection() -> None:
    rng = np.random.default_rng(0)
    index = SearchIndex(32)
    vectors = rng.normal(size=(500, 32)).astype(np.float32)
    index.add(vectors, [["x"]] * 500, ["global"] * 500)
    index.install(index.fit_projection())
    back = SearchIndex.restored(32, index.state())
    assert not back.wants_projection
    assert back.dense_top(vectors[3], None, 5) == index.dense_top(vectors[3], None, 5)


async def test_a_user_written_to_while_not_in_memory_is_loaded_and_saved_once_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path, save_after=0.3)
    await store.open()
    try:
        async with anyio.create_task_group() as tasks:
            await tasks.start(store.run_indexing)
            await put(store, *(_note(n, user="imported") for n in range(30)))  # no search
            await put(store, *(_note(n, user="few") for n in range(3)))
            with anyio.fail_after(10):
                while not _saved_files(tmp_path):
                    await anyio.sleep(0.02)
            tasks.cancel_scope.cancel()
    finally:
        await store.aclose()
    assert len(_saved_files(tmp_path)) == 1  # not the user of three messages
    store = _store(tmp_path)
    await store.open()
    _no_table_reads(monkeypatch)
    try:
        assert (await _ask(store, "item17", user="imported"))[0] == _text(17)
    finally:
        await store.aclose()


def _mapped_bytes(path: Path) -> int:
    """How much of ``path`` this process has in memory through its mappings."""
    held, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"[0-9a-f]+-[0-9a-f]+ ", line):  # a mapping's first line
            inside = line.endswith(str(path))
        elif inside and line.startswith("Rss:"):
            held += int(line.split()[1]) * 1024
    return held


def test_a_read_back_entry_reads_texts_and_postings_from_the_file_not_from_memory(
    tmp_path: Path,
) -> None:
    dim = 16
    entry = _entry(dim, 2_000, seed=6, remove=False, pad=100)
    texts_bytes = 2_000 * 1_000
    files = IndexFiles(tmp_path, embedder="hash", dim=dim)
    files.open()
    assert files.install("u1", files.write("u1", entry.saving()()), files.token("u1"))
    back = MessageEntry.restored(dim, files.read("u1"))
    path = files.path("u1")
    size = path.stat().st_size
    _same(back, entry, dim)  # every row, text and word read

    # What stays mapped is the vectors, lengths, scopes and the strings' ends.
    assert 0 < _mapped_bytes(path) < size - texts_bytes
    # The file deleted (a write accepted), what was read from it still reads.
    files.accept(["u1"])
    assert not path.exists()
    _same(back, entry, dim)
    # Saved again from what was read back (the stored parts copied from the old file).
    assert files.install("u1", files.write("u1", back.saving()()), files.token("u1"))
    _same(MessageEntry.restored(dim, files.read("u1")), entry, dim)
