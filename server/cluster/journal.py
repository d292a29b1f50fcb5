"""A cluster's journal of acknowledged turns: objects in the store (or files on a shared
volume: ``server.cluster.volume``), fenced per shard.

Each write batch of a shard becomes one object ``journal/<shard>/<sequence>``, written
with ``If-None-Match: *``: an ``ack`` means the turn is in the object store and
survives the loss of its node. A shard's objects are written one at a time, each at
the sequence after the last, so a node that takes a shard can fence the old owner
out: it lists the shard's journal, writes an empty record at the sequence after the
last one (``If-None-Match: *``), then replays everything before it. The old owner's
next write targets that sequence, fails, and is never acknowledged: every
acknowledged turn is in the replay.

Once a batch's rows are in the table its objects are deleted, except the newest of
each shard, which is emptied instead: it keeps the shard's sequence for the next
fence, and no deleted text stays behind in it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import anyio
import msgspec
import numpy as np
import numpy.typing as npt

from actors.errors import ArchiveUnavailable
from schemas.records import ArchivedMessage
from server.adapters.journal import Segment, decode_record, encode_record
from server.cluster.objects import Listed, ObjectStoreError, PreconditionFailed
from server.cluster.shards import shard_of

__all__ = ["Fenced", "JournalPlace", "ShardJournal"]

_log = logging.getLogger("mnemo.cluster.journal")
_EMPTY = encode_record([], np.zeros(0, np.float32))


class JournalPlace(Protocol):
    """Where the journal's records live: the bucket (``server.cluster.objects.Objects``)
    or a shared volume (``server.cluster.volume.Volume``)."""

    async def get(self, key: str) -> tuple[bytes, str] | None: ...

    async def put(self, key: str, body: bytes, *, create: bool = False) -> str: ...

    async def keys(self, prefix: str) -> list[Listed]: ...

    async def delete(self, key: str) -> None: ...


class Fenced(ArchiveUnavailable):
    """Another node has taken the shard: this node may not write it any more."""

    code = "not_home"


@dataclass(eq=False)
class _Log:
    """A shard this node writes: its next sequence, and its newest object."""

    next: int
    tail: str
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    #: Emptied objects older than the tail, deleted at the next discard.
    stale: list[str] = field(default_factory=list)


class ShardJournal:
    """The journal of the shards this node holds (``open_shard`` on taking one,
    ``forget_shard`` on losing it). Implements ``Journaling``."""

    def __init__(self, objects: JournalPlace, dim: int, fenced: Callable[[int], None]) -> None:
        self._objects, self._dim, self._fenced = objects, dim, fenced
        self._logs: dict[int, _Log] = {}
        self._segments: list[Segment] = []
        self.rows = 0

    def recover(self) -> list[Segment]:
        """Nothing at start: a shard's journal is replayed when its lease is taken."""
        return []

    async def open_shard(self, shard: int) -> None:
        """Fence the shard's journal and keep what it holds as pending (to be moved into
        the table, checking for rows the table has already)."""
        prefix = f"journal/{shard:04d}/"
        while True:
            listed = [item.key for item in await self._objects.keys(prefix)]
            last = max((int(key.rsplit("/", 1)[1]) for key in listed), default=0)
            fence = f"{prefix}{last + 1:012d}"
            try:
                await self._objects.put(fence, _EMPTY, create=True)
                break
            except PreconditionFailed:
                # The old owner wrote once more (or the listing lagged): read that too.
                await anyio.sleep(0.05)
                continue
        for key in listed:
            found = await self._objects.get(key)
            if found is None:
                continue  # moved into the table by its writer, then deleted
            try:
                rows, flat = decode_record(found[0])
            except msgspec.DecodeError:
                _log.error("journal object %s is not a journal record; skipped", key)
                continue
            if rows:
                segment = Segment(keys=[key], rows=rows, vectors=[flat], maybe_stored=True)
                self._segments.append(segment)
                self.rows += len(rows)
        self._logs[shard] = _Log(last + 2, fence, stale=[k for k in listed if k != fence])

    def forget_shard(self, shard: int) -> None:
        """Drop the shard's rows from memory (another node has them now)."""
        self._logs.pop(shard, None)
        kept: list[Segment] = []
        for segment in self._segments:
            picks = [n for n, m in enumerate(segment.rows) if shard_of(m.user_id) != shard]
            if len(picks) < len(segment.rows):
                self.rows -= len(segment.rows) - len(picks)
                matrix = segment.matrix(self._dim)[picks]
                keys = [k for k in segment.keys if _shard_of_key(k) != shard]
                segment = Segment(
                    keys=keys,
                    rows=[segment.rows[n] for n in picks],
                    vectors=[matrix.reshape(-1)],
                    maybe_stored=segment.maybe_stored,
                )
            if segment.rows or segment.keys:
                kept.append(segment)
        self._segments = kept

    async def append(
        self, rows: Sequence[ArchivedMessage], vectors: npt.NDArray[np.float32]
    ) -> None:
        """Write ``rows``, one object per shard, all shards at once; returns once every
        object is written. Raises ``Fenced`` (nothing of that shard is acknowledged),
        ``ArchiveUnavailable``, ``Rejected``."""
        flat = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(rows), -1)
        by_shard: dict[int, list[int]] = {}
        for n, row in enumerate(rows):
            by_shard.setdefault(shard_of(row.user_id), []).append(n)
        payloads = {
            shard: encode_record([rows[n] for n in picks], flat[picks].reshape(-1))
            for shard, picks in by_shard.items()
        }
        failures: list[BaseException] = []

        async def write(shard: int, picks: list[int]) -> None:
            try:
                await self._write(shard, payloads[shard], [rows[n] for n in picks], flat[picks])
            except ArchiveUnavailable as exc:
                failures.append(exc)

        async with anyio.create_task_group() as tg:
            for shard, picks in by_shard.items():
                tg.start_soon(write, shard, picks)
        if failures:
            raise failures[0]

    async def _write(
        self,
        shard: int,
        payload: bytes,
        rows: list[ArchivedMessage],
        matrix: npt.NDArray[np.float32],
    ) -> None:
        log = self._logs.get(shard)
        if log is None:
            raise Fenced(f"shard {shard} is not served by this node")
        async with log.lock:
            if self._logs.get(shard) is not log:
                raise Fenced(f"shard {shard} is not served by this node")
            key = f"journal/{shard:04d}/{log.next:012d}"
            try:
                await self._objects.put(key, payload, create=True)
            except PreconditionFailed:
                self._logs.pop(shard, None)
                self._fenced(shard)
                raise Fenced(f"shard {shard} was taken by another node") from None
            except ObjectStoreError as exc:
                raise ArchiveUnavailable(f"journal write: {exc}") from exc
            log.next += 1
            log.stale.append(log.tail)
            log.tail = key
        self._segments.append(Segment(keys=[key], rows=rows, vectors=[matrix.reshape(-1)]))
        self.rows += len(rows)

    async def seal(self) -> list[Segment]:
        """Every segment not yet discarded, as one."""
        if len(self._segments) > 1:
            merged = Segment(maybe_stored=any(s.maybe_stored for s in self._segments))
            for segment in self._segments:
                merged.keys += segment.keys
                merged.rows += segment.rows
                merged.vectors += segment.vectors
            self._segments = [merged]
        return list(self._segments)

    async def discard(self, segment: Segment) -> None:
        """The segment's rows are in the table: delete its objects (the newest of each
        shard emptied instead)."""
        self._segments.remove(segment)
        self.rows -= len(segment.rows)
        done = set(segment.keys)
        waiting = {key for s in self._segments for key in s.keys}
        for shard in sorted({_shard_of_key(key) for key in done}):
            log = self._logs.get(shard)
            if log is None:
                continue  # another node's now: it replays and deletes them
            async with log.lock:
                if self._logs.get(shard) is not log:
                    continue
                try:
                    if log.tail in done:
                        await self._objects.put(log.tail, _EMPTY)
                    for key in [k for k in log.stale if k not in waiting]:
                        await self._objects.delete(key)
                        log.stale.remove(key)
                except ObjectStoreError as exc:
                    _log.error("journal objects of shard %d not yet deleted: %s", shard, exc)

    def pending(self) -> list[Segment]:
        return list(self._segments)

    def close(self) -> None:
        pass


def _shard_of_key(key: str) -> int:
    return int(key.split("/")[1])
