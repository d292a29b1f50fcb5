"""Two servers on one data directory (a cluster's nodes): one user's delete on one node
drops the table's old versions at once, and the other node, reading or writing other
users from the version it saw last, carries on from the latest one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.hashing import HashEmbedder
from server.adapters.lance_store import LanceStore
from tests.stored_rows import everything_on_disk, message

pytestmark = pytest.mark.anyio
_embedder = HashEmbedder()


@pytest.fixture
async def nodes(tmp_path: Path) -> AsyncIterator[tuple[LanceStore, LanceStore]]:
    one = LanceStore(tmp_path / "db", embedder=_embedder, shared=True)
    other = LanceStore(tmp_path / "db", embedder=_embedder, shared=True)
    await one.open()
    await other.open()
    yield one, other
    await one.aclose()
    await other.aclose()


async def test_a_purge_on_one_node_fails_no_read_or_write_of_another_users_on_the_other(
    nodes: tuple[LanceStore, LanceStore], tmp_path: Path
) -> None:
    one, other = nodes
    said = [message(1, "secret of alice", user="alice")]
    said += [message(n, f"bob says {n}", user="bob") for n in (2, 3, 4)]
    await one.append_messages(said, [_embedder.embed_one(m.text) for m in said])
    await other.refresh()
    assert (await other.list_messages("bob", limit=5, offset=0))[1] == 3  # its view
    assert await one.delete_message("alice", said[0].id)  # old versions purged
    assert b"secret of alice" not in everything_on_disk(tmp_path)
    assert (await other.list_messages("bob", limit=5, offset=0))[1] == 3
    hits = await other.search_messages("bob", "says", _embedder.embed_one("says"), k=5)
    assert len(hits) == 3
    assert await one.delete_message("alice", "msg_missing") is False
    await one.append_messages([message(5, "alice again", user="alice")], [_embedder.embed_one("x")])
    assert await one.delete_message("alice", message(5, "").id)  # and purged again
    assert await other.delete_message("bob", said[1].id)  # a write from the stale view
    assert (await other.list_messages("bob", limit=5, offset=0))[1] == 2
