"""The cluster's parts against a real S3-compatible server (moto's, in its own process):
the journal's fence and clean-up, and leases passing between two nodes' ``Ownership``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import lancedb
import numpy as np
import pytest

from actors.errors import ArchiveUnavailable, NotHome
from schemas.records import ArchivedMessage
from server.adapters.journal import decode_record
from server.adapters.lance_common import PurgeGate
from server.adapters.lance_messages import JournaledMessages, messages_schema
from server.cluster.indexes import RemoteIndexes
from server.cluster.journal import Fenced, JournalPlace, ShardJournal
from server.cluster.node import FenceRecords
from server.cluster.objects import Objects, PreconditionFailed
from server.cluster.ownership import Hooks, Ownership
from server.cluster.shards import shard_of
from server.cluster.volume import Volume
from tests.s3_bucket import BUCKET, s3

pytestmark = pytest.mark.anyio

__all__ = ["s3"]

_DIM = 4


def _objects(env: dict[str, str]) -> Objects:
    return Objects(f"s3://{BUCKET}/c", env)


@pytest.fixture(params=["bucket", "volume"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> JournalPlace:
    """Where a cluster's journal lives: the bucket, or a shared volume (a directory)."""
    if request.param == "volume":
        return Volume(tmp_path / "journal-volume")
    env: dict[str, str] = request.getfixturevalue("s3")
    return _objects(env)


