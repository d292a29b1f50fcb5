"""Saved message indexes in the bucket, so that a node taking a user over maps their
index instead of reading every message from the tables.

A user's index is two kinds of object under ``indexes/<shard>/``: the data (the saved
index file, ``<name>.<random>``) and a pointer ``<name>`` whose body is the data's key,
or ``stale``. The rule is the local file's (``server.adapters.index_files``): a pointer
names an index exactly right, or is stale.

- Before a write of a user's messages is made durable, ``stale`` rewrites their pointer
  to ``stale`` and deletes the data it named (no deleted text stays behind in it).
- ``upload`` notes the user first, reads the pointer, uploads the data, and writes the
  pointer with the ETag it read as precondition: a write meanwhile changed the pointer,
  so the upload is thrown away instead of naming a stale index.
- ``fetch`` downloads what the pointer names, in parallel ranges.

Which users of a shard may have a pointer is listed once when the node takes the shard:
a write of anyone else costs nothing here.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Callable, Collection
from pathlib import Path

from actors.errors import ArchiveUnavailable
from server.cluster.objects import Objects, ObjectStoreError, PreconditionFailed
from server.cluster.shards import shard_of

__all__ = ["RemoteIndexes"]

_log = logging.getLogger("mnemo.cluster")
_STALE = b"stale"


class RemoteIndexes:
    def __init__(self, objects: Objects, serves: Callable[[str], bool]) -> None:
        """``serves(user)``: whether this node still serves the user (else an upload
        is thrown away)."""
        self._objects, self._serves = objects, serves
        #: Users of the held shards that may have a pointer.
        self._present: set[str] = set()
        #: Pointer names (``<shard>/<name>``) listed when the shards were taken.
        self._listed: set[str] = set()

    @staticmethod
    def _pointer(user_id: str) -> str:
        name = hashlib.sha256(user_id.encode()).hexdigest()[:40]
        return f"indexes/{shard_of(user_id):04d}/{name}"

    async def take(self, shard: int) -> None:
        """Note which users of ``shard`` have a pointer (their names, hashed), and delete
        data no pointer names (an upload its node did not finish: it may hold texts
        deleted since)."""
        pointers: set[str] = set()
        data: dict[str, list[str]] = {}
        for item in await self._objects.keys(f"indexes/{shard:04d}/"):
            pointer, dot, _ = item.key.partition(".")
            if dot:
                data.setdefault(pointer, []).append(item.key)
            else:
                pointers.add(pointer)
        self._listed |= pointers
        for pointer, keys in data.items():
            found = await self._objects.get(pointer) if pointer in pointers else None
            named = found[0].decode() if found is not None else ""
            for key in keys:
                if key != named:
                    await self._objects.delete(key)

    def forget(self, shard: int) -> None:
        prefix = f"indexes/{shard:04d}/"
        self._listed = {key for key in self._listed if not key.startswith(prefix)}
        self._present = {u for u in self._present if shard_of(u) != shard}

    def _may_have(self, user_id: str) -> bool:
        return user_id in self._present or self._pointer(user_id) in self._listed

    async def stale(self, user_ids: Collection[str]) -> None:
        """Before a write of these users' messages: no pointer names their index. Raises
        ``ArchiveUnavailable`` (then the write must not happen)."""
        for user_id in [u for u in user_ids if self._may_have(u)]:
            pointer = self._pointer(user_id)
            try:
                found = await self._objects.get(pointer)
                await self._objects.put(pointer, _STALE)
                if found is not None and found[0] != _STALE:
                    await self._objects.delete(found[0].decode())
            except ObjectStoreError as exc:
                raise ArchiveUnavailable(f"cannot mark a saved index stale: {exc}") from exc
            self._present.discard(user_id)
            self._listed.discard(pointer)

    async def upload(self, user_id: str, path: Path, unchanged: Callable[[], bool]) -> bool:
        """Put the index file at ``path`` in the bucket and name it, unless a write of the
        user's messages came first (``unchanged()`` false, or the pointer changed)."""
        self._present.add(user_id)
        pointer = self._pointer(user_id)
        data = f"{pointer}.{secrets.token_hex(8)}"
        try:
            found = await self._objects.get(pointer)
            await self._objects.upload(data, path)
            if not (unchanged() and self._serves(user_id)):
                await self._objects.delete(data)
                return False
            try:
                await self._objects.put(
                    pointer,
                    data.encode(),
                    create=found is None,
                    replace=found[1] if found is not None else None,
                )
            except PreconditionFailed:
                await self._objects.delete(data)
                return False
            if found is not None and found[0] != _STALE:
                await self._objects.delete(found[0].decode())
        except ObjectStoreError as exc:
            _log.warning("could not put the index of user %s in the bucket: %s", user_id, exc)
            return False
        return True

    async def fetch(self, user_id: str, path: Path) -> bool:
        """Download the user's index to ``path``; False when the bucket has none."""
        if not self._may_have(user_id):
            return False
        try:
            found = await self._objects.get(self._pointer(user_id))
            if found is None or found[0] == _STALE:
                return False
            return await self._objects.download(found[0].decode(), path)
        except (ObjectStoreError, OSError) as exc:
            _log.warning("could not fetch the index of user %s: %s", user_id, exc)
            return False
