"""One ``mnemo serve`` as a cluster node: ownership wired to the journal, the store's
caches and the live sessions."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from anyio.abc import TaskGroup

from actors.registry import SessionRegistry
from schemas.settings import Settings
from server.adapters.index_saving import SharedIndexes
from server.adapters.lance_common import user_filter
from server.adapters.lance_epochs import Epochs
from server.cluster.indexes import RemoteIndexes
from server.cluster.journal import JournalPlace, ShardJournal
from server.cluster.objects import Objects, ObjectStoreError, PreconditionFailed
from server.cluster.ownership import Hooks, Ownership
from server.cluster.shards import shard_of

__all__ = ["ClusterNode"]

_log = logging.getLogger("mnemo.cluster")


class _Store(Protocol):
    epochs: Epochs

    async def flush_messages(self) -> int: ...

    def forget(self, held: Callable[[str], bool], prefix: str) -> None: ...

    async def refresh(self) -> None: ...

    def share_indexes(self, shared: SharedIndexes) -> None: ...


class FenceRecords:
    """The epoch each user was last fenced at (``server.adapters.lance_epochs``): one
    object per user, ``fences/<shard>/<user>``, replaced only by a higher epoch. An object
    each, not a table: many users fenced at once (a dead node's, on their first
    requests) would contend for a table's next version."""

    def __init__(self, objects: Objects) -> None:
        self._objects = objects

    async def recorded(self, user_id: str) -> int:
        found = await self._objects.get(_fence_key(user_id))
        return _epoch_in(found[0]) if found is not None else 0

    async def record(self, user_id: str, epoch: int) -> None:
        key, body = _fence_key(user_id), json.dumps({"epoch": epoch}).encode()
        for _ in range(3):
            found = await self._objects.get(key)
            if found is not None and _epoch_in(found[0]) >= epoch:
                return
            try:
                await self._objects.put(
                    key, body, create=found is None, replace=found[1] if found else None
                )
                return
            except PreconditionFailed:
                continue  # another node recorded one meanwhile: look again
        raise ObjectStoreError(f"could not record the fence of a user at epoch {epoch}")


def _fence_key(user_id: str) -> str:
    user_filter(user_id)  # a valid id: letters, digits and _.:@- only
    return f"fences/{shard_of(user_id):04d}/{user_id}"


def _epoch_in(body: bytes) -> int:
    try:
        epoch = json.loads(body).get("epoch", 0)
    except (ValueError, AttributeError):
        return 0
    return epoch if isinstance(epoch, int) else 0


class ClusterNode:
    """The node's ownership of shards (``ownership``) and its journal in the object
    store or on ``MNEMO_JOURNAL_DIR`` (made by ``journal`` once the store knows its
    vectors' size)."""

    def __init__(self, settings: Settings, objects: Objects | None = None) -> None:
        self.objects = objects or Objects(f"{settings.data_dir.rstrip('/')}/cluster")
        self.ownership = Ownership(
            self.objects,
            settings.node,
            Hooks(self._take, self._settle, self._fence),
            lease_seconds=settings.lease_seconds,
            handover_after=settings.handover_after,
            min_hold=settings.min_hold,
        )
        self.indexes = RemoteIndexes(self.objects, self.ownership.serves)
        self._journal_place: JournalPlace = self.objects
        if settings.journal_dir:
            from server.cluster.volume import Volume

            self._journal_place = Volume(Path(settings.journal_dir))
        self._journal: ShardJournal | None = None
        self._store: _Store | None = None
        self._sessions: SessionRegistry | None = None
        self._tg: TaskGroup | None = None

    def journal(self, dim: int) -> ShardJournal:
        """The store's journal (``LanceStore(journal=node.journal)``)."""
        self._journal = ShardJournal(self._journal_place, dim, self._fenced)
        return self._journal

    def keep(self, store: _Store) -> None:
        """The store the node's shards live in (its saved indexes kept in the bucket)."""
        self._store = store
        store.share_indexes(self.indexes)
        store.epochs.serve_with(
            self.ownership.epoch_of,
            self._refused,
            FenceRecords(self.objects),
            self.ownership.epoch_held,
        )

    def attach(self, sessions: SessionRegistry, task_group: TaskGroup) -> None:
        """The live sessions, and where the node's background work runs; call before it
        serves anyone."""
        self._sessions, self._tg = sessions, task_group

    async def _take(self, shard: int) -> None:
        assert self._journal is not None
        assert self._store is not None
        await self._journal.open_shard(shard)
        await self.indexes.take(shard)
        await self._store.refresh()  # the previous node's last writes
        # What this node kept from an earlier time it held the shard may be stale.
        self._store.forget(lambda user_id: shard_of(user_id) == shard, f"{shard:03x}")

    async def _settle(self, shard: int, flush: bool) -> None:
        assert self._journal is not None
        assert self._store is not None
        if self._sessions is not None:
            for actor in self._sessions.live():
                if shard_of(actor.user_id) == shard:
                    actor.expire_nowait()
        if flush:
            await self._store.flush_messages()
        self._journal.forget_shard(shard)
        self.indexes.forget(shard)
        self._store.forget(lambda user_id: shard_of(user_id) == shard, f"{shard:03x}")

    async def _fence(self, user_id: str, epoch: int) -> None:
        assert self._store is not None
        changed = await self._store.epochs.restamp(user_id, epoch)
        _log.debug("fenced a user at epoch %d (%d rows re-stamped)", epoch, changed)

    def _fenced(self, shard: int) -> None:
        if self._tg is not None:
            self._tg.start_soon(self.ownership.lost, shard)

    def _refused(self, user_id: str) -> None:
        """A write of the user's rows was refused: a newer node re-stamped them."""
        _log.warning("a write was refused: another node has taken shard %d", shard_of(user_id))
        self._fenced(shard_of(user_id))