def _message(user_id: str, n: int) -> ArchivedMessage:
    return ArchivedMessage(
        id=f"m{n}",
        user_id=user_id,
        session_id="s",
        scope="global",
        turn=n,
        role="user",
        speaker="user",
        text=f"{user_id} message {n}",
        at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def _vectors(count: int) -> np.ndarray:
    return np.ones((count, _DIM), np.float32)


async def test_conditional_writes_let_one_of_two_writers_create_or_replace_an_object(
    s3: dict[str, str],
) -> None:
    objects = _objects(s3)
    etag = await objects.put("lease", b"a", create=True)
    with pytest.raises(PreconditionFailed):
        await objects.put("lease", b"b", create=True)
    newer = await objects.put("lease", b"c", replace=etag)
    with pytest.raises(PreconditionFailed):
        await objects.put("lease", b"d", replace=etag)
    assert await objects.get("lease") == (b"c", newer)
    assert await objects.get("missing") is None


async def test_after_the_fence_the_old_owner_cannot_journal_and_the_new_one_has_every_acked_row(
    place: JournalPlace,
) -> None:
    fenced: list[int] = []
    old = ShardJournal(place, _DIM, fenced.append)
    new = ShardJournal(place, _DIM, lambda shard: None)
    shard = shard_of("ann")
    await old.open_shard(shard)
    acked = [_message("ann", n) for n in range(3)]
    await old.append(acked, _vectors(3))
    await new.open_shard(shard)
    with pytest.raises(Fenced):
        await old.append([_message("ann", 9)], _vectors(1))
    assert fenced == [shard]
    with pytest.raises(ArchiveUnavailable):  # and stays out
        await old.append([_message("ann", 10)], _vectors(1))
    replayed = [m for s in new.pending() for m in s.rows]
    assert [m.id for m in replayed] == ["m0", "m1", "m2"]
    assert all(s.maybe_stored for s in new.pending())
    await new.append([_message("ann", 11)], _vectors(1))
    assert len([m for s in new.pending() for m in s.rows]) == 4


async def test_two_nodes_moving_the_same_rows_at_once_leave_each_row_stored_once(
    place: JournalPlace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The new owner checks which replayed rows the table lacks; the old owner's move of
    # the same rows lands right after that check, so both append them: the new owner's
    # move deletes the copies it made.
    schema = messages_schema(_DIM, "hash")
    db = await lancedb.connect_async(tmp_path / "db")
    await db.create_table("messages", schema=schema)
    shard = shard_of("cy")
    old_journal = ShardJournal(place, _DIM, lambda shard: None)
    await old_journal.open_shard(shard)
    old = JournaledMessages(await db.open_table("messages"), schema, PurgeGate(), old_journal)
    await old.append([_message("cy", n) for n in range(3)], _vectors(3))
    new_journal = ShardJournal(place, _DIM, lambda shard: None)
    await new_journal.open_shard(shard)
    new = JournaledMessages(await db.open_table("messages"), schema, PurgeGate(), new_journal)
    check = new._not_stored

    async def old_lands_after_the_check(*args: Any) -> Any:
        kept = await check(*args)
        await old.flush()
        return kept

    monkeypatch.setattr(new, "_not_stored", old_lands_after_the_check)
    assert await new.flush() == 3
    table = await db.open_table("messages")
    assert sorted(row["id"] for row in await table.query().select(["id"]).to_list()) == [
        "m0",
        "m1",
        "m2",
    ]


async def test_rows_moved_into_the_table_leave_only_an_empty_record_holding_the_sequence(
    place: JournalPlace,
) -> None:
    objects = place
    journal = ShardJournal(objects, _DIM, lambda shard: None)
    shard = shard_of("bo")
    await journal.open_shard(shard)
    for n in range(3):
        await journal.append([_message("bo", n)], _vectors(1))
    for segment in await journal.seal():
        await journal.discard(segment)
    [left] = await objects.keys(f"journal/{shard:04d}/")
    found = await objects.get(left.key)
    assert found is not None
    assert decode_record(found[0])[0] == []
    assert journal.pending() == []
    # The next owner fences after it, not on top of it.
    other = ShardJournal(objects, _DIM, lambda shard: None)
    await other.open_shard(shard)
    keys = [item.key for item in await objects.keys(f"journal/{shard:04d}/")]
    assert keys == [left.key, f"journal/{shard:04d}/{int(left.key[-12:]) + 1:012d}"]


async def test_a_journal_volume_creates_a_record_once_syncs_it_and_lists_no_half_written_one(
    tmp_path: Path,
) -> None:
    volume = Volume(tmp_path)
    assert await volume.keys("journal/0001/") == []
    tag = await volume.put("journal/0001/000000000001", b"a", create=True)
    with pytest.raises(PreconditionFailed):  # the fence: a name is created once
        await volume.put("journal/0001/000000000001", b"b", create=True)
    assert await volume.get("journal/0001/000000000001") == (b"a", tag)
    (tmp_path / "journal/0001/.000000000002.1.tmp").write_bytes(b"torn")  # a crash's
    emptied = await volume.put("journal/0001/000000000001", b"")  # a plain write replaces
    assert [item.key for item in await volume.keys("journal/0001/")] == [
        "journal/0001/000000000001"
    ]
    assert await volume.get("journal/0001/000000000001") == (b"", emptied)
    await volume.delete("journal/0001/000000000001")
    await volume.delete("journal/0001/000000000001")  # gone already: no error
    assert await volume.get("journal/0001/000000000001") is None
    with pytest.raises(ValueError, match="not a journal key"):
        await volume.get("../outside")


class _Shards:
    def __init__(self) -> None:
        self.taken: list[int] = []
        self.settled: list[tuple[int, bool]] = []
        self.fenced: list[tuple[str, int]] = []
        self.fencing = self.most_at_once = 0

    async def take(self, shard: int) -> None:
        self.taken.append(shard)

    async def settle(self, shard: int, flush: bool) -> None:
        self.settled.append((shard, flush))

    async def fence(self, user_id: str, epoch: int) -> None:
        self.fenced.append((user_id, epoch))
        self.fencing += 1
        self.most_at_once = max(self.most_at_once, self.fencing)
        await anyio.sleep(0.05)
        self.fencing -= 1

    def hooks(self) -> Hooks:
        return Hooks(self.take, self.settle, self.fence)


async def test_a_live_nodes_user_is_refused_asked_for_handed_over_and_taken_when_it_dies(
    s3: dict[str, str],
) -> None:
    a_shards, b_shards = _Shards(), _Shards()
    a = Ownership(_objects(s3), "a", a_shards.hooks(), lease_seconds=1, min_hold=0)
    b = Ownership(
        _objects(s3),
        "b",
        b_shards.hooks(),
        lease_seconds=1,
        handover_after=0.3,
        min_hold=0,
    )
    shard = shard_of("cy")
    async with anyio.create_task_group() as tg:
        await tg.start(a.run)
        await tg.start(b.run)
        closed: list[str] = []
        async with a.serving("cy", close=lambda: closed.append("socket")):
            with pytest.raises(NotHome):
                async with b.serving("cy"):
                    pass
            a.check("cy")
            # b keeps being asked: after handover_after it asks a, which hands over.
            with anyio.fail_after(10):
                while a.held():
                    with pytest.raises(NotHome):
                        async with b.serving("cy"):
                            pass
                    await anyio.sleep(0.1)
        assert closed == ["socket"]
        with pytest.raises(NotHome):
            a.check("cy")
        await _served(b, "cy")
        assert a_shards.settled == [(shard, True)]
        assert b.held() == [shard]
        # b dies (its heartbeats stop): a takes the user back after a lease.
        tg.cancel_scope.cancel()
    async with anyio.create_task_group() as tg:
        await tg.start(a.run)
        await _served(a, "cy")
        tg.cancel_scope.cancel()
    assert a_shards.taken == [shard, shard]
    assert b_shards.taken == [shard]
    # Each holding gives the user's rows its lease's epoch before serving them.
    assert (a_shards.fenced, b_shards.fenced) == ([("cy", 1), ("cy", 3)], [("cy", 2)])


async def test_a_node_writes_a_user_only_at_its_leases_epoch_and_only_once_it_fenced_them(
    s3: dict[str, str],
) -> None:
    shards = _Shards()
    node = Ownership(_objects(s3), "a", shards.hooks(), lease_seconds=8)
    neighbour = next(
        u for u in (f"user{n}" for n in range(100_000)) if shard_of(u) == shard_of("cy")
    )
    async with anyio.create_task_group() as tg:
        await tg.start(node.run)
        async with node.serving("cy"):
            assert node.epoch_of("cy") == 1
        async with node.serving("cy"):
            pass
        with pytest.raises(NotHome, match="not fenced"):
            node.epoch_of(neighbour)  # same shard, not served yet: their rows are older
        await node.fence(neighbour)  # the writers' guard
        assert node.epoch_of(neighbour) == 1
        with pytest.raises(NotHome):
            await node.fence("someone-elsewhere")  # a shard this node does not hold
        # Requests of one user at once wait for one fence; users of one shard are fenced
        # at once (the store batches them).
        others = [
            u for u in (f"other{n}" for n in range(100_000)) if shard_of(u) == shard_of("cy")
        ][:2]
        async with anyio.create_task_group() as requests:
            for user in [*others, *others]:
                requests.start_soon(node.fence, user)
        tg.cancel_scope.cancel()
    assert shards.fenced == [("cy", 1), (neighbour, 1), *((u, 1) for u in others)]
    assert shards.most_at_once == 2


@pytest.mark.parametrize("watched", [0.0, 4.2], ids=["not-for-a-lease", "for-a-lease"])
async def test_a_node_does_not_take_a_user_from_a_node_it_has_not_listed_yet(
    s3: dict[str, str], watched: float
) -> None:
    # A node missing from the last listing may have started since: the heartbeats are
    # listed again before its shard is taken, however long b has been watching.
    a_shards, b_shards = _Shards(), _Shards()
    a = Ownership(_objects(s3), "a", a_shards.hooks(), lease_seconds=4)
    b = Ownership(_objects(s3), "b", b_shards.hooks(), lease_seconds=4)
    async with anyio.create_task_group() as tg:
        await tg.start(b.run)  # b lists the heartbeats: a has none yet
        await anyio.sleep(watched)
        await tg.start(a.run)  # a starts after b's listing, writes its heartbeat
        async with a.serving("flo"):
            pass
        # b's next listing is up to 0.8 s away: a is unknown to it, not dead.
        with pytest.raises(NotHome, match="home is node a"):
            async with b.serving("flo"):
                pass
        assert (a.held(), b.held()) == ([shard_of("flo")], [])
        tg.cancel_scope.cancel()


async def _served(node: Ownership, user_id: str) -> None:
    """Until ``node`` serves ``user_id`` (asking every 0.1 s, for at most 10 s)."""
    with anyio.fail_after(10):
        while True:
            try:
                async with node.serving(user_id):
                    return
            except NotHome:
                await anyio.sleep(0.1)


async def test_a_shared_index_is_named_only_while_right_and_no_copy_outlives_a_write(
    s3: dict[str, str], tmp_path: Path
) -> None:
    objects = _objects(s3)
    serving = {"dee"}
    indexes = RemoteIndexes(objects, lambda user_id: user_id in serving)
    saved = tmp_path / "saved.idx"
    saved.write_bytes(b"dee's index with a secret 5521")
    assert await indexes.upload("dee", saved, lambda: True)
    fetched = tmp_path / "fetched.idx"
    assert await indexes.fetch("dee", fetched)
    assert fetched.read_bytes() == saved.read_bytes()

    # Another node taking the shard finds it; a write marks it stale and erases the data.
    other = RemoteIndexes(objects, lambda user_id: True)
    await other.take(shard_of("dee"))
    await other.stale(["dee"])
    assert not await other.fetch("dee", tmp_path / "none.idx")
    assert not [k for k in await _bytes(objects) if b"5521" in k]

    # An upload a write overtook names nothing; one by a node that no longer serves the
    # user neither; data an unfinished upload left is deleted by the next node to take.
    assert not await indexes.upload("dee", saved, lambda: False)
    serving.clear()
    assert not await indexes.upload("dee", saved, lambda: True)
    pointer = RemoteIndexes._pointer("dee")
    await objects.put(f"{pointer}.unfinished", saved.read_bytes())
    await RemoteIndexes(objects, lambda user_id: True).take(shard_of("dee"))
    assert not [k for k in await _bytes(objects) if b"5521" in k]


async def _bytes(objects: Objects) -> list[bytes]:
    found = []
    for item in await objects.keys("indexes/"):
        got = await objects.get(item.key)
        if got is not None:
            found.append(got[0])
    return found


async def test_a_node_that_cannot_write_its_heartbeat_stops_serving_before_a_lease_runs_out(
    s3: dict[str, str],
) -> None:
    shards = _Shards()
    node = Ownership(_objects(s3), "e", shards.hooks(), lease_seconds=0.5)
    async with anyio.create_task_group() as tg:
        await tg.start(node.run)
        async with node.serving("eve"):
            assert node.in_touch()
        tg.cancel_scope.cancel()  # its heartbeats stop, as when the store is out of reach
    await anyio.sleep(0.45)  # 0.8 of a lease, and a little more
    assert not node.in_touch()
    with pytest.raises(NotHome):
        node.check("eve")
    with pytest.raises(NotHome):
        async with node.serving("eve"):
            pass


async def test_a_users_fence_record_is_replaced_only_by_a_higher_epoch(s3: dict[str, str]) -> None:
    records, other = FenceRecords(_objects(s3)), FenceRecords(_objects(s3))
    assert await records.recorded("cy") == 0
    await records.record("cy", 3)
    await other.record("cy", 2)  # a node that froze mid-fence, recording late
    assert (await records.recorded("cy"), await other.recorded("cy")) == (3, 3)
    await other.record("cy", 4)
    assert await records.recorded("cy") == 4
    assert await records.recorded("dee") == 0
    with pytest.raises(ValueError, match="invalid user id"):
        await records.record("../leases/0001", 9)
