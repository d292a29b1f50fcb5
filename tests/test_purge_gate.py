"""Purging old LanceDB versions never pulls files from under a running read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory.hashing import HashEmbedder
from schemas.records import AppNote
from server.adapters.lance_common import PurgeGate
from server.adapters.lance_store import LanceStore
from tests.stored_rows import MESSAGES_T0

pytestmark = pytest.mark.anyio


class _Table:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def optimize(self, **options: Any) -> None:
        self.log.append("purge")
        await anyio.sleep(0.05)
        self.log.append("purged")


async def test_a_purge_waits_for_running_reads_and_holds_new_ones_back() -> None:
    gate, log = PurgeGate(), list[str]()
    release = anyio.Event()

    async def slow_read() -> None:
        log.append("read 1")
        await release.wait()
        log.append("read 1 done")

    async def quick_read() -> None:
        log.append("read 2")

    async with anyio.create_task_group() as tg:
        tg.start_soon(gate.read, slow_read)
        await anyio.sleep(0.01)
        tg.start_soon(gate.purge, _Table(log))
        await anyio.sleep(0.01)
        tg.start_soon(gate.read, quick_read)
        await anyio.sleep(0.01)
        assert log == ["read 1"]
        release.set()
    assert log == ["read 1", "read 1 done", "purge", "purged", "read 2"]


async def test_a_cancelled_read_still_lets_purges_through() -> None:
    gate, log = PurgeGate(), list[str]()
    with anyio.move_on_after(0.01):
        await gate.read(anyio.sleep_forever)
    with anyio.fail_after(5):
        await gate.purge(_Table(log))
    assert log == ["purge", "purged"]


def _note(n: int) -> AppNote:
    at = MESSAGES_T0 + timedelta(seconds=n)
    return AppNote(
        id=f"note_{n:08x}",
        user_id="u1",
        app_id="cal",
        content=f"Note {n} " + "x" * 200,
        created_at=at,
        updated_at=at,
        source_session_id=f"s{n}",
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[LanceStore]:
    store = LanceStore(tmp_path / "db", embedder=HashEmbedder())
    await store.open()
    yield store
    await store.aclose()


async def test_reads_during_repeated_deletes_of_real_notes_never_fail(store: LanceStore) -> None:
    """The bench that found it: FIFO compaction deleted notes while the panel listed them."""
    notes = store.facts
    await notes.put_notes([_note(n) for n in range(10)])
    done = anyio.Event()
    reads = 0

    async def read_all_the_time() -> None:
        nonlocal reads
        while not done.is_set():
            await notes.notes_of("u1", "cal")
            await notes.count_notes("u1", "cal")
            reads += 1

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(read_all_the_time)
        for n in range(10, 40):
            await notes.put_notes([_note(n)])
            await notes.delete_notes("u1", "cal", [_note(n - 10).id])
        done.set()
    assert reads > 0
    assert [n.id for n in await notes.notes_of("u1", "cal")] == [
        _note(n).id for n in range(39, 29, -1)
    ]


async def test_a_purge_in_a_cluster_leaves_files_no_version_names_yet() -> None:
    class Recording:
        def __init__(self) -> None:
            self.options: list[dict[str, Any]] = []

        async def optimize(self, **options: Any) -> None:
            self.options.append(options)

    alone, shared = Recording(), Recording()
    await PurgeGate().purge(alone)
    await PurgeGate(shared=True).purge(shared)
    # Alone, no write of the table can be in flight; in a cluster another node's can.
    assert alone.options == [{"cleanup_older_than": timedelta(0), "delete_unverified": True}]
    assert shared.options == [{"cleanup_older_than": timedelta(0), "delete_unverified": False}]
