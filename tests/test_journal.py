"""The archive's journal: acked messages survive a crash, replay once, and never linger."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pytest

from actors.errors import ArchiveUnavailable
from memory.hashing import HashEmbedder
from server.adapters import journal as journal_module
from server.adapters.journal import Journal
from server.adapters.lance_store import LanceStore
from tests.stored_rows import message, put

pytestmark = pytest.mark.anyio

_embedder = HashEmbedder()


def _vectors(n: int) -> np.ndarray:
    return np.arange(n * _embedder.dim, dtype=np.float32).reshape(n, _embedder.dim)


async def _open(tmp_path: Path, *, journal: bool = True) -> LanceStore:
    store = LanceStore(
        tmp_path / "db", embedder=_embedder, journal=tmp_path / "journal" if journal else None
    )
    await store.open()
    return store


def _edit_the_only_file(directory: Path, edit: Callable[[bytes], bytes]) -> None:
    [path] = directory.glob("*.journal")
    path.write_bytes(edit(path.read_bytes()))


def _crash(store: LanceStore) -> None:
    """Leave the store as a killed process would: nothing flushed, files as they are."""
    store._messages_table.close()


async def test_a_journal_reads_back_its_records_in_order(tmp_path: Path) -> None:
    journal = Journal(tmp_path, _embedder.dim)
    journal.recover()
    await journal.append([message(1, "one")], _vectors(1))
    await journal.append([message(2, "two"), message(3, "three")], _vectors(2))
    journal.close()
    [segment] = Journal(tmp_path, _embedder.dim).recover()
    assert [m.text for m in segment.rows] == ["one", "two", "three"]
    assert segment.rows[0] == message(1, "one")
    assert np.array_equal(segment.matrix(_embedder.dim)[1:], _vectors(2))


async def test_a_torn_last_record_is_dropped_and_the_records_before_it_kept(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path, _embedder.dim)
    journal.recover()
    await journal.append([message(1, "kept")], _vectors(1))
    await journal.append([message(2, "torn")], _vectors(1))
    journal.close()
    _edit_the_only_file(tmp_path, lambda data: data[:-7])  # a crash in the middle of a write
    [segment] = Journal(tmp_path, _embedder.dim).recover()
    assert [m.text for m in segment.rows] == ["kept"]


async def test_a_record_whose_checksum_fails_is_dropped(tmp_path: Path) -> None:
    journal = Journal(tmp_path, _embedder.dim)
    journal.recover()
    await journal.append([message(1, "kept")], _vectors(1))
    await journal.append([message(2, "flipped")], _vectors(1))
    journal.close()
    _edit_the_only_file(tmp_path, lambda data: data[:-3] + bytes([data[-3] ^ 0xFF]) + data[-2:])
    [segment] = Journal(tmp_path, _embedder.dim).recover()
    assert [m.text for m in segment.rows] == ["kept"]


async def test_journaled_messages_are_replayed_into_the_table_when_the_store_opens_again(
    tmp_path: Path,
) -> None:
    store = await _open(tmp_path)
    await put(store, message(1, "before the crash"), message(2, "also before"))
    _crash(store)
    again = await _open(tmp_path)
    await again.aclose()
    table_only = await _open(tmp_path, journal=False)  # reads the table alone
    try:
        page, total = await table_only.list_messages("u1", limit=10, offset=0)
    finally:
        await table_only.aclose()
    assert (total, [m.text for m in page]) == (2, ["also before", "before the crash"])
    assert not list((tmp_path / "journal").glob("*.journal"))


async def test_a_journal_replayed_after_its_move_stores_no_message_twice(tmp_path: Path) -> None:
    store = await _open(tmp_path)
    await put(store, message(1, "moved, then the process died"))
    [path] = (tmp_path / "journal").glob("*.journal")
    shutil.copy(path, tmp_path / "copy")
    assert await store.flush_messages() == 1
    _crash(store)
    shutil.copy(tmp_path / "copy", path)  # died after the table had them, before the delete
    again = await _open(tmp_path)
    try:
        assert (await again.list_messages("u1", limit=10, offset=0))[1] == 1
        assert await again.version_count() >= 1
    finally:
        await again.aclose()


async def test_paging_merges_journaled_and_stored_messages_newest_first(tmp_path: Path) -> None:
    store = await _open(tmp_path)
    try:
        await put(store, *(message(n, f"m{n}") for n in (1, 3, 5)))
        await store.flush_messages()
        await put(store, *(message(n, f"m{n}") for n in (2, 4, 6)))  # journaled only
        await put(store, message(7, "other user", user="u2"))
        pages = [await store.list_messages("u1", limit=2, offset=o) for o in (0, 2, 4, 6)]
        session = await store.session_messages("u1", "s1", limit=4)
        ids = await store.existing_message_ids("u1", [message(n, "").id for n in (2, 5, 7)])
        journaled = await store.get_message("u1", message(4, "").id)
    finally:
        await store.aclose()
    assert [[m.text for m in page] for page, _ in pages] == [
        ["m6", "m5"],
        ["m4", "m3"],
        ["m2", "m1"],
        [],
    ]
    assert {total for _, total in pages} == {6}
    assert [m.text for m in session] == ["m3", "m4", "m5", "m6"]
    assert ids == {message(2, "").id, message(5, "").id}
    assert journaled is not None
    assert journaled.text == "m4"


async def test_a_failed_move_keeps_the_messages_journaled_and_a_later_move_stores_them_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await _open(tmp_path)
    table = store._messages_table
    real_add = table._add
    calls = 0

    async def add_that_commits_then_fails(table: pa.Table, rows: int) -> None:
        nonlocal calls
        calls += 1
        await real_add(table, rows)
        if calls == 1:
            raise ArchiveUnavailable("the disk went away after the commit (test)")

    monkeypatch.setattr(table, "_add", add_that_commits_then_fails)
    try:
        await put(store, message(1, "one"), message(2, "two"))
        with pytest.raises(ArchiveUnavailable):
            await store.flush_messages()
        assert (await store.list_messages("u1", limit=10, offset=0))[1] == 2
        assert await store.flush_messages() == 2
        page, total = await store.list_messages("u1", limit=10, offset=0)
    finally:
        await store.aclose()
    assert (total, [m.text for m in page]) == (2, ["two", "one"])
    assert not list((tmp_path / "journal").glob("*.journal"))


async def test_a_search_finds_messages_still_in_the_journal(tmp_path: Path) -> None:
    store = await _open(tmp_path)
    try:
        await put(store, message(1, "we adopted a beagle named Toast"))
        cold = await store.search_messages("u1", "beagle", _embedder.embed_one("beagle"), k=1)
        await put(store, message(2, "Toast learned to sit"))  # the user is held now
        warm = await store.search_messages("u1", "sit", _embedder.embed_one("sit"), k=1)
    finally:
        await store.aclose()
    assert [m.turn for m, _ in cold] == [1]
    assert [m.turn for m, _ in warm] == [2]


async def test_after_a_failed_write_the_journal_goes_on_in_a_new_file_and_loses_no_ack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = Journal(tmp_path, _embedder.dim)
    journal.recover()
    await journal.append([message(1, "acked before")], _vectors(1))

    def half_then_fail(file: BinaryIO, data: bytes) -> None:
        file.write(data[: len(data) // 2])
        raise OSError("disk full (test)")

    monkeypatch.setattr(journal_module, "write_durably", half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        await journal.append([message(2, "never acked")], _vectors(1))
    monkeypatch.undo()
    await journal.append([message(3, "acked after")], _vectors(1))
    journal.close()
    recovered = Journal(tmp_path, _embedder.dim).recover()
    assert [m.text for s in recovered for m in s.rows] == ["acked before", "acked after"]
